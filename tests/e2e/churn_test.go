//go:build scale

package e2e

// Real churn at scale (issue 50, item 3), driven by `python -m bench churn` (bench/churn.py),
// which passes its plan in CALDERA_CHURN_PLAN (JSON) and reads the results from the file it names.
//
// The shape follows Volcano's own benchmark (its benchmark/ folder since v1.15: KWOK nodes of 32
// CPU, KWOK's stage-fast marking a bound pod Running at once, gang jobs of sleeping pods, the
// scheduler's e2e_scheduling_latency and the jobs' time to schedule read from the cluster), on
// the end-to-end harness instead of kind: one API-only cluster (etcd, kube-apiserver), N Node
// objects (createScaleNodes: 32 CPU, 128 GiB), the harness's fake kubelet marking a bound pod
// Running at once (stage-fast's pod-ready), and this driver doing the rest of a kubelet's and a
// job controller's part:
//
//   - arrivals: first a fill at t=0 of jobs totalling the plan's pods (the live population the
//     cluster holds at steady state), then Poisson job arrivals at rate pods / (mean run × mean
//     job size) jobs a second, so that by Little's law the live pods stay near the plan's pods,
//     about 80% of the nodes' CPU (pods of 2.5 CPU: 12 fit a 32-CPU node, 10 per node live);
//   - job sizes: 1, 2, 4 or 8 pods with equal probability (mean 3.75), a gang (minMember the
//     size, minResources the size × 2.5 CPU and 4 GiB), spread over ten namespaces, queue default;
//   - run time: per job, uniform on [minRun, maxRun] seconds from the moment a pod is Running
//     (the fill's jobs, already under way at t=0: uniform on (0, maxRun], the residual life);
//   - completion: each pod Succeeded at its run time, or with probability failRatio Failed at a
//     uniform 10-100% of it (phase and Ready=False through the status subresource, as the kubelet
//     reports); once every pod of a job is Succeeded or Failed, its pods and PodGroup are deleted
//     keepSeconds later, as a job controller's TTL would;
//   - everything drawn from one PCG generator seeded with the plan's seed, in job order, so every
//     mode gets the same jobs at the same offsets with the same run times and failures.
//
// Per mode, one after another on the same nodes, each with namespaces of its own: vc-scheduler
// v1.14.1 with the job group's plugins (scale_test.go) in-tree ("intree"), hosted by Caldera in
// `sessionState: compare` ("compare": Caldera answers from Volcano's snapshot and compares it
// with the state it derives each session), and hosted by Caldera in `sessionState: cluster`
// ("cluster"). A mode's window opens once the fill is Running (or after fillTimeout) and lasts
// its window seconds; measured over it: each cycle (vc-scheduler's e2e_scheduling_latency, as
// TestScale reads it), each arriving job's time to start (its creation to its last pod Running,
// as seen by this driver's watch), the live and pending pods, and in compare mode the sessions
// compared and every difference by kind and session, in flight or not (compare_churn_test.go).

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// churnPlan is what bench/churn.py passes in CALDERA_CHURN_PLAN.
type churnPlan struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"` // the live pods at steady state (the fill)
	// Modes in order, with each one's window in seconds.
	Modes          []string           `json:"modes"`
	Windows        map[string]float64 `json:"windowSeconds"`
	Seed           uint64             `json:"seed"`
	MinRunSeconds  float64            `json:"minRunSeconds"`
	MaxRunSeconds  float64            `json:"maxRunSeconds"`
	FailRatio      float64            `json:"failRatio"`
	KeepSeconds    float64            `json:"keepSeconds"`
	FillTimeoutSec float64            `json:"fillTimeoutSeconds"`
	// FillResidual: how the fill's remaining run times are drawn: "equilibrium", the residual
	// life of a run uniform on [minRun, maxRun] (density P(run > x) / mean run), so the fill
	// ends as a steady state would; "uniform" (the default): uniform on (0, maxRun].
	FillResidual string `json:"fillResidual"`
	// ArrivalsFrom: "window" starts the Poisson arrivals once the fill runs; "" (the first
	// runs') with the fill's creation.
	ArrivalsFrom string `json:"arrivalsFrom"`
	Out          string `json:"out"`
}

var churnJobSizes = []int{1, 2, 4, 8}

const (
	churnPodCPU    = "2500m"
	churnPodMemory = "4Gi"
)

func (p churnPlan) meanRun() float64 { return (p.MinRunSeconds + p.MaxRunSeconds) / 2 }

func meanJobSize() float64 {
	sum := 0
	for _, s := range churnJobSizes {
		sum += s
	}
	return float64(sum) / float64(len(churnJobSizes))
}

// jobRate is the Poisson arrival rate in jobs a second: by Little's law, pods live = arrival
// rate in pods × mean run, so the plan's pods stay live on average.
func (p churnPlan) jobRate() float64 {
	return float64(p.Pods) / (p.meanRun() * meanJobSize())
}

// churnJob is one job of the schedule: when it arrives, its size, run time and which pods fail.
type churnJob struct {
	Name    string
	At      time.Duration // after the arrivals started
	Size    int
	Run     time.Duration
	Fill    bool
	FailAt  []float64 // per pod: 0 succeeds at Run, else fails at that fraction of Run
	ns      string
	created time.Time
	running map[string]bool
	started time.Time // its last pod seen Running
	ended   map[string]bool
	doneAt  time.Time
	deleted bool
	failed  int
}

// churnSchedule draws the jobs in order from the seed: the same for every mode.
type churnSchedule struct {
	plan churnPlan
	rng  *rand.Rand
	at   time.Duration
	n    int
	fill int // pods of the fill still to draw
}

func newChurnSchedule(plan churnPlan) *churnSchedule {
	return &churnSchedule{plan: plan, rng: rand.New(rand.NewPCG(plan.Seed, plan.Seed^0x9e3779b97f4a7c15)), fill: plan.Pods}
}

func (s *churnSchedule) next() *churnJob {
	j := &churnJob{Name: fmt.Sprintf("j%06d", s.n), Size: churnJobSizes[s.rng.IntN(len(churnJobSizes))]}
	s.n++
	p := s.plan
	if s.fill > 0 {
		j.Fill = true
		s.fill -= j.Size
		// Already under way at t=0: the rest of its run.
		j.Run = time.Duration(s.residual() * float64(time.Second))
	} else {
		s.at += time.Duration(s.rng.ExpFloat64() / p.jobRate() * float64(time.Second))
		j.At = s.at
		j.Run = time.Duration((p.MinRunSeconds + s.rng.Float64()*(p.MaxRunSeconds-p.MinRunSeconds)) * float64(time.Second))
	}
	j.FailAt = make([]float64, j.Size)
	for i := range j.FailAt {
		if s.rng.Float64() < p.FailRatio {
			j.FailAt[i] = 0.1 + 0.9*s.rng.Float64()
		}
	}
	return j
}

// residual draws a fill job's remaining run in seconds (churnPlan.FillResidual).
func (s *churnSchedule) residual() float64 {
	p := s.plan
	if p.FillResidual != "equilibrium" {
		return (1 - s.rng.Float64()) * p.MaxRunSeconds
	}
	for { // rejection: x uniform on (0, maxRun], kept with probability P(run > x)
		x := (1 - s.rng.Float64()) * p.MaxRunSeconds
		keep := 1.0
		if x > p.MinRunSeconds {
			keep = (p.MaxRunSeconds - x) / (p.MaxRunSeconds - p.MinRunSeconds)
		}
		if s.rng.Float64() < keep {
			return x
		}
	}
}

// churnRun is one mode's figures over its window: what bench/churn.py tabulates.
type churnRun struct {
	Mode             string  `json:"mode"`
	Nodes            int     `json:"nodes"`
	Pods             int     `json:"pods"`
	WindowSeconds    float64 `json:"windowSeconds"`
	FillSeconds      float64 `json:"fillSeconds"` // the fill Running (the window opens then)
	FillComplete     bool    `json:"fillComplete"`
	JobsArrived      int     `json:"jobsArrived"` // in the window
	PodsArrived      int     `json:"podsArrived"`
	JobsStarted      int     `json:"jobsStarted"` // of those arrived in the window
	PodsSucceeded    int     `json:"podsSucceeded"`
	PodsFailed       int     `json:"podsFailed"`
	JobsDeleted      int     `json:"jobsDeleted"`
	StartP50Seconds  float64 `json:"startP50Seconds"`
	StartP90Seconds  float64 `json:"startP90Seconds"`
	StartP99Seconds  float64 `json:"startP99Seconds"`
	StartMaxSeconds  float64 `json:"startMaxSeconds"`
	StartMeanSeconds float64 `json:"startMeanSeconds"`
	// Jobs arrived in the window and not started at its end (their wait is not in the quantiles).
	Unstarted     int       `json:"unstarted"`
	LiveMean      float64   `json:"livePodsMean"` // pods not finished, sampled every 5 s
	RunningMean   float64   `json:"runningPodsMean"`
	PendingMean   float64   `json:"pendingPodsMean"` // without a node
	Cycles        int       `json:"cycles"`
	CycleMs       []float64 `json:"cycleMs"`
	CycleP50Ms    float64   `json:"cycleP50Ms"`
	CycleP99Ms    float64   `json:"cycleP99Ms"`
	CycleMaxMs    float64   `json:"cycleMaxMs"`
	Overruns      int       `json:"overruns"`
	SchedulerRSS  float64   `json:"schedulerPeakRssMiB"`
	CalderaRSS    float64   `json:"calderaPeakRssMiB"`
	CalderaCPU    float64   `json:"calderaCpuSeconds"`
	StatusErrors  int64     `json:"statusErrors"` // status updates or deletes that failed for good
	LoadAvgBefore float64   `json:"loadAvgBefore"`
	LoadAvgAfter  float64   `json:"loadAvgAfter"`
	// Compare mode: sessions by outcome, those compared with a difference, the differences
	// per compared session (every compared session, none counts 0), and per kind.
	Sessions                map[string]float64   `json:"sessions,omitempty"`
	SessionsWithDifferences int                  `json:"sessionsWithDifferences"`
	DifferencesPerSession   map[string]float64   `json:"differencesPerSession,omitempty"` // p50, p99, max
	Kinds                   map[string]churnKind `json:"kinds,omitempty"`
	// NotInFlightExamples: Caldera's log lines of the differences not in flight, if any.
	NotInFlightExamples []string `json:"notInFlightExamples,omitempty"`
	Error               string   `json:"error,omitempty"`
}

func TestChurn(t *testing.T) {
	var plan churnPlan
	if err := json.Unmarshal([]byte(os.Getenv("CALDERA_CHURN_PLAN")), &plan); err != nil {
		t.Fatalf("CALDERA_CHURN_PLAN: %v (run it through python -m bench churn)", err)
	}
	BuildBinaries(t, binDir())
	c, stop := startScaleCluster(t, "caldera-churn-")
	defer stop()
	b := c.bulkClients(t)
	start := time.Now()
	createScaleNodes(t, b, plan.Nodes)
	t.Logf("%d nodes in %s; jobs arrive at %.3f/s (mean size %.2f, run %.0f-%.0f s)", plan.Nodes,
		time.Since(start).Round(time.Millisecond), plan.jobRate(), meanJobSize(), plan.MinRunSeconds, plan.MaxRunSeconds)
	var runs []churnRun
	for _, mode := range plan.Modes {
		r := runChurn(t, c, b, plan, mode)
		t.Logf("%s: window %.0fs, %d jobs arrived (%d pods), %d started, start p50 %.1fs p99 %.1fs, cycles %d"+
			" p50 %.0f ms p99 %.0f ms, live %.0f (pending %.0f), sessions %v with differences %d%s",
			mode, r.WindowSeconds, r.JobsArrived, r.PodsArrived, r.JobsStarted, r.StartP50Seconds,
			r.StartP99Seconds, r.Cycles, r.CycleP50Ms, r.CycleP99Ms, r.LiveMean, r.PendingMean, r.Sessions,
			r.SessionsWithDifferences, map[bool]string{true: " ERROR " + r.Error, false: ""}[r.Error != ""])
		runs = append(runs, r)
		b, err := json.MarshalIndent(runs, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(plan.Out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// churnEnd is a pod's end: when it is to be marked Succeeded or Failed.
type churnEnd struct {
	at     time.Time
	ns     string
	pod    string
	job    *churnJob
	failed bool
}

type churnEnds []churnEnd

func (h churnEnds) Len() int           { return len(h) }
func (h churnEnds) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h churnEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *churnEnds) Push(x any)        { *h = append(*h, x.(churnEnd)) }
func (h *churnEnds) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// churnDriver is the kubelet's and the job controller's part for one mode's namespaces.
type churnDriver struct {
	plan      churnPlan
	w         workspace
	b         bulk
	mu        sync.Mutex
	jobs      map[string]*churnJob // ns/name
	ends      churnEnds
	work      chan func()
	errors    atomic.Int64
	succeeded atomic.Int64
	failed    atomic.Int64
	deleted   atomic.Int64
	store     cache.Store
	stop      chan struct{}
	wg        sync.WaitGroup
}

func newChurnDriver(t *testing.T, c *Cluster, b bulk, plan churnPlan, w workspace) *churnDriver {
	d := &churnDriver{plan: plan, w: w, b: b, jobs: map[string]*churnJob{}, work: make(chan func(), 1<<20),
		stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(c.Kube, 0)
	inf := factory.Core().V1().Pods().Informer()
	d.store = inf.GetStore()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: d.observe, UpdateFunc: func(_, obj any) { d.observe(obj) },
	})
	factory.Start(d.stop)
	factory.WaitForCacheSync(d.stop)
	for i := 0; i < 24; i++ {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for {
				select {
				case f := <-d.work:
					f()
				case <-d.stop:
					return
				}
			}
		}()
	}
	return d
}

func (d *churnDriver) close() {
	close(d.stop)
	d.wg.Wait()
}

// observe follows a pod of the mode's namespaces: Running (the fake kubelet's) schedules its
// end; Succeeded or Failed (this driver's) counts towards its job's completion.
func (d *churnDriver) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !strings.HasPrefix(p.Namespace, string(d.w)) {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[p.Namespace+"/"+p.Labels["job"]]
	if j == nil {
		return
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		if j.running[p.Name] {
			return
		}
		j.running[p.Name] = true
		if len(j.running) == j.Size {
			j.started = now
		}
		index, _ := strconv.Atoi(p.Name[strings.LastIndexByte(p.Name, '-')+1:])
		end := churnEnd{at: now.Add(j.Run), ns: p.Namespace, pod: p.Name, job: j}
		if f := j.FailAt[index]; f > 0 {
			end.at, end.failed = now.Add(time.Duration(f*float64(j.Run))), true
		}
		heap.Push(&d.ends, end)
	case corev1.PodSucceeded, corev1.PodFailed:
		if j.ended[p.Name] {
			return
		}
		j.ended[p.Name] = true
		if len(j.ended) == j.Size {
			j.doneAt = now
		}
	}
}

// create makes the job's PodGroup and pods (in a worker).
func (d *churnDriver) create(j *churnJob, index int) {
	j.ns = d.w.ns(index % scaleNamespaces)
	j.running, j.ended = map[string]bool{}, map[string]bool{}
	d.mu.Lock()
	d.jobs[j.ns+"/"+j.Name] = j
	j.created = time.Now()
	d.mu.Unlock()
	d.work <- func() {
		err := createJob(context.Background(), d.b.kube, d.b.vc, j.ns, JobSpec{
			Name: j.Name, Pods: j.Size, Request: Res(churnPodCPU, churnPodMemory),
		})
		if err != nil {
			d.errors.Add(1)
		}
	}
}

// finish marks a pod Succeeded or Failed through the status subresource, as its kubelet would.
func (d *churnDriver) finish(e churnEnd) {
	ctx := context.Background()
	for attempt := 0; attempt < 5; attempt++ {
		var pod *corev1.Pod
		if obj, ok, _ := d.store.GetByKey(e.ns + "/" + e.pod); ok && attempt == 0 {
			pod = obj.(*corev1.Pod).DeepCopy()
		} else {
			got, err := d.b.kube.CoreV1().Pods(e.ns).Get(ctx, e.pod, metav1.GetOptions{})
			if err != nil {
				if !apierrors.IsNotFound(err) {
					d.errors.Add(1)
				}
				return
			}
			pod = got
		}
		now := metav1.Now()
		phase := corev1.PodSucceeded
		if e.failed {
			phase = corev1.PodFailed
		}
		pod.Status.Phase = phase
		for i := range pod.Status.Conditions {
			if ty := pod.Status.Conditions[i].Type; ty == corev1.PodReady || ty == corev1.ContainersReady {
				pod.Status.Conditions[i].Status = corev1.ConditionFalse
				pod.Status.Conditions[i].LastTransitionTime = now
				pod.Status.Conditions[i].Reason = "PodCompleted"
			}
		}
		_, err := d.b.kube.CoreV1().Pods(e.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if err == nil {
			if e.failed {
				d.failed.Add(1)
			} else {
				d.succeeded.Add(1)
			}
			return
		}
		if apierrors.IsNotFound(err) {
			return
		}
		if !apierrors.IsConflict(err) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	d.errors.Add(1)
}

// remove deletes a finished job's pods and PodGroup, as a job controller's TTL would.
func (d *churnDriver) remove(j *churnJob) {
	ctx := context.Background()
	err := d.b.kube.CoreV1().Pods(j.ns).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "job=" + j.Name})
	if err == nil {
		err = d.b.vc.SchedulingV1beta1().PodGroups(j.ns).Delete(ctx, j.Name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		d.errors.Add(1)
		return
	}
	d.deleted.Add(1)
}

// tick hands the due ends and deletions to the workers.
func (d *churnDriver) tick(now time.Time) {
	keep := time.Duration(d.plan.KeepSeconds * float64(time.Second))
	d.mu.Lock()
	var ends []churnEnd
	for d.ends.Len() > 0 && !d.ends[0].at.After(now) {
		ends = append(ends, heap.Pop(&d.ends).(churnEnd))
	}
	var done []*churnJob
	for _, j := range d.jobs {
		if !j.deleted && !j.doneAt.IsZero() && now.Sub(j.doneAt) >= keep {
			j.deleted = true
			done = append(done, j)
		}
	}
	d.mu.Unlock()
	for _, e := range ends {
		d.work <- func() { d.finish(e) }
	}
	for _, j := range done {
		d.work <- func() { d.remove(j) }
	}
}

// population counts the mode's pods not finished: all, Running, without a node.
func (d *churnDriver) population() (live, running, pending int) {
	for _, obj := range d.store.List() {
		p := obj.(*corev1.Pod)
		if !strings.HasPrefix(p.Namespace, string(d.w)) || p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			continue
		case p.Spec.NodeName == "":
			pending++
		case p.Status.Phase == corev1.PodRunning:
			running++
		}
		live++
	}
	return live, running, pending
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

func runChurn(t *testing.T, c *Cluster, b bulk, plan churnPlan, mode string) churnRun {
	r := churnRun{Mode: mode, Nodes: plan.Nodes, Pods: plan.Pods, LoadAvgBefore: loadAvg()}
	g := groupOf("job")
	scheduler := map[string]string{"intree": "intree", "compare": "caldera", "cluster": "caldera-cluster"}[mode]
	if scheduler == "" {
		t.Fatalf("unknown churn mode %q (intree, compare, cluster)", mode)
	}
	if mode == "compare" {
		g.caldera = withSessionState(g.caldera, "compare")
	}
	name := fmt.Sprintf("churn-%s-%d", mode, plan.Nodes)
	w := workspace(fmt.Sprintf("churn-%s-", mode))
	ctx := context.Background()
	for i := 0; i < scaleNamespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns(i)}}
		if _, err := b.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	server := serverFor(t, c, g, name, scheduler, "", "", "")
	cal := server.caldera
	if cal != nil {
		defer cal.Stop()
	}
	defer deleteWorkload(t, b, w)
	d := newChurnDriver(t, c, b, plan, w)
	defer d.close()
	calCPU0 := 0.0
	if cal != nil {
		calCPU0 = procCPUSeconds(cal.proc)
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// CALDERA_CHURN_SCHEDULER_V: vc-scheduler's log level (default 1; 3 logs each allocation).
	verbosity := "1"
	if v := os.Getenv("CALDERA_CHURN_SCHEDULER_V"); v != "" {
		verbosity = v
	}
	sched := c.StartScheduler(t, name, server.conf, "--listen-address", metricsAddr,
		"--enable-metrics", "--kube-api-qps", "2000", "--kube-api-burst", "4000",
		"--minimum-feasible-nodes", "100", "--percentage-nodes-to-find", "100", "-v", verbosity)
	defer sched.stop()
	metricsURL := "http://" + metricsAddr + "/metrics"
	if mode == "compare" {
		// Compare mode's watch lists the cluster before its first comparison.
		if err := waitFor(120*time.Second, func() (bool, error) {
			return cal.metric(t, "caldera_session_state_sessions_total", `outcome="compared"`) >= 1, nil
		}); err != nil {
			r.Error = "no session compared before the fill: " + err.Error()
			return r
		}
	}

	var cycles []float64
	var meter cycleMeter
	measuring := false
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
		for k := 0; measuring && k < ended; k++ {
			cycles = append(cycles, per)
		}
		return true
	}

	schedule := newChurnSchedule(plan)
	next := schedule.next()
	index := 0
	// The fill: every job drawn before the first Poisson arrival, created now.
	var fill []*churnJob
	for next.Fill {
		d.create(next, index)
		fill = append(fill, next)
		index++
		next = schedule.next()
	}
	fillStart := time.Now()
	fillTimeout := time.Duration(plan.FillTimeoutSec * float64(time.Second))
	// The Poisson arrivals start once the fill runs (plan.ArrivalsFrom "window"), or with the
	// fill's creation (""): then a slow fill opens the window with a backlog of jobs.
	arrivals, arriving := fillStart, plan.ArrivalsFrom != "window"
	step := func(now time.Time) {
		for arriving && !arrivals.Add(next.At).After(now) {
			d.create(next, index)
			index++
			next = schedule.next()
		}
		d.tick(now)
	}
	for poll() {
		time.Sleep(100 * time.Millisecond)
		now := time.Now()
		step(now)
		d.mu.Lock()
		started := 0
		for _, j := range fill {
			if !j.started.IsZero() || len(j.ended) > 0 {
				started++
			}
		}
		d.mu.Unlock()
		if started == len(fill) {
			r.FillComplete = true
			break
		}
		if now.Sub(fillStart) >= fillTimeout {
			break
		}
	}
	if r.Error != "" {
		return r
	}
	r.FillSeconds = time.Since(fillStart).Seconds()
	t.Logf("%s: fill of %d jobs Running in %.1fs (complete %v)", name, len(fill), r.FillSeconds, r.FillComplete)

	// The window.
	var before, inFlightBefore map[string]float64
	first := 0
	if mode == "compare" {
		before, inFlightBefore = cal.differencesByKind(t), cal.inFlightByKind(t)
		first = cal.lastComparedSession(t)
	}
	windowStart := time.Now()
	if !arriving {
		arrivals, arriving = windowStart, true
	}
	window := time.Duration(plan.Windows[mode] * float64(time.Second))
	measuring = true
	var live, running, pending []float64
	lastSample := time.Time{}
	for poll() {
		time.Sleep(100 * time.Millisecond)
		now := time.Now()
		if now.Sub(windowStart) >= window {
			break
		}
		step(now)
		if now.Sub(lastSample) >= 5*time.Second {
			lastSample = now
			l, run, p := d.population()
			live, running, pending = append(live, float64(l)), append(running, float64(run)), append(pending, float64(p))
		}
	}
	measuring = false
	r.WindowSeconds = time.Since(windowStart).Seconds()
	if mode == "compare" {
		churnCompareFigures(t, &r, cal, before, inFlightBefore, first)
	}
	r.SchedulerRSS = peakRSSMiB(sched)
	if cal != nil {
		r.CalderaRSS = peakRSSMiB(cal.proc)
		r.CalderaCPU = procCPUSeconds(cal.proc) - calCPU0
	}
	r.LoadAvgAfter = loadAvg()

	d.mu.Lock()
	var starts []float64
	for _, j := range d.jobs {
		if j.Fill || j.created.Before(windowStart) {
			continue
		}
		r.JobsArrived++
		r.PodsArrived += j.Size
		if j.started.IsZero() {
			r.Unstarted++
			continue
		}
		r.JobsStarted++
		starts = append(starts, j.started.Sub(j.created).Seconds())
	}
	d.mu.Unlock()
	sort.Float64s(starts)
	r.StartP50Seconds, r.StartP90Seconds = quantile(starts, 0.5), quantile(starts, 0.9)
	r.StartP99Seconds, r.StartMaxSeconds = quantile(starts, 0.99), quantile(starts, 1)
	r.StartMeanSeconds = mean(starts)
	r.PodsSucceeded, r.PodsFailed = int(d.succeeded.Load()), int(d.failed.Load())
	r.JobsDeleted, r.StatusErrors = int(d.deleted.Load()), d.errors.Load()
	r.LiveMean, r.RunningMean, r.PendingMean = mean(live), mean(running), mean(pending)
	r.Cycles, r.CycleMs = len(cycles), cycles
	r.CycleP50Ms, r.CycleP99Ms, r.CycleMaxMs = quantile(cycles, 0.5), quantile(cycles, 0.99), quantile(cycles, 1)
	for _, ms := range cycles {
		if ms > 1000 {
			r.Overruns++
		}
	}
	return r
}

func mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	return math.Round(sum/float64(len(values))*100) / 100
}

// churnCompareFigures: compare mode's sessions and differences over the window, from Caldera's
// metrics (before and after) and its log (one line per kind and session).
func churnCompareFigures(t *testing.T, r *churnRun, cal *Caldera, before, inFlightBefore map[string]float64, first int) {
	// The last comparison may still run: let it finish so that the log and metrics agree.
	time.Sleep(2 * time.Second)
	after, inFlightAfter := cal.differencesByKind(t), cal.inFlightByKind(t)
	last := cal.lastComparedSession(t)
	r.Sessions, r.Kinds = map[string]float64{}, map[string]churnKind{}
	for key, v := range after {
		if outcome, ok := strings.CutPrefix(key, "sessions:"); ok {
			r.Sessions[outcome] = v - before[key]
			continue
		}
		if n := v - before[key]; n > 0 {
			r.Kinds[key] = churnKind{Differences: n, InFlight: inFlightAfter[key] - inFlightBefore[key]}
		}
	}
	perSession, notInFlight := churnDifferencesPerSession(t, cal, first, last)
	var totals []float64
	for _, kinds := range perSession {
		total := 0
		for kind, n := range kinds {
			k := r.Kinds[kind]
			k.Sessions++
			r.Kinds[kind] = k
			total += n
		}
		if total > 0 {
			r.SessionsWithDifferences++
		}
		totals = append(totals, float64(total))
	}
	// Every compared session counts, those without a difference as 0.
	for len(totals) < int(r.Sessions["compared"]) {
		totals = append(totals, 0)
	}
	r.DifferencesPerSession = map[string]float64{
		"p50": quantile(totals, 0.5), "p99": quantile(totals, 0.99), "max": quantile(totals, 1),
	}
	r.NotInFlightExamples = notInFlight
}

var churnDifferenceLine = regexp.MustCompile(`session (\d+): (\d+) difference\(s\) of kind (\S+) .*\((\d+) in flight\)`)

// churnDifferencesPerSession reads Caldera's log for the sessions after first up to last:
// session -> kind -> differences, and up to 20 lines of differences not in flight.
func churnDifferencesPerSession(t *testing.T, cal *Caldera, first, last int) (map[int]map[string]int, []string) {
	text, err := os.ReadFile(cal.proc.log)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]map[string]int{}
	var notInFlight []string
	for _, line := range strings.Split(string(text), "\n") {
		m := churnDifferenceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		session, _ := strconv.Atoi(m[1])
		if session <= first || session > last {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		moving, _ := strconv.Atoi(m[4])
		if out[session] == nil {
			out[session] = map[string]int{}
		}
		out[session][m[3]] += n
		if moving != n && len(notInFlight) < 20 {
			notInFlight = append(notInFlight, line)
		}
	}
	return out, notInFlight
}

// TestChurnSchedule checks the arrival process without a cluster: the same seed draws the same
// jobs; the fill holds the plan's pods; the Poisson arrivals come at the plan's rate (the mean
// gap within 3% over 20,000 jobs) with run times inside their bounds and about failRatio of
// the pods failing.
func TestChurnSchedule(t *testing.T) {
	plan := churnPlan{Nodes: 100, Pods: 1000, Seed: 50, MinRunSeconds: 120, MaxRunSeconds: 360, FailRatio: 0.05}
	a, b := newChurnSchedule(plan), newChurnSchedule(plan)
	fillPods, jobs, pods, failed := 0, 0, 0, 0
	var last *churnJob
	for i := 0; i < 20000; i++ {
		j, k := a.next(), b.next()
		if j.Name != k.Name || j.At != k.At || j.Size != k.Size || j.Run != k.Run || fmt.Sprint(j.FailAt) != fmt.Sprint(k.FailAt) {
			t.Fatalf("job %d differs between two schedules of one seed: %+v, %+v", i, j, k)
		}
		if j.Fill {
			fillPods += j.Size
			continue
		}
		if j.Run < 120*time.Second || j.Run > 360*time.Second {
			t.Fatalf("job %s runs %s, outside [120 s, 360 s]", j.Name, j.Run)
		}
		jobs++
		pods += j.Size
		for _, f := range j.FailAt {
			if f > 0 {
				failed++
			}
		}
		last = j
	}
	if fillPods < plan.Pods || fillPods >= plan.Pods+8 {
		t.Errorf("the fill holds %d pods, want %d (plus less than one job)", fillPods, plan.Pods)
	}
	gap := last.At.Seconds() / float64(jobs)
	if want := 1 / plan.jobRate(); math.Abs(gap-want)/want > 0.03 {
		t.Errorf("mean gap between arrivals %.3f s, want %.3f s (rate %.3f/s)", gap, want, plan.jobRate())
	}
	if ratio := float64(failed) / float64(pods); math.Abs(ratio-plan.FailRatio) > 0.01 {
		t.Errorf("%.3f of the pods fail, want %.2f", ratio, plan.FailRatio)
	}
	// The equilibrium residual of a run uniform on [120, 360]: mean E[R²] / 2E[R] = 130 s.
	eq := newChurnSchedule(churnPlan{Pods: 400000, Seed: 50, MinRunSeconds: 120, MaxRunSeconds: 360, FillResidual: "equilibrium"})
	sum, n := 0.0, 0
	for j := eq.next(); j.Fill; j = eq.next() {
		if j.Run <= 0 || j.Run > 360*time.Second {
			t.Fatalf("fill job %s runs %s, outside (0, 360 s]", j.Name, j.Run)
		}
		sum += j.Run.Seconds()
		n++
	}
	if mean := sum / float64(n); math.Abs(mean-130) > 2 {
		t.Errorf("the fill's mean remaining run is %.1f s over %d jobs, want 130 s", mean, n)
	}
	other := newChurnSchedule(churnPlan{Pods: 1000, Seed: 51, MinRunSeconds: 120, MaxRunSeconds: 360})
	if a.next().Size == other.next().Size && a.next().Run == other.next().Run {
		t.Errorf("seeds 50 and 51 drew the same jobs")
	}
}
