package e2e

// stale-view-watch-expired (issue 49 item 3): a watch that can no longer resume. Caldera's
// watches reach the API server through the loopback TCP proxy (stale_view_test.go); the proxy is
// cut for a moment, well inside sessionStateMaxStaleness, and meanwhile the namespace's quota is
// raised and etcd compacted past it. ResourceQuotas are served from etcd, not the watch cache
// (the cluster's --watch-cache-sizes), so Caldera's watch of them, resumed from its
// resourceVersion, ends 410 Gone: the change it missed is no longer in any history, only a list
// shows it. Caldera lists that collection again (the others resume), its view is not stale, and
// resourcequota admits the job the raised quota makes room for, as in-tree does from
// vc-scheduler's own (uncut) watch, while still holding the one it does not.
//
// The control that the fault was real: a watch of the quotas from the resourceVersion before the
// change, made by the test itself after the compaction, is refused 410 Gone.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// CompactEtcd compacts etcd's history up to its current revision, as the API server's periodic
// compaction does (etcd's JSON gateway: /v3/kv/range for the revision, /v3/kv/compaction); it
// returns the revision.
func (c *Cluster) CompactEtcd(t testing.TB) int64 {
	t.Helper()
	post := func(path, body string, out any) {
		t.Helper()
		r, err := http.Post(c.EtcdURL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("etcd %s: %s", path, r.Status)
		}
		if out != nil {
			if err := json.NewDecoder(r.Body).Decode(out); err != nil {
				t.Fatalf("etcd %s: %v", path, err)
			}
		}
	}
	var ranged struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	post("/v3/kv/range", `{"key":"Lw=="}`, &ranged) // "/": any key, for the header's revision
	rev, err := strconv.ParseInt(ranged.Header.Revision, 10, 64)
	if err != nil {
		t.Fatalf("etcd revision %q: %v", ranged.Header.Revision, err)
	}
	post("/v3/kv/compaction", fmt.Sprintf(`{"revision":"%d","physical":true}`, rev), nil)
	return rev
}

// setQuota sets the scenario's CPU quota (createQuota's) to cpu, spec and status (no quota
// controller runs), keeping what the API server's admission counted as used.
func (s *Scenario) setQuota(t testing.TB, cpu string) {
	t.Helper()
	ctx := context.Background()
	quotas := s.C.Kube.CoreV1().ResourceQuotas(s.NS)
	rq, err := quotas.Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	rq.Spec.Hard = hard
	if rq, err = quotas.Update(ctx, rq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rq.Status.Hard = hard
	if _, err := quotas.UpdateStatus(ctx, rq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// watchGone: a watch of the scenario's quotas from resourceVersion rv is refused 410 Gone,
// at once or as its first event.
func (s *Scenario) watchGone(t testing.TB, rv string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := s.C.Kube.CoreV1().ResourceQuotas(s.NS).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return err.Error()
		}
		t.Fatalf("watch of the quotas from %s: %v", rv, err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if status, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error && status.Code == http.StatusGone {
			return status.Message
		}
		t.Fatalf("a watch of the quotas from %s after the compaction resumed (%s %T): the fault is not real", rv, ev.Type, ev.Object)
	case <-ctx.Done():
		t.Fatalf("a watch of the quotas from %s after the compaction said nothing in 10s: the fault is not real", rv)
	}
	return ""
}

// stale-view-watch-expired, described at the top of the file.
func testStaleViewWatchExpired(t *testing.T, c *Cluster) {
	const name = "stale-view-watch-expired"
	proxy := StartTCPProxy(t, strings.TrimPrefix(c.Server, "https://"))
	kubeconfig := c.proxiedKubeconfig(t, name, proxy.Addr)
	s := c.NewScenario(t, name, quotaConfig(kubeconfig), "enqueue, allocate, backfill", false,
		NodeSpec{Name: "expired-a", CPU: "4", Memory: "16Gi"},
		NodeSpec{Name: "expired-b", CPU: "4", Memory: "16Gi"},
	)
	s.createQuota(t, "4")

	// Control, before: the small job admitted and bound; the two bigger ones held by the 4-CPU
	// quota through three sessions that asked about them.
	s.CreateJob(t, JobSpec{Name: "control", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "fits-raised", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("6", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "over-quota", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("30", "1Gi")})
	t.Logf("control: %v", s.WaitAdmittedBound(t, "control", 1, 60*time.Second))
	before := s.waitSessions(t, "sessions derived", derivedSessions, 3, 20*time.Second)
	s.expectHeld(t, "fits-raised", "resourcequota: 6 CPU asked of a 4-CPU quota")
	s.expectHeld(t, "over-quota", "resourcequota: 30 CPU asked of a 4-CPU quota")
	rq, err := c.Kube.CoreV1().ResourceQuotas(s.NS).Get(context.Background(), "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for collection, w := range before.Watches {
		if w.Lists != 1 {
			t.Fatalf("the %s watch listed %d times before the fault, want once", collection, w.Lists)
		}
	}

	// The fault: Caldera's watches cut; the quota raised to 20 CPU and etcd compacted past it
	// while they are; then the proxy restored, well inside the staleness limit.
	cutAt := time.Now()
	open := proxy.Cut()
	s.setQuota(t, "20")
	rev := c.CompactEtcd(t)
	gone := s.watchGone(t, rq.ResourceVersion)
	proxy.Restore(t)
	t.Logf("FAULT: proxy cut (%d connections) for %s: quota raised to 20 CPU, etcd compacted at revision %d; "+
		"a watch from the quota's resourceVersion %s is refused: %s", open, time.Since(cutAt).Round(time.Millisecond),
		rev, rq.ResourceVersion, gone)

	// Caldera lists the quotas again; the other collections resume where they were.
	var after clusterDebug
	if err := waitFor(30*time.Second, func() (bool, error) {
		v, err := s.Caldera.sessionStateDebug()
		after = v
		return err == nil && v.Watches["resourcequotas"].Lists >= 2, err
	}); err != nil {
		t.Fatalf("Caldera did not list the quotas again after its watch could not resume: %+v: %v", after.Watches, err)
	}
	relisted := time.Since(cutAt)
	for _, collection := range []string{"pods", "nodes"} {
		if n := after.Watches[collection].Lists; n != 1 {
			t.Errorf("the %s watch listed %d times: the cut alone forced a relist, so the quotas' proves nothing", collection, n)
		}
	}
	log, err := os.ReadFile(s.Caldera.proc.log)
	if err != nil || !strings.Contains(string(log), "resourcequotas: watch expired") {
		t.Errorf("Caldera's log does not say the quotas' watch expired (%v)", err)
	}
	rs, err := s.Caldera.readyState()
	if err != nil || rs.Code != 200 || rs.SessionState.Stale {
		t.Errorf("/readyz after the relist: %+v %v, want 200, not stale", rs, err)
	}
	if firing, v := s.Caldera.staleAlert(t); firing {
		t.Errorf("caldera_session_state_stale %v after the relist", v)
	}
	t.Logf("RECOVERY: resourcequotas listed again %s after the cut (lists %d; pods %d, nodes %d); /readyz %d %q",
		relisted.Round(100*time.Millisecond), after.Watches["resourcequotas"].Lists, after.Watches["pods"].Lists,
		after.Watches["nodes"].Lists, rs.Code, rs.Status)

	// The decisions, from the relisted quota: in-tree's.
	got := s.WaitAdmittedBound(t, "fits-raised", 1, 60*time.Second)
	t.Logf("RECOVERY: fits-raised admitted and bound under the raised quota %s after the cut: %v",
		time.Since(cutAt).Round(100*time.Millisecond), got)
	s.waitSessions(t, "sessions derived", derivedSessions, 3, 20*time.Second)
	s.expectHeld(t, "over-quota", "resourcequota: 30 CPU asked of the raised 20-CPU quota")
}
