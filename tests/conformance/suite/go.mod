module caldera/conformance/suite

// No requirements on purpose: each release module (../volcano-*) requires the
// Volcano and Kubernetes versions this package compiles against, and imports
// it through `replace caldera/conformance/suite => ../suite`.
go 1.22
