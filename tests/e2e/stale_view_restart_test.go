package e2e

// stale-view-caldera-restarted (issue 49 item 3): Caldera killed mid-run and started again, as
// the native sidecar's restart does, while vc-scheduler keeps calling. No startupProbe holds
// vc-scheduler back then: the new process is called from its first second, before its watches
// have listed, and must not answer a session from an empty or partial view.
//
// The window before the first list is made long enough to be seen: Caldera's watches reach the
// API server through a loopback TCP proxy (stale_view_test.go) that stalls the new process's
// connections (a list that takes its time, as at 10,000 pods: no error, so no staleness either)
// until the test has seen vc-scheduler's calls answered by it. A session opened then is held
// as onStaleState hold says: the over-quota job that resourcequota holds stays Pending, and so
// does a job submitted meanwhile; released, the watches list, /readyz turns 200 and the new job
// is admitted and bound while the over-quota one stays held, as in-tree.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// quotaConfig: cluster mode on the kubeconfig given, held when not current; resourcequota
// decides admission.
func quotaConfig(kubeconfig string) string {
	return `volcanoVersion: "1.14"
sessionState: cluster
sessionStateKubeconfig: "` + kubeconfig + `"
onStaleState: hold
tiers:
- plugins:
  - name: priority
  - name: conformance
- plugins:
  - name: resourcequota
`
}

// clusterDebug is /debug/session's sessionState in cluster mode: the sessions opened on the
// derived state, those whose first call came before the watches listed, and the self-audit.
type clusterDebug struct {
	Mode               string `json:"mode"`
	Synced             bool   `json:"synced"`
	SessionsDerived    int    `json:"sessionsDerived"`
	SessionsBeforeSync int    `json:"sessionsBeforeSync"`
	Watches            map[string]struct {
		Lists  int            `json:"lists"`
		Errors map[string]int `json:"errors"`
	} `json:"watches"`
	SelfAudit selfAuditView `json:"selfAudit"`
}

func (cal *Caldera) sessionStateDebug() (clusterDebug, error) {
	var view struct {
		SessionState *clusterDebug `json:"sessionState"`
	}
	r, err := http.Get(cal.URL + "/debug/session")
	if err != nil {
		return clusterDebug{}, err
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(&view); err != nil {
		return clusterDebug{}, err
	}
	if view.SessionState == nil || view.SessionState.Mode != "cluster" {
		return clusterDebug{}, fmt.Errorf("/debug/session has no cluster-mode sessionState")
	}
	return *view.SessionState, nil
}

// waitSessions waits until count (of /debug/session's sessionState) has grown by more from
// what it read first: vc-scheduler's sessions went on. It returns the last view.
func (s *Scenario) waitSessions(t testing.TB, what string, count func(clusterDebug) int, more int, timeout time.Duration) clusterDebug {
	t.Helper()
	first, err := s.Caldera.sessionStateDebug()
	if err != nil {
		t.Fatal(err)
	}
	last := first
	if err := waitFor(timeout, func() (bool, error) {
		view, err := s.Caldera.sessionStateDebug()
		if err != nil {
			return false, err
		}
		last = view
		return count(view) >= count(first)+more, nil
	}); err != nil {
		t.Fatalf("%s: %d -> %d in %s, want %d more: %v", what, count(first), count(last), timeout, more, err)
	}
	return last
}

func derivedSessions(v clusterDebug) int    { return v.SessionsDerived }
func sessionsBeforeSync(v clusterDebug) int { return v.SessionsBeforeSync }

// stale-view-caldera-restarted, described at the top of the file.
func testStaleViewCalderaRestarted(t *testing.T, c *Cluster) {
	const name = "stale-view-caldera-restarted"
	proxy := StartTCPProxy(t, strings.TrimPrefix(c.Server, "https://"))
	kubeconfig := c.proxiedKubeconfig(t, name, proxy.Addr)
	s := c.NewScenario(t, name, quotaConfig(kubeconfig), "enqueue, allocate, backfill", false,
		NodeSpec{Name: "restart-a", CPU: "4", Memory: "16Gi"},
		NodeSpec{Name: "restart-b", CPU: "4", Memory: "16Gi"},
	)
	s.createQuota(t, "10")

	// Control, the first process: admitted and placed as in-tree would; the over-quota job held
	// through three more sessions that asked about it.
	s.CreateJob(t, JobSpec{Name: "control", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "over-quota", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	t.Logf("control: %v", s.WaitAdmittedBound(t, "control", 1, 60*time.Second))
	s.waitSessions(t, "sessions derived", derivedSessions, 3, 20*time.Second)
	s.expectHeld(t, "over-quota", "resourcequota: 20 CPU asked of a 10-CPU quota")
	s.Caldera.checkSelfAudit(t, s.NS) // the first process's own, before it goes

	// The fault: killed, started again on the same ports with its watches' connections stalled.
	s.Caldera.Kill()
	killedAt := time.Now()
	proxy.Stall()
	s.Caldera.launch(t)
	t.Logf("FAULT: Caldera killed (SIGKILL) and started again; its watches' connections stalled")
	var rs readyState
	if err := waitFor(30*time.Second, func() (bool, error) {
		if !s.Caldera.proc.running() {
			t.Fatalf("the restarted Caldera exited:\n%s", tail(s.Caldera.proc.log, 30))
		}
		r, err := http.Get(s.Caldera.URL + "/readyz") // the verb listener, once it is up
		if err != nil {
			return false, err
		}
		r.Body.Close()
		rs, err = s.Caldera.readyState()
		return err == nil, err
	}); err != nil {
		t.Fatalf("the restarted Caldera's verb listener: %v\n%s", err, tail(s.Caldera.proc.log, 30))
	}
	up := time.Since(killedAt)
	if rs.Code != 503 {
		t.Fatalf("/readyz %d %q with the watches' connections stalled: the window before the first list is not there", rs.Code, rs.Status)
	}
	s.CreateJob(t, JobSpec{Name: "during-restart", Pods: 1, Request: Res("1", "1Gi")})
	// vc-scheduler's sessions reach the new process before its watches listed: three of them,
	// each asked about over-quota (answered from no state, it would be admitted at once).
	var view clusterDebug
	if err := waitFor(20*time.Second, func() (bool, error) {
		if pl := s.Placement(t, "over-quota"); pl["over-quota-0"] != "" {
			s.Wrong(t, "over-quota-0 bound to %s by a session answered before the restarted Caldera's watches listed", pl["over-quota-0"])
			t.FailNow()
		}
		v, err := s.Caldera.sessionStateDebug()
		view = v
		return err == nil && v.SessionsBeforeSync >= 3, err
	}); err != nil {
		t.Fatalf("sessions before the watches listed: %+v: %v", view, err)
	}
	enqueued := s.Caldera.Answered(t, "jobEnqueueable")
	if rs, err := s.Caldera.readyState(); err != nil || rs.Code != 503 {
		t.Fatalf("/readyz after the calls: %+v %v: the watches listed, so the window was not tested", rs, err)
	}
	if view.Synced || enqueued < 3 {
		t.Fatalf("/debug/session: synced %v, %v jobEnqueueable calls answered: want unsynced, with the jobs asked about meanwhile",
			view.Synced, enqueued)
	}
	s.expectHeld(t, "over-quota", "answered before the restarted Caldera's watches listed: nothing to hold it from but hold")
	s.expectHeld(t, "during-restart", "submitted before the restarted Caldera's watches listed: onStaleState hold")
	t.Logf("FAULT: verb listener up %s after the kill, /readyz 503 %q; %v jobEnqueueable calls and %d session(s) "+
		"before the watches listed, all held", up.Round(100*time.Millisecond),
		rs.Status, enqueued, view.SessionsBeforeSync)

	// Released: the watches list, and the decisions are in-tree's again.
	releasedAt := time.Now()
	held := proxy.Release()
	back := s.waitCurrent(t, releasedAt, 30*time.Second)
	t.Logf("RECOVERY: %d stalled connection(s) released after %s; /readyz 200 %s later", held,
		releasedAt.Sub(killedAt).Round(100*time.Millisecond), back.Round(100*time.Millisecond))
	got := s.WaitAdmittedBound(t, "during-restart", 1, 60*time.Second)
	t.Logf("RECOVERY: during-restart admitted and bound %s after the release: %v",
		time.Since(releasedAt).Round(100*time.Millisecond), got)
	s.waitSessions(t, "sessions derived", derivedSessions, 3, 20*time.Second)
	s.expectHeld(t, "over-quota", "resourcequota, after the restart")
}
