package e2e

// Cluster mode's self-audit in every cluster-mode scenario (issue 49): Caldera compares a sample
// of the objects Volcano's calls carry with each session's derived state
// (app/cluster_state/audit.py). Any scenario whose Caldera runs `sessionState: cluster` has,
// registered by newScenario, a check at its end: the audit compared objects in this scenario,
// and found no difference that neither a placement of the session nor an object in flight
// explains (caldera_session_state_audit_differences_total{explained="no"} zero or absent).

import (
	"encoding/json"
	"net/http"
	"testing"
)

// auditMarker is what an unexplained self-audit difference prints for the scenario named scenario.
func auditMarker(scenario string) string { return "SELF-AUDIT DIFFERS (" + scenario + ")" }

// selfAuditView is /debug/session's sessionState.selfAudit.
type selfAuditView struct {
	SessionsAudited int `json:"sessionsAudited"`
	ObjectsAudited  int `json:"objectsAudited"`
	DivergentInARow int `json:"divergentSessionsInARow"`
	Last            *struct {
		DerivedSession int            `json:"derivedSession"`
		Objects        int            `json:"objects"`
		Differences    int            `json:"differences"`
		Unexplained    int            `json:"unexplained"`
		ByKind         map[string]int `json:"byKind"`
	} `json:"last"`
}

// checkSelfAuditAtEnd registers, for every scenario, a check at its end, before its processes
// stop: when its Caldera runs in cluster mode (as /debug/session says, whatever the
// configuration's spelling), checkSelfAudit.
func (s *Scenario) checkSelfAuditAtEnd(t *testing.T) {
	t.Cleanup(func() {
		// The identifiers mode's calls carry no object to audit: checkIdentifiers checks that the
		// self-audit compared none.
		if t.Failed() || s.derivedWrongOnPurpose || s.bodies == identifiersBodies || s.Caldera == nil ||
			!s.Caldera.proc.running() {
			return
		}
		r, err := http.Get(s.Caldera.URL + "/debug/session")
		if err != nil {
			t.Errorf("%s: /debug/session: %v", auditMarker(s.NS), err)
			return
		}
		var view struct {
			SessionState *struct {
				Mode string `json:"mode"`
			} `json:"sessionState"`
		}
		err = json.NewDecoder(r.Body).Decode(&view)
		r.Body.Close()
		if err != nil {
			t.Errorf("%s: /debug/session: %v", auditMarker(s.NS), err)
			return
		}
		if view.SessionState != nil && view.SessionState.Mode == "cluster" {
			s.Caldera.checkSelfAudit(t, s.NS)
		}
	})
}

// checkSelfAudit: the running process audited at least one session's objects, and every
// difference it found was explained (in flight, or touched by a placement of its session).
func (cal *Caldera) checkSelfAudit(t testing.TB, scenario string) {
	t.Helper()
	view, err := cal.sessionStateDebug()
	if err != nil {
		t.Errorf("%s: %v", auditMarker(scenario), err)
		return
	}
	audit := view.SelfAudit
	if audit.SessionsAudited < 1 || audit.ObjectsAudited < 1 {
		t.Errorf("%s: the self-audit compared nothing (%d sessions, %d objects): nothing was checked",
			auditMarker(scenario), audit.SessionsAudited, audit.ObjectsAudited)
		return
	}
	unexplained := cal.metric(t, "caldera_session_state_audit_differences_total", `explained="no"`)
	explained := cal.metric(t, "caldera_session_state_audit_differences_total") - unexplained
	if unexplained != 0 || audit.DivergentInARow != 0 {
		t.Errorf("%s: %v unexplained difference(s) between what Volcano sent and the derived state "+
			"(%d divergent session(s) in a row; last audit %+v)%s", auditMarker(scenario), unexplained,
			audit.DivergentInARow, audit.Last, cal.auditLines(10))
		return
	}
	t.Logf("self-audit: %d sessions, %d objects compared with the derived state; no unexplained difference"+
		" (%v explained: in flight or placed this session)", audit.SessionsAudited, audit.ObjectsAudited, explained)
}

// auditLines is the last n lines of Caldera's log in which the self-audit reports a difference.
func (cal *Caldera) auditLines(n int) string { return cal.logLines("self-audit:", n) }
