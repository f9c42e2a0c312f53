//go:build mutations

package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The verb each mutation breaks, and the scenario whose decisions depend on it.
var mutationCases = []struct{ verb, scenario, plugins string }{
	{"preemptable", "preemption", "pdb, min-runtime"},
	{"jobEnqueueable", "admission", "resourcequota, sla"},
	{"predicate", "placement-nodegroup", "nodegroup"},
	{"prioritize", "placement", "resource-strategy-fit"},
}

// TestE2EMutations runs this test binary once per mutation (CALDERA_E2E_MUTATE, mutate_test.go)
// on its scenario: the scenario must get past its start (the scheduler conf logged) and then
// fail on a decision of its own, with its marker (Scenario.Wrong: WRONG DECISION (<scenario>)).
// A failure without it (a timeout, a harness error, another scenario's) does not count as the
// mutant caught. go test -tags mutations -run TestE2EMutations (tests/e2e/run.sh passes the
// arguments).
func TestE2EMutations(t *testing.T) {
	if os.Getenv("CALDERA_E2E") == "0" {
		t.Skip("CALDERA_E2E=0: end-to-end test left out")
	}
	BuildBinaries(t, binDir()) // once, before the children reuse the binaries
	for _, m := range mutationCases {
		t.Run(m.verb, func(t *testing.T) {
			began := time.Now()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestE2E$/^"+m.scenario+"$", "-test.v",
				"-test.count=1", "-test.timeout=10m")
			cmd.Env = append(os.Environ(), mutateEnv+"="+m.verb)
			out, err := cmd.CombinedOutput()
			started := strings.Contains(string(out), "volcano-scheduler.conf:")
			failed := regexp.MustCompile(`--- FAIL: TestE2E/` + regexp.QuoteMeta(m.scenario) + `\b`).Match(out)
			marked := strings.Contains(string(out), decisionMarker(m.scenario))
			switch {
			case !started:
				t.Errorf("the %s scenario did not start (exit: %v):\n%s", m.scenario, err, lastLines(string(out)))
			case !failed || err == nil:
				t.Errorf("breaking %s (%s) did not fail the %s scenario:\n%s", m.verb, m.plugins, m.scenario, lastLines(string(out)))
			case !marked:
				t.Errorf("breaking %s (%s): the %s scenario failed, but not on a decision of its own (no %q:"+
					" a timeout or a harness error), so the mutant is not caught:\n%s",
					m.verb, m.plugins, m.scenario, decisionMarker(m.scenario), lastLines(string(out)))
			default:
				t.Logf("%s broken (%s): %s failed, %s", m.verb, m.plugins, m.scenario, time.Since(began).Round(time.Second))
			}
		})
	}
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
