//go:build identifiers

package conformance

import (
	"testing"

	"caldera/conformance/suite"
)

// TestIdentifiers runs the suite in the identifiers mode (../suite/identifiers.go): Volcano's
// extender plugin patched by protocol/volcano-identifiers calls Caldera in cluster mode with
// identifiers. Built against the patched module by ../identifiers.sh.
func TestIdentifiers(t *testing.T) { suite.RunIdentifiers(t, release) }
