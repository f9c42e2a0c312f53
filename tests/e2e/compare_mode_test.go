package e2e

// Compare mode end to end (issue 36): every scenario's Caldera runs with `sessionState: compare`
// (CALDERA_E2E_SESSION_STATE=snapshot leaves it out), so besides answering from Volcano's
// snapshot it derives the session's state from the same API server and compares the two each
// session (app/cluster_state/compare_mode.py). At the end of the scenario, once its decisions
// are made and the cluster has settled, the comparisons must find no difference: a difference
// is a bug in the derivation, reported with the scenario's marker, its kind, object, field and
// both values.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const sessionStateEnv = "CALDERA_E2E_SESSION_STATE"

// scenarioSessionState is the sessionState the scenarios' Caldera runs with: compare unless
// CALDERA_E2E_SESSION_STATE says otherwise.
func scenarioSessionState() string {
	if mode := os.Getenv(sessionStateEnv); mode != "" {
		return mode
	}
	return "compare"
}

// withScenarioSessionState adds the scenarios' sessionState to a scenario's Caldera configuration, which
// does not set one itself. The embedded default configuration becomes a file with the same
// text (app/default_config.yaml) plus the setting: the mode is a configuration key.
func withScenarioSessionState(t testing.TB, config string) string {
	t.Helper()
	mode := scenarioSessionState()
	if mode == "snapshot" || strings.Contains(config, "sessionState:") {
		return config
	}
	if config == EmbeddedConfig {
		text, err := os.ReadFile(filepath.Join(e2eDir(), "..", "..", "app", "default_config.yaml"))
		if err != nil {
			t.Fatalf("the embedded configuration: %v", err)
		}
		config = string(text)
	}
	return strings.TrimRight(config, "\n") + "\nsessionState: " + mode +
		"\nsessionStateKubeconfig: \"{{KUBECONFIG}}\"\n"
}

// stateMarker is what a difference at quiescence prints for the scenario named scenario.
func stateMarker(scenario string) string { return "SESSION STATE DIFFERS (" + scenario + ")" }

// comparison is /debug/session's sessionState.lastComparison.
type comparison struct {
	Session     int            `json:"session"`
	Differences int            `json:"differences"`
	ByKind      map[string]int `json:"byKind"`
	First       []struct {
		Kind    string `json:"kind"`
		Object  string `json:"object"`
		Path    string `json:"path"`
		Sent    any    `json:"sent"`
		Derived any    `json:"derived"`
	} `json:"first"`
}

// sessionStateView is the part of /debug/session compare mode reports.
type sessionStateView struct {
	Session      int `json:"session"` // the open session, if any
	SessionState *struct {
		Mode     string         `json:"mode"`
		Synced   bool           `json:"synced"`
		Sessions map[string]int `json:"sessions"`
		Last     *comparison    `json:"lastComparison"`
	} `json:"sessionState"`
}

func (cal *Caldera) sessionState() (sessionStateView, error) {
	var view sessionStateView
	r, err := http.Get(cal.URL + "/debug/session")
	if err != nil {
		return view, err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return view, fmt.Errorf("/debug/session: %d", r.StatusCode)
	}
	return view, json.NewDecoder(r.Body).Decode(&view)
}

// describe is one line per difference shown: kind, object, field and both values.
func (c *comparison) describe() string {
	var b strings.Builder
	kinds := make([]string, 0, len(c.ByKind))
	for k := range c.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "session %d: %d difference(s)", c.Session, c.Differences)
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s×%d", k, c.ByKind[k])
	}
	for _, d := range c.First {
		fmt.Fprintf(&b, "\n  kind %s, object %s, field %s: Volcano sent %v, Caldera derived %v",
			d.Kind, d.Object, d.Path, d.Sent, d.Derived)
	}
	return b.String()
}

// quiescentComparisons: sessions compared after the first clean one that must all be clean.
const quiescentComparisons = 3

// CheckSessionStateAtQuiescence waits for a comparison of a session opened after the call that
// finds no difference (what was in flight when the scenario ended has settled by then), then
// requires the next quiescentComparisons comparisons to find none either: nothing changes in
// the cluster any more, so any difference is the derivation's. A failure names every kind,
// object, field and both values shown.
func (s *Scenario) CheckSessionStateAtQuiescence(t testing.TB) {
	t.Helper()
	cal := s.Caldera
	start, err := cal.sessionState()
	if err != nil {
		t.Errorf("%s: %v", stateMarker(s.NS), err)
		return
	}
	if start.SessionState == nil || start.SessionState.Mode != "compare" {
		t.Errorf("%s: /debug/session has no compare section: %+v", stateMarker(s.NS), start)
		return
	}
	after := start.Session
	if last := start.SessionState.Last; last != nil && last.Session > after {
		after = last.Session
	}
	var latest *comparison
	// A session a second, each compared in well under a second at this scale: 60 s is dozens.
	err = waitFor(60*time.Second, func() (bool, error) {
		view, err := cal.sessionState()
		if err != nil || view.SessionState == nil {
			return false, err
		}
		if l := view.SessionState.Last; l != nil && l.Session > after {
			latest = l
			return l.Differences == 0, fmt.Errorf("%s", l.describe())
		}
		return false, fmt.Errorf("no session compared after session %d (sessions %v, synced %v)",
			after, view.SessionState.Sessions, view.SessionState.Synced)
	})
	if err != nil {
		s.stateDiffers(t, "no comparison without a difference after the scenario: %v", err)
		return
	}
	clean := latest.Session
	differences := cal.metric(t, "caldera_session_state_differences_total")
	compared := cal.metric(t, "caldera_session_state_sessions_total", `outcome="compared"`)
	seen := map[int]bool{}
	err = waitFor(60*time.Second, func() (bool, error) {
		view, err := cal.sessionState()
		if err != nil || view.SessionState == nil {
			return false, err
		}
		if l := view.SessionState.Last; l != nil && l.Session > clean && !seen[l.Session] {
			seen[l.Session] = true
			if l.Differences != 0 {
				latest = l
				return true, nil
			}
		}
		return len(seen) >= quiescentComparisons, fmt.Errorf("%d of %d comparisons after session %d",
			len(seen), quiescentComparisons, clean)
	})
	if err != nil {
		t.Errorf("%s: %v", stateMarker(s.NS), err)
		return
	}
	if latest.Session > clean && latest.Differences != 0 {
		s.stateDiffers(t, "a difference after a clean comparison (session %d), nothing changing: %s",
			clean, latest.describe())
		return
	}
	// The metric counts every comparison, also those between two polls.
	if n := cal.metric(t, "caldera_session_state_differences_total"); n != differences {
		s.stateDiffers(t, "%v difference(s) counted after session %d (%v comparisons), none shown",
			n-differences, clean, cal.metric(t, "caldera_session_state_sessions_total", `outcome="compared"`)-compared)
		return
	}
	t.Logf("session state: sessions %d.. compared with no difference (%d checked after the first clean one);"+
		" during the scenario: %v, of which in flight: %v%s", clean, len(seen), cal.differencesByKind(t),
		cal.inFlightByKind(t), cal.differenceLines(20))
}

// differenceLines is the last n lines of Caldera's log that report a difference (one per kind
// and session, with an example), to tell what was in flight during the scenario.
func (cal *Caldera) differenceLines(n int) string {
	return cal.logLines("between Volcano's snapshot and the cluster's state", n)
}

// logLines is the last n lines of Caldera's log that contain marker, each on its own indented
// line after a newline ("" when none), for a failure message.
func (cal *Caldera) logLines(marker string, n int) string {
	text, err := os.ReadFile(cal.proc.log)
	if err != nil {
		return ""
	}
	var lines []string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.Contains(line, marker) {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// differencesByKind is caldera_session_state_differences_total per kind, and the sessions per
// outcome (compared, busy, not_synced) under "sessions:OUTCOME".
func (cal *Caldera) differencesByKind(t testing.TB) map[string]float64 {
	t.Helper()
	samples, err := scrape(cal.URL + "/metrics")
	if err != nil {
		t.Fatalf("caldera /metrics: %v", err)
	}
	out := map[string]float64{}
	for key, v := range samples {
		for prefix, label := range map[string]string{
			"caldera_session_state_differences_total{": "kind=", "caldera_session_state_sessions_total{": "outcome=",
		} {
			if rest, ok := strings.CutPrefix(key, prefix); ok {
				_, value, _ := strings.Cut(rest, label+`"`)
				value, _, _ = strings.Cut(value, `"`)
				if label == "outcome=" {
					value = "sessions:" + value
				}
				out[value] += v
			}
		}
	}
	return out
}

func (s *Scenario) stateDiffers(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: "+format, append([]any{stateMarker(s.NS)}, args...)...)
}

// checkSessionStateAtEnd registers the quiescence check to run when the scenario's test ends,
// before the scenario's processes stop (cleanups run last registered first), unless the
// scenario failed already, the mode is off (for all scenarios, or in this scenario's own
// configuration: admission-cluster-state's cluster mode), or the answers are being mutated on
// purpose.
func (s *Scenario) checkSessionStateAtEnd(t *testing.T, calderaConfig string) {
	if scenarioSessionState() != "compare" || mutatedVerb() != "" {
		return
	}
	if strings.Contains(calderaConfig, "sessionState:") && !strings.Contains(calderaConfig, "sessionState: compare") {
		return
	}
	t.Cleanup(func() {
		if t.Failed() || s.Caldera == nil || !s.Caldera.proc.running() {
			return
		}
		s.CheckSessionStateAtQuiescence(t)
	})
}
