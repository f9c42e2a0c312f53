package e2e

// stale-view-miscounted (issue 49: "a test where the derived state is deliberately wrong is
// caught by the self-audit alone"): Caldera's watches reach the API server through a proxy of
// the harness that relays every list and watch, and, once told, rewrites one pod in them: its CPU
// request 1 becomes 2, so Caldera's derived state miscounts one field while every watch works
// and Volcano's view is right. No watch error can show it; cluster mode's self-audit, comparing
// what vc-scheduler's calls carry with the derived state, must: unexplained task.Resreq
// differences in sessionStateMaxDivergentSessions (3) sessions in a row make the view stale,
// /readyz 503 naming the self-audit, and the sessions held.
//
// The control: before the rewriting, an unaltered job of the same shape is audited session after
// session with no unexplained difference and /readyz stays 200; and the proxy counts the objects
// it rewrote.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// MiscountingProxy serves the API server to one client over plain HTTP on loopback (TLS to the
// API server behind it) and, once Miscount is called, rewrites the pods of one job in every pod
// list and watch event it relays: CPU request and limit 2.
type MiscountingProxy struct {
	URL       string
	ns, job   string
	on        atomic.Bool
	rewritten atomic.Int64
}

// StartMiscountingProxy starts the proxy to the cluster's API server; it closes when the test ends.
func StartMiscountingProxy(t testing.TB, c *Cluster, ns, job string) *MiscountingProxy {
	t.Helper()
	target, err := url.Parse(c.Server)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &MiscountingProxy{URL: "http://" + l.Addr().String(), ns: ns, job: job}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			r.Out.Header.Del("Accept-Encoding") // the transport decompresses what it asked for
		},
		Transport:      &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		FlushInterval:  -1, // a watch's events as they come
		ModifyResponse: p.modify,
	}
	srv := &http.Server{Handler: rp}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// Miscount starts rewriting.
func (p *MiscountingProxy) Miscount() { p.on.Store(true) }

// modify rewrites a pod list (whole) or a pod watch (event by event, a JSON object a line).
func (p *MiscountingProxy) modify(r *http.Response) error {
	if r.StatusCode != 200 || !strings.HasSuffix(r.Request.URL.Path, "/pods") {
		return nil
	}
	if w := r.Request.URL.Query().Get("watch"); w == "true" || w == "1" {
		upstream := r.Body
		pr, pw := io.Pipe()
		go func() {
			in := bufio.NewReader(upstream)
			for {
				line, err := in.ReadBytes('\n')
				if len(line) > 0 {
					if _, werr := pw.Write(p.rewrite(line, "object")); werr != nil {
						upstream.Close()
						return
					}
				}
				if err != nil {
					pw.CloseWithError(err)
					upstream.Close()
					return
				}
			}
		}()
		r.Body = pr
		return nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return err
	}
	body = p.rewrite(body, "items")
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// rewrite changes the job's pods in doc (a list's "items" or a watch event's "object"); doc is
// returned as it came when there is nothing to change.
func (p *MiscountingProxy) rewrite(doc []byte, field string) []byte {
	if !p.on.Load() {
		return doc
	}
	var top map[string]any
	if err := json.Unmarshal(doc, &top); err != nil {
		return doc
	}
	var pods []any
	switch v := top[field].(type) {
	case []any:
		pods = v
	case map[string]any:
		pods = []any{v}
	}
	changed := false
	for _, item := range pods {
		pod, _ := item.(map[string]any)
		meta, _ := pod["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if meta["namespace"] != p.ns || labels["job"] != p.job {
			continue
		}
		spec, _ := pod["spec"].(map[string]any)
		containers, _ := spec["containers"].([]any)
		for _, c := range containers {
			res, _ := c.(map[string]any)["resources"].(map[string]any)
			for _, kind := range []string{"requests", "limits"} {
				if list, ok := res[kind].(map[string]any); ok {
					list["cpu"] = "2"
					changed = true
				}
			}
		}
	}
	if !changed {
		return doc
	}
	out, err := json.Marshal(top)
	if err != nil {
		return doc
	}
	p.rewritten.Add(1)
	if bytes.HasSuffix(doc, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// plainKubeconfig writes a copy of the cluster's kubeconfig whose server is url (http://...).
func (c *Cluster) plainKubeconfig(t testing.TB, name, url string) string {
	t.Helper()
	b, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), c.Server, url)
	path := filepath.Join(c.Dir, name+"-kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stale-view-miscounted, described at the top of the file.
func testStaleViewMiscounted(t *testing.T, c *Cluster) {
	const name = "stale-view-miscounted"
	proxy := StartMiscountingProxy(t, c, name, "miscounted")
	kubeconfig := c.plainKubeconfig(t, name, proxy.URL)
	s := c.NewScenario(t, name, quotaConfig(kubeconfig), "enqueue, allocate, backfill", false,
		NodeSpec{Name: "miscount-a", CPU: "4", Memory: "16Gi"},
	)
	s.derivedWrongOnPurpose = true // the self-audit's differences are this scenario's point
	s.createQuota(t, "10")

	// Control: a job held by resourcequota, asked about every session, audited with no
	// unexplained difference while the proxy relays as it is.
	s.CreateJob(t, JobSpec{Name: "as-is", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	first, err := s.Caldera.sessionStateDebug()
	if err != nil {
		t.Fatal(err)
	}
	clean := s.waitSessions(t, "sessions derived", derivedSessions, 4, 30*time.Second)
	if audited := clean.SelfAudit.SessionsAudited - first.SelfAudit.SessionsAudited; audited < 3 {
		t.Fatalf("the self-audit audited %d sessions of the unaltered job, want 3", audited)
	}
	if n := s.Caldera.metric(t, "caldera_session_state_audit_differences_total", `explained="no"`); n != 0 || clean.SelfAudit.DivergentInARow != 0 {
		t.Fatalf("unexplained differences before anything was miscounted: %v (%+v)%s", n, clean.SelfAudit.Last, s.Caldera.auditLines(5))
	}
	if rs, err := s.Caldera.readyState(); err != nil || rs.Code != 200 {
		t.Fatalf("/readyz before the miscount: %+v %v", rs, err)
	}
	s.expectHeld(t, "as-is", "resourcequota: 20 CPU asked of a 10-CPU quota")

	// The mutant: the next job's pod reaches Caldera asking 2 CPUs; Volcano's view says 1.
	proxy.Miscount()
	since := time.Now()
	s.CreateJob(t, JobSpec{Name: "miscounted", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	var rs readyState
	if err := waitFor(30*time.Second, func() (bool, error) {
		var err error
		rs, err = s.Caldera.readyState()
		return err == nil && rs.Code == 503 && rs.Status == "stale", err
	}); err != nil {
		s.Wrong(t, "the derived state miscounts miscounted-0's CPU, and /readyz is still %d %q after 30 s: "+
			"the self-audit did not catch it (%d objects rewritten)%s", rs.Code, rs.Status, proxy.rewritten.Load(), s.Caldera.auditLines(5))
		t.FailNow()
	}
	caught := time.Since(since)
	errs, kinds := s.Caldera.watchErrors(t)
	unexplained := s.Caldera.metric(t, "caldera_session_state_audit_differences_total", `explained="no"`)
	resreq := s.Caldera.metric(t, "caldera_session_state_audit_differences_total", `explained="no"`, `kind="task.Resreq"`)
	firing, _ := s.Caldera.staleAlert(t)
	t.Logf("MUTANT: %d pod object(s) rewritten (CPU 1 -> 2); /readyz 503 %q %s after the job was created; "+
		"unexplained differences %v (task.Resreq %v); watch errors %v %v; alert expression firing: %v; reason: %s",
		proxy.rewritten.Load(), rs.Status, caught.Round(100*time.Millisecond), unexplained, resreq, errs, kinds,
		firing, rs.SessionState.Reason)
	if proxy.rewritten.Load() == 0 {
		t.Fatalf("the proxy rewrote nothing: the view is stale for another reason")
	}
	if errs != 0 || len(rs.SessionState.BrokenWatches) != 0 {
		t.Errorf("watch errors %v, broken watches %+v: not the self-audit alone", kinds, rs.SessionState.BrokenWatches)
	}
	if !strings.Contains(rs.SessionState.Reason, "self-audit") {
		t.Errorf("/readyz's reason does not name the self-audit: %q", rs.SessionState.Reason)
	}
	if resreq == 0 || !firing {
		t.Errorf("unexplained task.Resreq differences %v, caldera_session_state_stale firing %v: want both", resreq, firing)
	}
	if !strings.Contains(s.Caldera.auditLines(20), "kind task.Resreq") {
		t.Errorf("Caldera's log has no self-audit line for task.Resreq")
	}
	s.expectHeld(t, "miscounted", "resourcequota, then onStaleState hold")
}
