package e2e

// When Caldera's own view is stale (issue 49 item 3): in cluster mode Caldera decides from its
// own watch of the API server, so the case to prove is its view going wrong while Volcano's is
// right (docs/operator-guide.md section 9, "When Caldera's own view is stale").
//
// stale-view-proxy-cut: Caldera's watches reach the API server through a loopback TCP proxy the
// test controls (its sessionStateKubeconfig names the proxy); vc-scheduler, the test's client,
// the fake kubelet and the pdb plugin keep their direct connections. The proxy is cut (its
// listener and every open connection closed) for longer than sessionStateMaxStaleness (3s):
// /readyz turns 503 "stale", caldera_session_state_stale reads 1, and a job submitted meanwhile,
// which Volcano sees and Caldera does not, is held (onStaleState hold: jobEnqueueable Reject)
// while vc-scheduler keeps calling; restored, the job is admitted and bound.
//
// stale-view-apiserver-stopped: the API server itself killed, down past the limit, and started
// again on the same port and etcd; every client loses it, so it runs last.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// TCPProxy forwards loopback TCP connections to target byte for byte (TLS passes through: the
// API server's certificate names 127.0.0.1, so a kubeconfig naming the proxy verifies). Cut
// closes its listener and every connection it holds; Restore listens again on the same port.
// Stall holds each connection accepted from then on, unanswered (a list that takes its time),
// until Release forwards them.
type TCPProxy struct {
	Addr     string // 127.0.0.1:PORT, the same after a Restore
	target   string
	mu       sync.Mutex
	l        net.Listener
	conns    map[net.Conn]struct{}
	accepted int
	gate     chan struct{} // non-nil while stalled: closed by Release (or Cut)
	held     int           // connections accepted while stalled
}

// StartTCPProxy listens on a free loopback port; the proxy is cut when the test ends.
func StartTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	p := &TCPProxy{Addr: "127.0.0.1:0", target: target, conns: map[net.Conn]struct{}{}}
	if err := p.listen(); err != nil {
		t.Fatalf("tcp proxy: %v", err)
	}
	t.Cleanup(func() { p.Cut() })
	return p
}

func (p *TCPProxy) listen() error {
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.l, p.Addr = l, l.Addr().String()
	p.mu.Unlock()
	go p.serve(l)
	return nil
}

func (p *TCPProxy) serve(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return // closed by Cut
		}
		p.mu.Lock()
		gate := p.gate
		if gate != nil {
			p.held++
		}
		p.mu.Unlock()
		go p.forward(l, in, gate)
	}
}

// forward pipes one accepted connection to the target, once gate (if any) is closed.
func (p *TCPProxy) forward(l net.Listener, in net.Conn, gate chan struct{}) {
	if gate != nil {
		<-gate
	}
	out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.l != l { // cut meanwhile
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.accepted++
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	go pipe(in, out)
	go pipe(out, in)
}

// Cut closes the listener and every open connection (both sides), and those stalled; it
// returns how many client connections were open.
func (p *TCPProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	if p.gate != nil {
		close(p.gate) // the held connections see the cut and close
		p.gate = nil
	}
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
	return n
}

// Stall holds every connection accepted from now on until Release; the open ones go on.
func (p *TCPProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
}

// Release forwards the stalled connections and those accepted from now on; it returns how
// many connections were held.
func (p *TCPProxy) Release() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	n := p.held
	p.held = 0
	return n
}

// Restore listens again on the same port.
func (p *TCPProxy) Restore(t testing.TB) {
	t.Helper()
	if err := waitFor(10*time.Second, func() (bool, error) { return p.listen() == nil, nil }); err != nil {
		t.Fatalf("tcp proxy: listening again on %s: %v", p.Addr, err)
	}
}

// Accepted is how many connections the proxy has forwarded.
func (p *TCPProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// proxiedKubeconfig writes a copy of the cluster's kubeconfig whose server is the proxy.
func (c *Cluster) proxiedKubeconfig(t testing.TB, name, addr string) string {
	t.Helper()
	b, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), c.Server, "https://"+addr)
	if text == string(b) {
		t.Fatalf("the kubeconfig does not name %s", c.Server)
	}
	path := filepath.Join(c.Dir, name+"-kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const staleLimit = 3 * time.Second

// staleConfig: cluster mode on the kubeconfig given, stale past 3 s, held (the default policy,
// written out). pdb reads PodDisruptionBudgets on its own connection ({{KUBECONFIG}}: direct).
// pdb comes last in its tier (preemptionConfig says why); resourcequota decides admission.
func staleConfig(kubeconfig string) string {
	return `volcanoVersion: "1.14"
sessionState: cluster
sessionStateKubeconfig: "` + kubeconfig + `"
sessionStateMaxStaleness: 3s
onStaleState: hold
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: pdb
    arguments: {source: kubernetes, kubeconfig: "{{KUBECONFIG}}"}
- plugins:
  - name: resourcequota
`
}

// readyState is /readyz's status code, status and sessionState.
type readyState struct {
	Code         int
	Status       string
	SessionState struct {
		Stale         bool   `json:"stale"`
		Reason        string `json:"reason"`
		BrokenWatches []struct {
			Collection   string  `json:"collection"`
			BrokenSecs   float64 `json:"brokenSeconds"`
			ErrorsInARow int     `json:"errorsInARow"`
			LastError    string  `json:"lastError"`
		} `json:"brokenWatches"`
	} `json:"sessionState"`
}

// readyState reads /readyz from the health listener (what the readiness probe reads).
func (cal *Caldera) readyState() (readyState, error) {
	var rs readyState
	r, err := http.Get(cal.HealthURL + "/readyz")
	if err != nil {
		return rs, err
	}
	defer r.Body.Close()
	rs.Code = r.StatusCode
	return rs, json.NewDecoder(r.Body).Decode(&rs)
}

// staleAlert evaluates the shipped alert's expression, caldera_session_state_stale == 1
// (deploy/kubernetes/prometheusrule.yaml, CalderaSessionStateStale), on the scraped value.
func (cal *Caldera) staleAlert(t testing.TB) (firing bool, value float64) {
	t.Helper()
	samples, err := scrape(cal.HealthURL + "/metrics")
	if err != nil {
		t.Fatalf("caldera /metrics: %v", err)
	}
	value, ok := samples["caldera_session_state_stale"]
	if !ok {
		t.Fatalf("/metrics has no caldera_session_state_stale")
	}
	return value == 1, value
}

// waitStale polls /readyz from the moment the fault began: the view must not be stale before
// the limit (the watches' failures start at the fault, not before) and must be within slack
// after it. It returns when it turned stale, counted from the fault.
func (s *Scenario) waitStale(t testing.TB, since time.Time, slack time.Duration) (time.Duration, readyState) {
	t.Helper()
	var last readyState
	var lastErr error
	for {
		elapsed := time.Since(since)
		rs, err := s.Caldera.readyState()
		last, lastErr = rs, err
		if err == nil && rs.Code == 503 && rs.Status == "stale" {
			if elapsed < staleLimit {
				s.Wrong(t, "/readyz stale %s after the fault, before sessionStateMaxStaleness %s: %+v", elapsed, staleLimit, rs)
			}
			return elapsed, rs
		}
		if elapsed > staleLimit+slack {
			s.Wrong(t, "/readyz not stale %s after the fault (limit %s): %+v %v", elapsed, staleLimit, last, lastErr)
			t.FailNow()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCurrent waits for /readyz 200 and the gauge 0 after the fault ended.
func (s *Scenario) waitCurrent(t testing.TB, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	var last readyState
	if err := waitFor(timeout, func() (bool, error) {
		rs, err := s.Caldera.readyState()
		last = rs
		return err == nil && rs.Code == 200, err
	}); err != nil {
		t.Fatalf("/readyz not ready again %s after the fault ended: %+v: %v", timeout, last, err)
	}
	took := time.Since(since)
	if firing, v := s.Caldera.staleAlert(t); firing {
		t.Errorf("caldera_session_state_stale %v with /readyz ready", v)
	}
	return took
}

// watchErrors is caldera_session_state_watch_errors_total summed, by kind.
func (cal *Caldera) watchErrors(t testing.TB) (float64, map[string]float64) {
	t.Helper()
	samples, err := scrape(cal.HealthURL + "/metrics")
	if err != nil {
		t.Fatalf("caldera /metrics: %v", err)
	}
	total, byKind := 0.0, map[string]float64{}
	for key, v := range samples {
		if rest, ok := strings.CutPrefix(key, "caldera_session_state_watch_errors_total{"); ok {
			_, kind, _ := strings.Cut(rest, `kind="`)
			kind, _, _ = strings.Cut(kind, `"`)
			byKind[kind] += v
			total += v
		}
	}
	return total, byKind
}

// expectHeld: the job's PodGroup Pending and its pods unbound.
func (s *Scenario) expectHeld(t testing.TB, job, why string) {
	t.Helper()
	if ph := s.PodGroupPhase(t, job); ph != vcsched.PodGroupPending {
		s.Wrong(t, "%s: PodGroup phase %q, want Pending (%s)", job, ph, why)
	}
	for pod, node := range s.Placement(t, job) {
		if node != "" {
			s.Wrong(t, "%s bound to %s (%s)", pod, node, why)
		}
	}
}

// protectedSetup: a PDB (minAvailable 1, disruptionsAllowed 0, as the disruption controller
// would publish for one healthy pod) over a low-priority job filling most of node; then a
// high-priority job that fits on node only by evicting it, so that preempt runs each cycle.
// pdb keeps the pod; it must stay through the fault and after it.
func (s *Scenario) protectedSetup(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	c := s.C
	c.EnsurePriorityClass(t, "e2e-low", 10)
	c.EnsurePriorityClass(t, "e2e-high", 1000)
	one := intstr.FromInt32(1)
	pdbs := c.Kube.PolicyV1().PodDisruptionBudgets(s.NS)
	pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "protect"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "protected"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pdbs.Delete(context.Background(), "protect", metav1.DeleteOptions{}) })
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1,
	}
	if _, err := pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.CreateJob(t, JobSpec{Name: "protected", Pods: 1, Request: Res("3", "1Gi"), PriorityClass: "e2e-low",
		PodLabels: map[string]string{"app": "protected"}, Node: node})
	t.Logf("protected: %v", s.WaitBound(t, "protected", 1, 60*time.Second))
	s.CreateJob(t, JobSpec{Name: "pressure", Pods: 1, Request: Res("2", "1Gi"), PriorityClass: "e2e-high", Node: node})
}

// checkProtected: the PDB-protected pod was never evicted, and the job that wanted its room
// is still unplaced.
func (s *Scenario) checkProtected(t testing.TB, when string) {
	t.Helper()
	if s.C.Deleted(s.NS, "protected-0") || s.EventReasons(t, "Pod", "protected-0")["Evict"] {
		s.Wrong(t, "%s: protected-0 (PDB disruptionsAllowed 0) was evicted", when)
	}
	if pl := s.Placement(t, "pressure"); pl["pressure-0"] != "" {
		s.Wrong(t, "%s: pressure-0 bound to %s, where only the protected pod's room was", when, pl["pressure-0"])
	}
}

// stale-view-proxy-cut, described at the top of the file.
func testStaleViewProxyCut(t *testing.T, c *Cluster) {
	const name = "stale-view-proxy-cut"
	proxy := StartTCPProxy(t, strings.TrimPrefix(c.Server, "https://"))
	kubeconfig := c.proxiedKubeconfig(t, name, proxy.Addr)
	s := c.NewScenario(t, name, staleConfig(kubeconfig), "enqueue, allocate, preempt, backfill", false,
		NodeSpec{Name: "stale-a", CPU: "4", Memory: "16Gi"},
		NodeSpec{Name: "stale-b", CPU: "4", Memory: "16Gi"},
	)
	s.createQuota(t, "10")

	// Control, the proxy forwarding: admitted and placed as in-tree would; resourcequota
	// (answered from the view through the proxy) holds the over-quota job.
	s.protectedSetup(t, "stale-a")
	s.CreateJob(t, JobSpec{Name: "control", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "over-quota", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	t.Logf("control: %v", s.WaitAdmittedBound(t, "control", 1, 60*time.Second))
	time.Sleep(3 * time.Second)
	s.expectHeld(t, "over-quota", "resourcequota: 20 CPU asked of a 10-CPU quota")
	s.checkProtected(t, "before the cut")
	// preempt did look for room for pressure, and pdb was asked (and kept protected-0).
	if err := waitFor(30*time.Second, func() (bool, error) {
		return s.Caldera.metric(t, "caldera_plugin_decisions_total", `plugin="pdb"`, `verb="preemptable"`) >= 1, nil
	}); err != nil {
		t.Fatalf("pdb decided no preemptable call for pressure: %v", err)
	}
	preemptBefore := s.Caldera.Answered(t, "preemptable")
	if rs, err := s.Caldera.readyState(); err != nil || rs.Code != 200 || rs.SessionState.Stale {
		t.Fatalf("/readyz before the cut: %+v %v", rs, err)
	}
	if firing, v := s.Caldera.staleAlert(t); firing {
		t.Fatalf("caldera_session_state_stale %v before the cut", v)
	}
	errsBefore, _ := s.Caldera.watchErrors(t)
	if proxy.Accepted() < 6 {
		t.Fatalf("the proxy forwarded %d connections: Caldera's six watches do not go through it", proxy.Accepted())
	}

	// The cut: Caldera's watches fail; Volcano's view goes on.
	cutAt := time.Now()
	open := proxy.Cut()
	t.Logf("FAULT: proxy %s cut (%d connections closed)", proxy.Addr, open)
	took, rs := s.waitStale(t, cutAt, 5*time.Second)
	firing, v := s.Caldera.staleAlert(t)
	errsDuring, kinds := s.Caldera.watchErrors(t)
	t.Logf("FAULT: /readyz %d %q %s after the cut; caldera_session_state_stale == 1: %v (value %v); "+
		"watch errors %v -> %v %v; reason: %s", rs.Code, rs.Status, took.Round(100*time.Millisecond),
		firing, v, errsBefore, errsDuring, kinds, rs.SessionState.Reason)
	if !firing {
		s.Wrong(t, "/readyz stale but caldera_session_state_stale is %v", v)
	}
	if errsDuring <= errsBefore {
		t.Errorf("caldera_session_state_watch_errors_total did not rise (%v -> %v)", errsBefore, errsDuring)
	}
	if !strings.Contains(rs.SessionState.Reason, proxy.Addr) || !strings.Contains(rs.SessionState.Reason, kubeconfig) {
		t.Errorf("/readyz sessionState.reason does not name the API server %s and %s: %q", proxy.Addr, kubeconfig, rs.SessionState.Reason)
	}

	// A job Volcano sees and Caldera cannot: held while the view is stale.
	enqueueBefore := s.Caldera.Answered(t, "jobEnqueueable")
	s.CreateJob(t, JobSpec{Name: "during-cut", Pods: 1, Request: Res("1", "1Gi")})
	time.Sleep(8 * time.Second) // eight of vc-scheduler's sessions
	if !s.Scheduler.running() {
		t.Fatalf("vc-scheduler exited during the cut:\n%s", tail(s.Scheduler.log, 30))
	}
	enqueueDuring := s.Caldera.Answered(t, "jobEnqueueable")
	if enqueueDuring <= enqueueBefore {
		t.Errorf("vc-scheduler called no jobEnqueueable during the cut (%v -> %v)", enqueueBefore, enqueueDuring)
	}
	s.expectHeld(t, "during-cut", "submitted while Caldera's view is stale: onStaleState hold")
	s.expectHeld(t, "over-quota", "resourcequota")
	s.checkProtected(t, "during the cut")
	if rs, err := s.Caldera.readyState(); err != nil || rs.Code != 503 || rs.Status != "stale" {
		t.Errorf("/readyz still during the cut: %+v %v", rs, err)
	}
	t.Logf("FAULT: during-cut held for 8 s (PodGroup %s, pod unbound) while vc-scheduler ran; "+
		"jobEnqueueable answered %v -> %v", s.PodGroupPhase(t, "during-cut"), enqueueBefore, enqueueDuring)
	if log, err := os.ReadFile(s.Caldera.proc.log); err != nil || !strings.Contains(string(log), "the cluster view is stale") {
		t.Errorf("Caldera's log has no ERROR line saying the view is stale (%v)", err)
	}

	// Restored on the same port: the watches list again, the job is admitted and bound.
	restoredAt := time.Now()
	proxy.Restore(t)
	back := s.waitCurrent(t, restoredAt, 60*time.Second)
	t.Logf("RECOVERY: proxy restored after %s cut; /readyz 200 %s later", restoredAt.Sub(cutAt).Round(100*time.Millisecond), back.Round(100*time.Millisecond))
	got := s.WaitAdmittedBound(t, "during-cut", 1, 60*time.Second)
	t.Logf("RECOVERY: during-cut admitted and bound %s after the restore: %v", time.Since(restoredAt).Round(100*time.Millisecond), got)
	time.Sleep(3 * time.Second)
	s.expectHeld(t, "over-quota", "resourcequota, after the restore")
	s.checkProtected(t, "after the restore")
	t.Logf("protected-0 kept through it all: preemptable answered %v before the cut, %v at the end; pdb's preemptable decisions %v",
		preemptBefore, s.Caldera.Answered(t, "preemptable"),
		s.Caldera.metric(t, "caldera_plugin_decisions_total", `plugin="pdb"`, `verb="preemptable"`))
	if log, err := os.ReadFile(s.Caldera.proc.log); err != nil || !strings.Contains(string(log), "the cluster view is current again") {
		t.Errorf("Caldera's log does not say the view is current again (%v)", err)
	}
}

// stale-view-apiserver-stopped: the API server killed (SIGKILL), down past the limit, then
// started again on the same port and etcd. Every client loses it (vc-scheduler too, which must
// survive); Caldera turns stale, and current again once its watches reach the restarted
// server; a job then is admitted and bound, the over-quota one still held.
func testStaleViewAPIServerStopped(t *testing.T, c *Cluster) {
	const name = "stale-view-apiserver-stopped"
	s := c.NewScenario(t, name, staleConfig("{{KUBECONFIG}}"), "enqueue, allocate, backfill", false,
		NodeSpec{Name: "stop-a", CPU: "4", Memory: "16Gi"},
		NodeSpec{Name: "stop-b", CPU: "4", Memory: "16Gi"},
	)
	s.createQuota(t, "10")
	s.CreateJob(t, JobSpec{Name: "control", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "over-quota", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	t.Logf("control: %v", s.WaitAdmittedBound(t, "control", 1, 60*time.Second))
	time.Sleep(3 * time.Second)
	s.expectHeld(t, "over-quota", "resourcequota: 20 CPU asked of a 10-CPU quota")
	errsBefore, _ := s.Caldera.watchErrors(t)

	stoppedAt := time.Now()
	c.KillAPIServer(t)
	t.Logf("FAULT: kube-apiserver killed (SIGKILL)")
	took, rs := s.waitStale(t, stoppedAt, 5*time.Second)
	firing, v := s.Caldera.staleAlert(t)
	errsDuring, kinds := s.Caldera.watchErrors(t)
	t.Logf("FAULT: /readyz %d %q %s after the stop; caldera_session_state_stale == 1: %v (value %v); "+
		"watch errors %v -> %v %v; reason: %s", rs.Code, rs.Status, took.Round(100*time.Millisecond),
		firing, v, errsBefore, errsDuring, kinds, rs.SessionState.Reason)
	if !firing {
		s.Wrong(t, "/readyz stale but caldera_session_state_stale is %v", v)
	}
	if errsDuring <= errsBefore {
		t.Errorf("caldera_session_state_watch_errors_total did not rise (%v -> %v)", errsBefore, errsDuring)
	}
	if !strings.Contains(rs.SessionState.Reason, strings.TrimPrefix(c.Server, "https://")) {
		t.Errorf("/readyz sessionState.reason does not name the API server %s: %q", c.Server, rs.SessionState.Reason)
	}
	time.Sleep(3 * time.Second) // stopped well past the limit
	if !s.Scheduler.running() {
		t.Fatalf("vc-scheduler exited while the API server was stopped:\n%s", tail(s.Scheduler.log, 30))
	}

	startedAt := time.Now()
	c.StartAPIServer(t)
	t.Logf("RECOVERY: kube-apiserver ready again after %s stopped (%s to start)",
		startedAt.Sub(stoppedAt).Round(100*time.Millisecond), time.Since(startedAt).Round(100*time.Millisecond))
	back := s.waitCurrent(t, startedAt, 60*time.Second)
	t.Logf("RECOVERY: Caldera /readyz 200 %s after the API server was started", back.Round(100*time.Millisecond))
	s.CreateJob(t, JobSpec{Name: "after", Pods: 1, Request: Res("1", "1Gi")})
	got := s.WaitAdmittedBound(t, "after", 1, 60*time.Second)
	t.Logf("RECOVERY: after admitted and bound: %v", got)
	time.Sleep(3 * time.Second)
	s.expectHeld(t, "over-quota", "resourcequota, after the restart")
	if !s.Scheduler.running() {
		t.Errorf("vc-scheduler exited")
	}
}
