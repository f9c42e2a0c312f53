//go:build identifiers

package e2e

import "testing"

// TestE2EIdentifiers runs the scenarios that run in cluster mode again in the identifiers mode
// (identifiers_mode_test.go): vc-scheduler built from protocol/volcano-identifiers's patch,
// Caldera in sessionState cluster, the entry of `caldera volcano-config --bodies identifiers`.
// Each must make the decisions it makes in the other modes, and checkIdentifiers proves the
// identifiers protocol was used.
//
//	tests/e2e/run.sh -tags identifiers -run TestE2EIdentifiers
func TestE2EIdentifiers(t *testing.T) {
	c := setup(t)
	BuildIdentifiersScheduler(t, binDir())
	t.Run("admission-identifiers-state", func(t *testing.T) { testAdmission(t, c, identifiersMode) })
	t.Run("placement-nodegroup-identifiers-state", func(t *testing.T) { testNodeGroupPlacement(t, c, identifiersMode) })
	t.Run("preemption-identifiers-state", func(t *testing.T) { testPreemption(t, c, identifiersMode) })
}
