//go:build mutations

package conformance

import (
	"testing"

	"caldera/conformance/suite"
)

// TestMutations breaks one Caldera plugin's answers at a time and requires a scenario of that
// plugin's group to fail (suite/mutate.go): go test -tags mutations -run TestMutations ./...
func TestMutations(t *testing.T) { suite.RunMutations(t, release) }
