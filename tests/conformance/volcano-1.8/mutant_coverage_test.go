package conformance

import (
	"testing"

	"caldera/conformance/suite"
)

// TestMutantCoverage: every verb each of Caldera's plugins answers on this release has a
// mutant, and every verb mutant breaks a verb its plugin answers here (suite/mutate.go,
// CheckMutantCoverage). It runs no scenario: the mutants themselves run in TestMutations.
func TestMutantCoverage(t *testing.T) { suite.CheckMutantCoverage(t, release) }

// TestMutantCoverageRules: the rules of that check, on made-up plugins.
func TestMutantCoverageRules(t *testing.T) { suite.MutantCoverageRules(t, release) }
