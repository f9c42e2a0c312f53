//go:build scale

package e2e

// The scheduler caldera-names of the cluster-scale benchmark (scale_test.go; issue 51 item 3):
// Caldera in `sessionState: cluster`, as caldera-cluster, but vc-scheduler is the patched build
// of protocol/volcano-identifiers (vc-scheduler-identifiers, BuildIdentifiersScheduler) and its
// conf is `caldera volcano-config --bodies identifiers --merge` of the group's in-tree conf: every
// call carries identifiers, the predicate is batched, onSessionOpen carries only the roster.
//
// A run of it says whether the identifiers protocol was the one used: the identifiers calls
// Caldera answered (/debug/session's identifiers.calls), which must be every verb call it
// answered 200 (caldera_responses_total, as checkIdentifiers compares them), and vc-scheduler's
// log lines that say it fell back to objects or that an extender call failed (fallbackMarkers).
// A run with no identifiers call, a call of objects or such a line is an error: its figures
// would be another protocol's.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
)

const namesScheduler = "caldera-names"

// planRunsNames: whether the plan has a caldera-names run (TestScale then builds the patched
// vc-scheduler once, before the first cluster starts).
func planRunsNames(plan scalePlan) bool { return slices.Contains(plan.Schedulers, namesScheduler) }

// identifiersCalls reads /debug/session's identifiers.calls without failing the test (a run's
// error says what went wrong instead).
func identifiersCalls(cal *Caldera) (int, error) {
	r, err := http.Get(cal.URL + "/debug/session")
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	var view struct {
		Identifiers *identifiersDebug `json:"identifiers"`
	}
	if err := json.NewDecoder(r.Body).Decode(&view); err != nil {
		return 0, err
	}
	if view.Identifiers == nil {
		return 0, fmt.Errorf("/debug/session has no identifiers section (Caldera not in cluster mode?)")
	}
	return view.Identifiers.Calls, nil
}

// fallbackLines: vc-scheduler's log lines with a fallbackMarkers marker (at most a few).
func fallbackLines(log string) []string {
	text, err := os.ReadFile(log)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(text), "\n") {
		for _, marker := range fallbackMarkers {
			if strings.Contains(line, marker) && len(out) < 3 {
				out = append(out, strings.TrimSpace(line))
				break
			}
		}
	}
	return out
}

// answeredCalls: the verb calls Caldera answered 200 (caldera_responses_total).
func answeredCalls(cal *Caldera) (int, error) {
	samples, err := scrape(cal.URL + "/metrics")
	if err != nil {
		return 0, err
	}
	total := 0.0
	for key, v := range samples {
		if strings.HasPrefix(key, "caldera_responses_total{") && strings.Contains(key, `code="200"`) {
			total += v
		}
	}
	return int(total), nil
}

// identifiersFigures records, at the end of a caldera-names run (vc-scheduler stopped, so the
// counts stop moving), the identifiers calls Caldera answered against every verb call it
// answered, and the fallback lines of vc-scheduler's log; any missing proof is the run's error.
func identifiersFigures(r *scaleRun, cal *Caldera, schedulerLog string) {
	calls, err := identifiersCalls(cal)
	r.IdentifiersCalls = calls
	answered, aerr := answeredCalls(cal)
	r.AnsweredCalls = answered
	r.FallbackLines = fallbackLines(schedulerLog)
	var problems []string
	switch {
	case err != nil:
		problems = append(problems, "identifiers calls: "+err.Error())
	case aerr != nil:
		problems = append(problems, "Caldera's /metrics: "+aerr.Error())
	case calls == 0:
		problems = append(problems, "Caldera answered no identifiers call")
	case calls != answered:
		problems = append(problems, fmt.Sprintf("%d of the %d calls Caldera answered were identifiers ones", calls, answered))
	}
	if len(r.FallbackLines) > 0 {
		problems = append(problems, "vc-scheduler logged: "+strings.Join(r.FallbackLines, " | "))
	}
	if len(problems) > 0 {
		if r.Error != "" {
			problems = append([]string{r.Error}, problems...)
		}
		r.Error = strings.Join(problems, "; ")
	}
}
