//go:build tools

// Package e2e pins the programs the end-to-end harness builds: Volcano's scheduler and the
// Kubernetes API server at the versions Volcano v1.14.1 requires. `go build` of these import
// paths inside this module builds exactly the versions in go.mod (hashes from go.sum).
package e2e

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "volcano.sh/volcano/cmd/scheduler"
)
