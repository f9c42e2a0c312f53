//go:build scale

package e2e

// The schedulers caldera-names and neutral-names of the cluster-scale benchmark (scale_test.go;
// issue 51 item 3): vc-scheduler is the patched build of protocol/volcano-identifiers
// (vc-scheduler-identifiers, BuildIdentifiersScheduler) and its conf is `caldera volcano-config
// --bodies identifiers --merge` of the group's in-tree conf: every call carries identifiers, the
// predicate is batched, onSessionOpen carries only the roster. caldera-names points it at
// Caldera in `sessionState: cluster`, as caldera-cluster; neutral-names at the neutral server
// (startNeutral in identifiers mode): the identifiers protocol's own cost, caldera-names' floor.
//
// A run of either says whether the identifiers protocol was the one used: the identifiers calls
// its server answered (Caldera's /debug/session identifiers.calls; the neutral server's count of
// bodies starting with their "session" field), which must be every verb call it answered 200
// (Caldera's caldera_responses_total; the neutral server's count), and vc-scheduler's log lines
// that say it fell back to objects or that an extender call failed (fallbackMarkers). The
// neutral server must also have been asked its capabilities. A run with no identifiers call, a
// call of objects or such a line is an error: its figures would be another protocol's.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
)

// planRunsNames: whether the plan has a run of the patched vc-scheduler (caldera-names,
// neutral-names: TestScale then builds it once, before the first cluster starts).
func planRunsNames(plan scalePlan) bool {
	return slices.ContainsFunc(plan.Schedulers, func(s string) bool { return scaleSchedulers[s].names })
}

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

// calderaIdentifiers: the identifiers calls Caldera answered and every verb call it answered
// 200, for identifiersFigures.
func calderaIdentifiers(cal *Caldera) (calls, answered int, err error) {
	calls, err = identifiersCalls(cal)
	if err != nil {
		return calls, 0, fmt.Errorf("identifiers calls: %v", err)
	}
	answered, err = answeredCalls(cal)
	if err != nil {
		return calls, answered, fmt.Errorf("Caldera's /metrics: %v", err)
	}
	return calls, answered, nil
}

// identifiersFigures records, at the end of a caldera-names or neutral-names run (vc-scheduler
// stopped, so the counts stop moving), the identifiers calls the server (named by who) answered
// against every verb call it answered, with err what kept them from being read, and the fallback
// lines of vc-scheduler's log; any missing proof is the run's error.
func identifiersFigures(r *scaleRun, who string, calls, answered int, err error, schedulerLog string) {
	r.IdentifiersCalls, r.AnsweredCalls = calls, answered
	r.FallbackLines = fallbackLines(schedulerLog)
	var problems []string
	switch {
	case err != nil:
		problems = append(problems, err.Error())
	case calls == 0:
		problems = append(problems, who+" answered no identifiers call")
	case calls != answered:
		problems = append(problems, fmt.Sprintf("%d of the %d calls %s answered were identifiers ones", calls, answered, who))
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
