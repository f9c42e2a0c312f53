//go:build scale

package e2e

// The cluster-scale benchmark (issue 22), driven by `python -m bench cluster` (bench/cluster.py),
// which passes its plan in CALDERA_SCALE_PLAN (JSON) and reads the results from the file it names.
//
// Per cluster size: a fresh API-only cluster (etcd, kube-apiserver, the harness's fake kubelet
// marking bound pods Running), N Node objects, then per plugin group and per scheduler, one after
// another on the same nodes: the group's workload created in bulk, vc-scheduler v1.14.1 started
// with the group's conf, run until the number of bound pods has not changed for the settle time
// and then for the plan's idle cycles (or until the time box ends), measured from vc-scheduler's
// own /metrics and from both processes, then stopped and the workload deleted. The schedulers of a group share everything but the conf
// (and caldera-names and neutral-names the vc-scheduler binary), each one row of scaleSchedulers:
//
//   - intree:          the group's plugins in-tree in volcano-scheduler.conf;
//   - caldera:         that conf merged by `caldera volcano-config --merge` (the hosted plugins
//                      replaced by the extender entry in their tier), Caldera hosting them on
//                      Volcano's snapshot;
//   - caldera-cluster: the same with `sessionState: cluster` (issue 36): Caldera derives the
//                      session's state from the API server it watches, and the merged entry has
//                      no onSessionOpenVerb, so Volcano never marshals its snapshot;
//   - neutral:         the snapshot mode's merged conf pointing at a server in this process that
//                      reads each body and answers the neutral value at once: the cost of the
//                      protocol itself. In the job group it rejects the jobs of the namespace
//                      whose quota holds them (heldNamespace), as in-tree does, so that Volcano
//                      examines the same pending jobs through it each cycle.
//   - neutral-cluster: the same server behind cluster mode's merged conf (no onSessionOpenVerb):
//                      the protocol's cost without a snapshot, cluster mode's floor: the calls
//                      Volcano still makes (a jobEnqueueable per held job each cycle, an
//                      allocate per bind), each marshalled and posted, answered at once.
//   - caldera-names:   Caldera as in caldera-cluster, vc-scheduler the patched build of
//                      protocol/volcano-identifiers (issue 51) with the conf `caldera
//                      volcano-config --bodies identifiers --merge` makes: identifiers instead of
//                      objects, the batched predicate, onSessionOpen with the roster only
//                      (scale_identifiers_test.go; not in bench cluster's default schedulers).
//   - neutral-names:   the neutral server behind what caldera-names runs (the patched
//                      vc-scheduler, the identifiers conf with the neutral server's URL), which
//                      then answers the identifiers protocol (GET /capabilities, the batched
//                      predicate passing every node, the held namespace's jobs rejected by their
//                      job UID): the identifiers protocol's own cost, caldera-names' floor, as
//                      neutral-cluster is caldera-cluster's. Checked as caldera-names is (every
//                      call an identifiers one, no fallback logged); not a default scheduler.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

type scalePlan struct {
	Sizes      []scaleSize `json:"sizes"`
	Groups     []string    `json:"groups"`
	Schedulers []string    `json:"schedulers"`
	TimeboxSec float64     `json:"timeboxSeconds"`
	SettleSec  float64     `json:"settleSeconds"`
	// IdleCycles: cycles measured after the last bind, when each cycle is a session over the
	// bound cluster (the snapshot, the extender's OnSessionOpen) with nothing left to place.
	IdleCycles int `json:"idleCycles"`
	// GroupSizes: the sizes a group runs at, where it is not every size (the node group sends
	// one predicate and one prioritize body per task and node through any extender).
	GroupSizes map[string][]scaleSize `json:"groupSizes"`
	Out        string                 `json:"out"`
	// Capture: a directory the neutral server writes the last onSessionOpen body of each run to,
	// as <group>-<nodes>n-<pods>p.json (bench cluster --capture; real bodies for bench.decode).
	Capture string `json:"capture,omitempty"`
	// Mutants: plugins Caldera leaves out of what it serves, one at a time, while vc-scheduler
	// still asks it for them as configured (bench cluster --mutant; scale_node_test.go). In a
	// group hosting some of them, its "caldera" scheduler runs once per mutant the group hosts
	// (after the one in-tree run they share) instead of once with the whole configuration.
	Mutants []string `json:"mutants,omitempty"`
}

type scaleSize struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
}

// scaleRun is one scheduler on one group at one size: what bench/cluster.py tabulates.
type scaleRun struct {
	Nodes               int                `json:"nodes"`
	Pods                int                `json:"pods"`
	Group               string             `json:"group"`
	Scheduler           string             `json:"scheduler"`
	Mutant              string             `json:"mutant,omitempty"` // the plugin Caldera left out
	Bound               int                `json:"bound"`
	Completed           bool               `json:"completed"` // settled before the time box ended
	BindSeconds         float64            `json:"bindSeconds"`
	PodsPerSecond       float64            `json:"podsPerSecond"`
	Cycles              int                `json:"cycles"`
	CycleMs             []float64          `json:"cycleMs"`
	CycleP50Ms          float64            `json:"cycleP50Ms"`
	CycleP99Ms          float64            `json:"cycleP99Ms"`
	CycleMaxMs          float64            `json:"cycleMaxMs"`
	IdleCycleP50Ms      float64            `json:"idleCycleP50Ms"` // after the last bind
	IdleCycleP99Ms      float64            `json:"idleCycleP99Ms"`
	Overruns            int                `json:"overruns"`       // cycles longer than the 1 s period
	ExtenderOpenMs      float64            `json:"extenderOpenMs"` // mean extender OnSessionOpen
	ExtenderOpenCount   int                `json:"extenderOpenCount"`
	AllocateActionMs    float64            `json:"allocateActionMs"` // mean allocate action
	SchedulerPeakRSSMiB float64            `json:"schedulerPeakRssMiB"`
	ServerPeakRSSMiB    float64            `json:"serverPeakRssMiB"`
	ServerCPUSeconds    float64            `json:"serverCpuSeconds"`
	CalderaVerbSeconds  map[string]float64 `json:"calderaVerbSeconds"`
	CalderaVerbCalls    map[string]float64 `json:"calderaVerbCalls"`
	// CalderaAfterAnswerSeconds: per verb, the part of its time spent after the answer was
	// sent (onSessionOpen's build, onSessionClose's release), which Volcano does not wait for.
	CalderaAfterAnswerSeconds map[string]float64 `json:"calderaAfterAnswerSeconds"`
	BoundPerQueue             map[string]int     `json:"boundPerQueue"`
	BoundJobs                 []string           `json:"boundJobs"`
	// Placement: the node group's placement facts (scale_node_test.go), by name.
	Placement     map[string]int `json:"placement,omitempty"`
	SnapshotBytes float64        `json:"snapshotBytes"`
	// The evict group (scale_evict_test.go): the fill it starts from, then the preemptors.
	FillBound        int     `json:"fillBound"`
	FillSeconds      float64 `json:"fillSeconds"`
	Preemptors       int     `json:"preemptors"`
	Evicted          int     `json:"evicted"`
	ProtectedEvicted int     `json:"protectedEvicted"`
	// FillRunningSeconds: from the fill's creation until the preemptors came, every bound fill
	// pod then reported Running (the wait in runScale) but FillNotRunning of them.
	FillRunningSeconds float64 `json:"fillRunningSeconds"`
	// What a run short of a preemptor leaves to tell whose the shortfall is: the fill's pods
	// bound but not yet Running when the preemptors came (fillNotRunning, 0 unless the time box
	// ended the wait), and at the end the preemptors left pending with their nominated node and
	// the pods left terminating (evictLeftovers).
	FillNotRunning    int      `json:"fillNotRunning"`
	PendingPreemptors []string `json:"pendingPreemptors,omitempty"`
	Terminating       []string `json:"terminating,omitempty"`
	Error             string   `json:"error,omitempty"`
	// NeutralHeld: the namespace whose jobs the neutral server rejected (the job group's held
	// one, heldNamespace), and NeutralRejected how many jobEnqueueable calls it rejected: the
	// control holds what in-tree holds only if it bound what in-tree bound.
	NeutralHeld     string `json:"neutralHeld,omitempty"`
	NeutralRejected int64  `json:"neutralRejected,omitempty"`
	// caldera-names (scale_identifiers_test.go): the identifiers calls Caldera answered
	// (/debug/session), every verb call it answered 200 (caldera_responses_total), and
	// vc-scheduler's log lines saying it fell back to objects or that an extender call failed;
	// no identifiers call, fewer than answered, or any such line is the run's error.
	// neutral-names: the same from the neutral server's own counts (it must also have been asked
	// its capabilities), and NeutralVerbCalls its calls per verb (the batched predicate's
	// against per-node predicates).
	IdentifiersCalls int            `json:"identifiersCalls,omitempty"`
	AnsweredCalls    int            `json:"answeredCalls,omitempty"`
	FallbackLines    []string       `json:"fallbackLines,omitempty"`
	NeutralVerbCalls map[string]int `json:"neutralVerbCalls,omitempty"`
}

func TestScale(t *testing.T) {
	var plan scalePlan
	if err := json.Unmarshal([]byte(os.Getenv("CALDERA_SCALE_PLAN")), &plan); err != nil {
		t.Fatalf("CALDERA_SCALE_PLAN: %v (run it through python -m bench cluster)", err)
	}
	BuildBinaries(t, binDir())
	if planRunsNames(plan) {
		BuildIdentifiersScheduler(t, binDir())
	}
	var runs []scaleRun
	for _, size := range plan.Sizes {
		t.Run(fmt.Sprintf("%dn-%dp", size.Nodes, size.Pods), func(t *testing.T) {
			runs = append(runs, scaleSizeRuns(t, plan, size)...)
			write(t, plan.Out, runs) // after every size: a long run keeps what it measured
		})
	}
	write(t, plan.Out, runs)
}

func write(t *testing.T, path string, runs []scaleRun) {
	b, err := json.MarshalIndent(runs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cycleMeter reads vc-scheduler's scheduling-latency histogram: how many cycles ended since the
// last read, and their mean (one figure for each, as the histogram gives no more).
type cycleMeter struct{ sum, count float64 }

func (c *cycleMeter) read(m map[string]float64) (per float64, ended int) {
	sum, count := m["volcano_e2e_scheduling_latency_milliseconds_sum"], m["volcano_e2e_scheduling_latency_milliseconds_count"]
	if count <= c.count {
		return 0, 0
	}
	per, ended = (sum-c.sum)/(count-c.count), int(count-c.count)
	c.sum, c.count = sum, count
	return per, ended
}

// startScaleCluster starts an API-only cluster in a new directory named from prefix; stop stops
// it and removes the directory unless the test failed or CALDERA_SCALE_KEEP is set (its logs
// are then kept, and said where).
func startScaleCluster(t *testing.T, prefix string) (c *Cluster, stop func()) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	c = StartCluster(t, dir, binDir())
	return c, func() {
		c.Stop()
		if !t.Failed() && os.Getenv("CALDERA_SCALE_KEEP") == "" {
			os.RemoveAll(dir)
		} else {
			t.Logf("logs kept in %s", dir)
		}
	}
}

func scaleSizeRuns(t *testing.T, plan scalePlan, size scaleSize) []scaleRun {
	c, stop := startScaleCluster(t, "caldera-scale-")
	defer stop()
	bulk := c.bulkClients(t)
	start := time.Now()
	createScaleNodes(t, bulk, size.Nodes)
	t.Logf("%d nodes in %s", size.Nodes, time.Since(start).Round(time.Millisecond))
	var runs []scaleRun
	for _, group := range plan.Groups {
		if only, limited := plan.GroupSizes[group]; limited && !slices.Contains(only, size) {
			continue
		}
		for _, run := range scaleRunsOf(plan, group) {
			scheduler := run.scheduler
			r := runScale(t, c, bulk, plan, size, group, scheduler, run.mutant)
			t.Logf("%s/%s%s: bound %d/%d in %.1fs (completed %v), cycles %d p50 %.0f ms p99 %.0f ms,"+
				" overruns %d, extender open %.0f ms, server rss %.0f MiB cpu %.1fs%s",
				group, scheduler, map[bool]string{true: " without " + run.mutant, false: ""}[run.mutant != ""],
				r.Bound, r.Pods, r.BindSeconds, r.Completed, r.Cycles, r.CycleP50Ms,
				r.CycleP99Ms, r.Overruns, r.ExtenderOpenMs, r.ServerPeakRSSMiB, r.ServerCPUSeconds,
				map[bool]string{true: " ERROR " + r.Error, false: ""}[r.Error != ""])
			runs = append(runs, r)
		}
	}
	return runs
}

type scaleRunOf struct{ scheduler, mutant string }

// scaleRunsOf: the plan's schedulers for a group, its "caldera" run once per mutant the group's
// Caldera configuration hosts (none hosted: once, whole).
func scaleRunsOf(plan scalePlan, group string) []scaleRunOf {
	var hosted []string
	for _, m := range plan.Mutants {
		if strings.Contains(groupOf(group).caldera, "- name: "+m+"\n") {
			hosted = append(hosted, m)
		}
	}
	var out []scaleRunOf
	for _, scheduler := range plan.Schedulers {
		if scheduler != "caldera" || len(hosted) == 0 {
			out = append(out, scaleRunOf{scheduler: scheduler})
			continue
		}
		for _, m := range hosted {
			out = append(out, scaleRunOf{scheduler: scheduler, mutant: m})
		}
	}
	return out
}

// bulk: clients with a high rate limit for creating and deleting thousands of objects.
type bulk struct {
	kube kubernetes.Interface
	vc   vcclient.Interface
}

func (c *Cluster) bulkClients(t *testing.T) bulk {
	cfg := *c.Rest
	cfg.QPS, cfg.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := vcclient.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return bulk{kube, vc}
}

// parallel runs f(i) for i in [0, n) on a few workers and fails the test on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make(chan error, 1)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

const scaleNodeGroups = 4

func createScaleNodes(t *testing.T, b bulk, n int) {
	parallel(t, n, func(i int) error {
		return createNode(context.Background(), b.kube, NodeSpec{
			Name: fmt.Sprintf("scale-%04d", i), CPU: "32", Memory: "128Gi",
			Labels: map[string]string{"volcano.sh/nodegroup-name": fmt.Sprintf("ng%d", i%scaleNodeGroups)},
		})
	})
}

// --- the groups --------------------------------------------------------------------------------

// scaleGroup is a plugin group: its in-tree conf, Caldera's configuration of the same plugins,
// and its workload.
type scaleGroup struct {
	intree  string
	caldera string
	queues  []*vcsched.Queue
}

const scaleNamespaces = 10

// workspace is a run's namespace prefix: its namespaces are prefix0 to prefix9.
type workspace string

func (w workspace) ns(i int) string { return fmt.Sprintf("%s%d", string(w), i) }

func groupOf(name string) scaleGroup {
	switch name {
	case "job":
		return scaleGroup{
			intree: `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
  - name: overcommit
  - name: resourcequota
  - name: predicates
  - name: nodeorder
`,
			caldera: `volcanoVersion: "1.14.1"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
  - name: overcommit
  - name: resourcequota
`,
		}
	case "evict":
		return evictGroup()
	case "node":
		return nodeGroup()
	}
	panic("unknown plugin group " + name)
}

// createWorkload: jobs of 10 pods of 1 CPU (gang: minMember 10) in ten namespaces; the job group
// adds a CPU ResourceQuota per namespace that keeps the last namespace's jobs waiting, a
// priority class on every fifth job and an sla-waiting-time on every seventh; the node group
// spreads the jobs over its queues, half of them with task-topology affinity (nodeGroupJob).
func createWorkload(t *testing.T, c *Cluster, b bulk, w workspace, group string, g scaleGroup, pods int) {
	ctx := context.Background()
	for i := 0; i < scaleNamespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns(i)}}
		if _, err := b.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, q := range g.queues {
		if _, err := b.vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if group == "evict" {
		createEvictFill(t, c, b, w, pods)
		return
	}
	jobs := pods / 10
	perNS := (jobs + scaleNamespaces - 1) / scaleNamespaces
	if group == "job" {
		c.EnsurePriorityClass(t, "scale-high", 1000)
		// The quotas are created after the pods (below): kube-apiserver's ResourceQuota
		// admission would refuse the pods beyond them, while the point is that Volcano's
		// resourcequota plugin keeps their jobs from being enqueued. No quota controller runs,
		// so `used` stays 0 and a quota only binds within one session: the last namespace's
		// quota (5 CPU) is below one job's minResources (10 CPU), so all its jobs wait,
		// session after session; the others have room for all their jobs.
		defer func() {
			for i := 0; i < scaleNamespaces; i++ {
				hard := fmt.Sprint(perNS * 10)
				if w.ns(i) == heldNamespace(w, group) {
					hard = "5"
				}
				setQuota(t, b, w.ns(i), hard)
			}
		}()
	}
	parallel(t, jobs, func(j int) error {
		job := JobSpec{
			Name: fmt.Sprintf("job-%05d", j), Pods: 10, Request: Res("1", "1Gi"), // minResources 10 CPU
			PodLabels: map[string]string{"volcano.sh/task-spec": "worker"}, PGAnnotations: map[string]string{},
		}
		if group == "job" && j%5 == 0 {
			job.PriorityClass = "scale-high"
		}
		if group == "job" && j%7 == 0 {
			job.PGAnnotations["volcano.sh/sla-waiting-time"] = "2s"
		}
		if group == "node" {
			nodeGroupJob(&job, g, j)
		}
		return createJob(ctx, b.kube, b.vc, w.ns(j%scaleNamespaces), job)
	})
}

// heldNamespace is the job group's namespace whose quota (5 CPU) keeps all its jobs waiting, ""
// in the other groups: the neutral server rejects its jobs as in-tree's resourcequota does.
func heldNamespace(w workspace, group string) string {
	if group != "job" {
		return ""
	}
	return w.ns(scaleNamespaces - 1)
}

func setQuota(t *testing.T, b bulk, ns, cpu string) {
	ctx := context.Background()
	hard := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	_ = b.kube.CoreV1().ResourceQuotas(ns).Delete(ctx, "cpu", metav1.DeleteOptions{})
	rq, err := b.kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rq.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}}
	if _, err := b.kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, rq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteWorkload removes the pods and PodGroups of every namespace and waits until no pod is left.
func deleteWorkload(t *testing.T, b bulk, w workspace) {
	ctx := context.Background()
	zero := int64(0)
	for i := 0; i < scaleNamespaces; i++ {
		ns := w.ns(i)
		_ = b.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = b.vc.SchedulingV1beta1().PodGroups(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = b.kube.CoreV1().ResourceQuotas(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = b.kube.PolicyV1().PodDisruptionBudgets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	if err := waitFor(5*time.Minute, func() (bool, error) {
		left := 0
		for i := 0; i < scaleNamespaces; i++ {
			l, err := b.kube.CoreV1().Pods(w.ns(i)).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return false, err
			}
			left += len(l.Items)
		}
		return left == 0, fmt.Errorf("%d+ pods left", left)
	}); err != nil {
		t.Fatal(err)
	}
}

// --- one run -----------------------------------------------------------------------------------

// scaleServer is what a run's vc-scheduler talks to: nothing (in-tree), Caldera, or the neutral
// server; conf is the volcano-scheduler.conf it runs with, binary the vc-scheduler of BinDir
// that runs it (the patched one for caldera-names and neutral-names).
type scaleServer struct {
	conf    string
	binary  string
	caldera *Caldera
	neutral *neutralServer
}

// scaleScheduler is what a scheduler of the plan runs: the in-tree conf, or the conf `caldera
// volcano-config --merge` makes of it for Caldera (cluster: with `sessionState: cluster`) or for
// the neutral server (neutral), from the patched vc-scheduler with `--bodies identifiers` (names).
type scaleScheduler struct{ intree, cluster, neutral, names bool }

// scaleSchedulers: every scheduler the plan may name, one row each (the header comment says
// what each measures).
var scaleSchedulers = map[string]scaleScheduler{
	"intree":          {intree: true},
	"caldera":         {},
	"caldera-cluster": {cluster: true},
	"neutral":         {neutral: true},
	"neutral-cluster": {cluster: true, neutral: true},
	"caldera-names":   {cluster: true, names: true},
	"neutral-names":   {cluster: true, neutral: true, names: true},
}

// serverFor starts the scheduler's server and makes its conf: the group's in-tree conf, or the
// conf `caldera volcano-config --merge` makes of it (for the neutral server with its URL, from a
// Caldera started only for that). names: the conf of `volcano-config --bodies identifiers
// --merge` (which needs cluster mode's Caldera configuration), the patched vc-scheduler, and the
// neutral server in identifiers mode.
func serverFor(t *testing.T, c *Cluster, g scaleGroup, name, scheduler, mutant, capture, hold string) scaleServer {
	kind, known := scaleSchedulers[scheduler]
	if !known {
		t.Fatalf("unknown scheduler %q", scheduler)
	}
	binary, bodies := "vc-scheduler", ""
	if kind.intree {
		return scaleServer{conf: g.intree, binary: binary}
	}
	if kind.names {
		binary, bodies = identifiersScheduler, identifiersBodies
	}
	if kind.cluster {
		// The watched cluster is the benchmark's own API server; Caldera's /readyz (which
		// StartCaldera waits for) says ready only once its watches have synced.
		g.caldera = withSessionState(g.caldera, "cluster")
	}
	cfg := c.writeCalderaConfig(t, name, g.caldera)
	served := cfg
	if scheduler == "caldera" && mutant != "" {
		served = c.writeCalderaConfig(t, name+"-mutant", withoutPlugin(t, g.caldera, mutant))
		t.Logf("%s: Caldera serves the conf without %s (the mutant), vc-scheduler asks it for all", name, mutant)
	}
	cal := c.StartCaldera(t, name, served)
	s := scaleServer{caldera: cal, binary: binary}
	url := cal.URL
	if kind.neutral {
		defer cal.Stop() // only its merged conf is needed
		if kind.names {
			capture = "" // the roster: no snapshot body to capture
		}
		s.caldera, s.neutral = nil, startNeutral(t, capture, hold, kind.names)
		url = s.neutral.url
	}
	intree := filepath.Join(c.Dir, name+"-intree.conf")
	if err := os.WriteFile(intree, []byte(g.intree), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"volcano-config", "--config", cfg, "--url", url, "--http-timeout", "5s"}
	if bodies != "" {
		args = append(args, "--bodies", bodies)
	}
	out, err := exec.Command(calderaBin(t), append(args, "--merge", intree)...).Output()
	if err != nil {
		t.Fatalf("caldera %s: %v", strings.Join(args, " "), err)
	}
	s.conf = string(out)
	if kind.neutral && kind.names && strings.Contains(s.conf, "extender.batchPredicateVerb:") &&
		!strings.Contains(s.conf, "extender.batchPredicateVerb: "+neutralBatchPredicateVerb+"\n") {
		t.Fatalf("%s: the conf's batchPredicateVerb is not %q, which the neutral server answers:\n%s",
			name, neutralBatchPredicateVerb, s.conf)
	}
	return s
}

func runScale(t *testing.T, c *Cluster, b bulk, plan scalePlan, size scaleSize, group, scheduler, mutant string) scaleRun {
	r := scaleRun{Nodes: size.Nodes, Pods: size.Pods, Group: group, Scheduler: scheduler, Mutant: mutant}
	g := groupOf(group)
	name := fmt.Sprintf("%s-%s-%d", group, scheduler, size.Nodes)
	if mutant != "" {
		name += "-without-" + mutant
	}
	capture := ""
	if plan.Capture != "" {
		capture = filepath.Join(plan.Capture, fmt.Sprintf("%s-%dn-%dp.json", group, size.Nodes, size.Pods))
	}
	// Each run has namespaces of its own: with the same names as a previous run's (deleted)
	// jobs, Volcano v1.14.1's cache logged "Failed to clone subJob" and the second of two runs
	// bound 709 or 810 of the 900 pods the first bound, whichever scheduler ran second.
	// (So each mutant's run has its own too.)
	w := workspace(fmt.Sprintf("scale-%s-%s-", group, scheduler))
	if mutant != "" {
		w = workspace(fmt.Sprintf("scale-%s-%s-%s-", group, scheduler, mutant))
	}
	server := serverFor(t, c, g, name, scheduler, mutant, capture, heldNamespace(w, group))
	if server.caldera != nil {
		defer server.caldera.Stop()
	}
	start := time.Now()
	// The node group's workload arrives once vc-scheduler has its nodes (below).
	late := group == "node"
	if !late {
		createWorkload(t, c, b, w, group, g, size.Pods)
		t.Logf("%s: workload of %d pods created in %s", name, size.Pods, time.Since(start).Round(time.Millisecond))
	}
	defer deleteWorkload(t, b, w)

	bound := newBoundCounter(c, w)
	defer bound.stop()
	serverCPU0 := 0.0
	if server.caldera != nil {
		serverCPU0 = procCPUSeconds(server.caldera.proc)
	}
	began := time.Now()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// CALDERA_SCALE_SCHEDULER_V: vc-scheduler's log level (default 1; 3 logs each preemption
	// and allocation, with CALDERA_SCALE_KEEP to keep the log).
	verbosity := "1"
	if v := os.Getenv("CALDERA_SCALE_SCHEDULER_V"); v != "" {
		verbosity = v
	}
	sched := c.startScheduler(t, name, server.conf, server.binary, "--listen-address", metricsAddr,
		"--enable-metrics", "--kube-api-qps", "2000", "--kube-api-burst", "4000",
		"--minimum-feasible-nodes", "100", "--percentage-nodes-to-find", "100", "-v", verbosity)
	defer sched.stop()
	metricsURL := "http://" + metricsAddr + "/metrics"

	var cycles, idle []float64
	var meter cycleMeter
	settled := false
	timebox := time.Duration(plan.TimeboxSec * float64(time.Second))
	settle := time.Duration(plan.SettleSec * float64(time.Second))
	// poll reads vc-scheduler's metrics: the cycles since the last poll (each the mean of the
	// ones that ended in between) and the extender's and allocate's means so far.
	poll := func() bool {
		if !sched.running() {
			r.Error = "vc-scheduler exited: " + tail(sched.log, 5)
			return false
		}
		m, err := scrape(metricsURL)
		if err != nil {
			return true
		}
		per, ended := meter.read(m)
		for k := 0; k < ended; k++ {
			cycles = append(cycles, per)
			if settled {
				idle = append(idle, per)
			}
		}
		r.ExtenderOpenMs = m[`volcano_plugin_scheduling_latency_milliseconds_sum{OnSession="OnSessionOpen",plugin="extender"}`]
		r.ExtenderOpenCount = int(m[`volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="extender"}`])
		if n := m[`volcano_action_scheduling_latency_milliseconds_count{action="allocate"}`]; n > 0 {
			r.AllocateActionMs = m[`volcano_action_scheduling_latency_milliseconds_sum{action="allocate"}`] / n
		}
		return true
	}
	if late {
		// vc-scheduler's cache adds nodes through a workqueue whose workers start only once its
		// informers have synced, so its first sessions may see part of the nodes: once in-tree
		// at 20 nodes the spreading queues' pods crowded onto the nodes synced first (a node
		// group's spread of 13 pods where every other run had 0). The placement facts hold for
		// a scheduler that sees every node, so the workload arrives after two sessions (the
		// node workers have had a scheduling period by then), and the run measures from it.
		for meter.count < 2 && time.Since(began) < timebox && poll() {
			time.Sleep(100 * time.Millisecond)
		}
		start := time.Now()
		createWorkload(t, c, b, w, group, g, size.Pods)
		t.Logf("%s: workload of %d pods created in %s, after %.0f sessions", name, size.Pods,
			time.Since(start).Round(time.Millisecond), meter.count)
		cycles, began = nil, start
	}
	target, want := bound.count, size.Pods
	if group == "evict" {
		// The fill first (not measured), then the preemptors: the run measures from their arrival.
		fillStart, last, changed := time.Now(), 0, time.Now()
		for time.Since(fillStart) < timebox && poll() {
			time.Sleep(200 * time.Millisecond)
			if n := bound.count(); n != last {
				last, changed = n, time.Now()
			}
			if last == size.Pods || time.Since(changed) >= settle {
				break
			}
		}
		r.FillBound, r.FillSeconds = last, changed.Sub(fillStart).Seconds()
		t.Logf("%s: fill of %d pods: %d bound in %.1fs", name, size.Pods, last, r.FillSeconds)
		// Then until the fake kubelet has reported every bound fill pod Running: Volcano's
		// evictor writes the victim's status with the version its cache holds
		// (cache.go, defaultEvictor.Evict), so a victim whose Running status was still on
		// its way failed with a conflict ("Failed to update pod ... the object has been
		// modified"), was never deleted, and its preemptor, already nominated to that node,
		// stayed pending for good, in-tree alike. Under load (two busy loops on the two cores)
		// in-tree bound 100, 98 and 81 of 100 preemptors so, 340 to 437 fill pods not yet
		// Running when the preemptors came; the vc-scheduler log had the conflict for a
		// victim on the pending preemptors' node. A cluster whose kubelets had reported would
		// not race so: the workload, not Volcano, was unsettled.
		for time.Since(fillStart) < timebox && poll() {
			if fillNotRunning(t, b, w) == 0 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		// The preemptors arrive two sessions after that: a victim still Binding (or not yet
		// seen Running) in vc-scheduler's cache when the preemptors came was chosen, never
		// evicted, and its preemptor, nominated to that node, stayed pending for good
		// ("nominated node is already schedulable"), in-tree and through Caldera alike (19 of
		// 20 bound, by chance; seen in vc-scheduler's log at -v 4).
		for settledAt := meter.count; meter.count < settledAt+2 && time.Since(fillStart) < timebox && poll(); {
			time.Sleep(100 * time.Millisecond)
		}
		cycles = nil
		r.FillNotRunning = fillNotRunning(t, b, w)
		r.FillRunningSeconds = time.Since(fillStart).Seconds()
		t.Logf("%s: fill Running (%d not) after %.1fs", name, r.FillNotRunning, r.FillRunningSeconds)
		if r.FillNotRunning > 0 {
			// Not a measurement of the same workload: the preemptors would race the fake
			// kubelet again (above), so the run errs instead of being compared.
			r.Error = fmt.Sprintf("the fill had not settled when the preemptors came: %d bound pods"+
				" not Running after %.0fs (the time box ended the wait)", r.FillNotRunning, r.FillRunningSeconds)
		}
		r.Preemptors = size.Pods / 10
		createPreemptors(t, b, w, r.Preemptors)
		target, want, began = bound.preemptors, r.Preemptors, time.Now()
	}
	lastBound, lastChange := 0, began
	if group == "evict" {
		// Volcano's preempt action can leave the last preemptor pending for more than ten
		// seconds before it evicts for it (seen once in-tree at 100 nodes: 99 of 100 bound at
		// the 10 s settle, all 100 in three reruns): a longer wait, so that a slow tail is not
		// taken for a decision.
		settle *= 3
	}
	for poll() {
		time.Sleep(200 * time.Millisecond)
		n := target()
		if n != lastBound {
			lastBound, lastChange = n, time.Now()
		}
		if !settled && (n == want || time.Since(lastChange) >= settle) {
			settled, r.Completed = true, true
		}
		if settled && len(idle) >= plan.IdleCycles {
			break
		}
		if time.Since(began) >= timebox {
			break
		}
	}
	if group == "evict" {
		r.Evicted, r.ProtectedEvicted = evictions(c, w, began)
		r.PendingPreemptors, r.Terminating = evictLeftovers(t, b, w)
		if len(r.PendingPreemptors) > 0 {
			t.Logf("%s: preemptors left pending: %s; pods left terminating: %v (fill pods not Running"+
				" when the preemptors came: %d)", name, strings.Join(r.PendingPreemptors, ", "), r.Terminating, r.FillNotRunning)
		}
	}
	r.Bound = lastBound
	r.BindSeconds = lastChange.Sub(began).Seconds()
	if r.BindSeconds > 0 {
		r.PodsPerSecond = float64(r.Bound) / r.BindSeconds
	}
	if r.ExtenderOpenCount > 0 {
		r.ExtenderOpenMs /= float64(r.ExtenderOpenCount)
	}
	r.Cycles = len(cycles)
	r.CycleMs = cycles
	r.CycleP50Ms, r.CycleP99Ms, r.CycleMaxMs = quantile(cycles, 0.5), quantile(cycles, 0.99), quantile(cycles, 1)
	r.IdleCycleP50Ms, r.IdleCycleP99Ms = quantile(idle, 0.5), quantile(idle, 0.99)
	for _, ms := range cycles {
		if ms > 1000 {
			r.Overruns++
		}
	}
	r.SchedulerPeakRSSMiB = peakRSSMiB(sched)
	if server.caldera != nil {
		calderaFigures(&r, server.caldera, serverCPU0)
	}
	if server.neutral != nil {
		r.SnapshotBytes = server.neutral.snapshotBytes()
		r.NeutralHeld, r.NeutralRejected = server.neutral.hold, server.neutral.rejected.Load()
	}
	sched.stop()
	if scaleSchedulers[scheduler].names {
		if server.neutral != nil {
			calls, answered, verbs, err := server.neutral.identifiersCounts()
			r.NeutralVerbCalls = verbs
			identifiersFigures(&r, "the neutral server", calls, answered, err, sched.log)
			t.Logf("%s: the neutral server's calls per verb: %v", name, verbs)
		} else {
			calls, answered, err := calderaIdentifiers(server.caldera)
			identifiersFigures(&r, "Caldera", calls, answered, err, sched.log)
		}
		t.Logf("%s: %d identifiers calls of %d answered, %d fallback lines in vc-scheduler's log", name,
			r.IdentifiersCalls, r.AnsweredCalls, len(r.FallbackLines))
	}
	r.BoundPerQueue, r.BoundJobs = decisions(t, b, w)
	if group == "node" {
		r.Placement = nodePlacement(t, b, w, g)
	}
	return r
}
