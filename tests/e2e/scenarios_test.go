package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// The victim plugins: priority, conformance, min-runtime reading the Queue's
// preempt-min-runtime, pdb reading PodDisruptionBudgets from the same API server. pdb comes last:
// in Volcano's Preemptable an empty intersection becomes nil and the next plugin of the tier starts
// the victim list afresh, so a plugin after pdb would hand back the pod pdb protects.
const preemptionConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: min-runtime
  - name: pdb
    arguments: {source: kubernetes, kubeconfig: "{{KUBECONFIG}}"}
`

// preemptionRun names what one run of the preemption scenario creates: its scenario (and
// namespace), its Queue and its two nodes, so that the runs with a faulty plugin beside pdb
// (plugin_faults_test.go) take the same decisions in a namespace of their own.
type preemptionRun struct {
	name, queue string
	nodes       [2]string
	config      string
	ignorable   bool
	env         []string // the caldera commands' environment (a faulty plugin's PYTHONPATH)
	mode        string   // Caldera's sessionState mode (cluster_mode_test.go); "" is snapshot
}

// preemption: two 2-CPU nodes full with four 1-CPU low-priority jobs. On pre-a one is protected by
// a PDB (disruptionsAllowed 0); on pre-b one started just now in a queue with preempt-min-runtime
// 10m; the other two started two hours ago. A high-priority 2-pod job must evict exactly the two old ones.
// mode is Caldera's sessionState (cluster_mode_test.go): the same decisions in every mode.
func testPreemption(t *testing.T, c *Cluster, mode string) {
	run := preemptionRun{name: scenarioName("preemption", mode), queue: "e2e-preempt", nodes: [2]string{"pre-a", "pre-b"},
		config: preemptionConfig, mode: mode}
	s := preemptionSetup(t, c, run)
	checkPreempted(t, s)
	checkDisruptionAllowed(t, c, s)
	checkSessionState(t, s, mode)
}

// preemptionSetup creates the scenario of run with its PDB and the four low-priority jobs, each
// bound and running.
func preemptionSetup(t *testing.T, c *Cluster, run preemptionRun) *Scenario {
	ctx := context.Background()
	c.EnsurePriorityClass(t, "e2e-low", 10)
	c.EnsurePriorityClass(t, "e2e-high", 1000)
	q := &vcsched.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: run.queue, Annotations: map[string]string{"preempt-min-runtime": "10m"}},
		Spec:       vcsched.QueueSpec{Weight: 1},
	}
	if _, err := c.VC.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.VC.SchedulingV1beta1().Queues().Delete(ctx, run.queue, metav1.DeleteOptions{}) })

	opts := modeOptions(run.mode)
	opts.ignorable, opts.env = run.ignorable, run.env
	config := run.config
	if run.mode != "" {
		config = withSessionState(config, run.mode)
	}
	s := c.newScenario(t, run.name, config, "enqueue, allocate, preempt, backfill", opts,
		NodeSpec{Name: run.nodes[0], CPU: "2", Memory: "8Gi"},
		NodeSpec{Name: run.nodes[1], CPU: "2", Memory: "8Gi"},
	)
	// The PDB and its status as the disruption controller (not run here) would write it for one
	// healthy pod and minAvailable 1.
	one := intstr.FromInt32(1)
	pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets(s.NS).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "protect"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "protected"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// pdb watches every namespace: the next run's Caldera must see only its own PDB.
	t.Cleanup(func() {
		_ = c.Kube.PolicyV1().PodDisruptionBudgets(s.NS).Delete(ctx, "protect", metav1.DeleteOptions{})
	})
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1,
	}
	if _, err := c.Kube.PolicyV1().PodDisruptionBudgets(s.NS).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	old := map[string]string{"kai.scheduler/last-start-timestamp": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)}
	// Each node gets one protected pod and one that is not, so on either node the victim is
	// decided by the protection, not by the order in which Volcano looks at nodes.
	low := func(name, node string, ann map[string]string, labels map[string]string) {
		s.CreateJob(t, JobSpec{Name: name, Pods: 1, Request: Res("1", "1Gi"), PriorityClass: "e2e-low",
			Queue: run.queue, PGAnnotations: ann, PodLabels: labels, Node: node})
	}
	// The protected jobs are created last, two seconds later (PodGroup creation times have
	// one-second resolution): among jobs of equal priority Volcano's own victim order
	// (BuildVictimsPriorityQueue: !JobOrderFn, creation time then UID) evicts the newest job
	// first, so without Caldera's protection the protected pod of each node would be the one
	// evicted, every run.
	low("low-old1", run.nodes[0], old, nil)
	low("low-old2", run.nodes[1], old, nil)
	for _, j := range []string{"low-old1", "low-old2"} {
		t.Logf("%s: %v", j, s.WaitBound(t, j, 1, 60*time.Second))
	}
	time.Sleep(2 * time.Second)
	low("low-pdb", run.nodes[0], old, map[string]string{"app": "protected"})
	low("low-fresh", run.nodes[1], nil, nil) // start time: its pod's PodScheduled transition, i.e. now
	for _, j := range []string{"low-pdb", "low-fresh"} {
		t.Logf("%s: %v", j, s.WaitBound(t, j, 1, 60*time.Second))
	}
	s.CreateJob(t, JobSpec{Name: "high", Pods: 2, Request: Res("1", "1Gi"), PriorityClass: "e2e-high", Queue: run.queue})
	return s
}

// checkPreempted: the high job is placed by evicting exactly the two old pods; the pods pdb and
// min-runtime protect still run.
func checkPreempted(t *testing.T, s *Scenario) {
	ctx := context.Background()
	c := s.C
	got, err := s.tryBound("high", 2, 90*time.Second)
	if err != nil {
		for _, low := range []string{"low-old1-0", "low-old2-0", "low-pdb-0", "low-fresh-0"} {
			if c.Deleted(s.NS, low) {
				t.Fatalf("job high: %v", err) // a victim went: the cluster is slow
			}
		}
		s.Wrong(t, "high was not placed and no pod was evicted for it: %v", err)
		t.FailNow()
	}
	t.Logf("high: %v", got)
	for _, victim := range []string{"low-old1-0", "low-old2-0"} {
		if !c.Deleted(s.NS, victim) {
			s.Wrong(t, "%s was not evicted", victim)
		}
		if !s.EventReasons(t, "Pod", victim)["Evict"] {
			s.Wrong(t, "%s has no Evict event from vc-scheduler", victim)
		}
	}
	for _, kept := range []string{"low-pdb-0", "low-fresh-0"} {
		if s.EventReasons(t, "Pod", kept)["Evict"] {
			s.Wrong(t, "%s has an Evict event", kept)
		}
		if c.Deleted(s.NS, kept) {
			s.Wrong(t, "%s was evicted (protected by %s)", kept, map[string]string{"low-pdb-0": "its PDB", "low-fresh-0": "min-runtime"}[kept])
		}
		p, err := c.Kube.CoreV1().Pods(s.NS).Get(ctx, kept, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			t.Errorf("%s should still run: %v", kept, err)
		}
	}
	if n := s.Caldera.Answered(t, "preemptable"); n < 1 {
		t.Errorf("Caldera answered no preemptable call")
	}
	for _, plugin := range []string{"pdb", "min-runtime"} {
		if n := s.Caldera.Decisions(t, plugin, "preemptable", "victims"); n < 1 {
			t.Errorf("%s decided no preemptable call (%v)", plugin, n)
		}
	}
}

// checkDisruptionAllowed: pdb's client (lightkube under Caldera's reflector): the PDB was
// created after Caldera's first list (StartCaldera waits for /readyz), so it and its status
// came through the watch, with no relist. Now the disruption controller would allow one
// disruption: the watch delivers the new status and the next preemption takes the protected pod.
func checkDisruptionAllowed(t *testing.T, c *Cluster, s *Scenario) {
	ctx := context.Background()
	if bg := pdbBackground(t, s.Caldera); bg["count"] != 1.0 || bg["relists"] != 0.0 || bg["lastError"] != nil {
		t.Errorf("pdb's background after the watch delivered the PDB: %v", bg)
	}
	pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets(s.NS).Get(ctx, "protect", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status.DisruptionsAllowed = 1
	if _, err := c.Kube.PolicyV1().PodDisruptionBudgets(s.NS).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	queue := s.podGroupQueue(t, "high")
	s.CreateJob(t, JobSpec{Name: "high2", Pods: 1, Request: Res("1", "1Gi"), PriorityClass: "e2e-high", Queue: queue})
	t.Logf("high2: %v", s.WaitBound(t, "high2", 1, 90*time.Second))
	if !c.Deleted(s.NS, "low-pdb-0") {
		s.Wrong(t, "low-pdb-0 was not evicted once its PDB allowed a disruption")
	}
	if c.Deleted(s.NS, "low-fresh-0") {
		s.Wrong(t, "low-fresh-0 was evicted (protected by min-runtime)")
	}
}

// podGroupQueue is the queue of the scenario's PodGroup name.
func (s *Scenario) podGroupQueue(t testing.TB, name string) string {
	t.Helper()
	pg, err := s.C.VC.SchedulingV1beta1().PodGroups(s.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Spec.Queue
}

// pdbBackground is the pdb plugin's entry in Caldera's /readyz backgrounds.
func pdbBackground(t *testing.T, cal *Caldera) map[string]any {
	t.Helper()
	backgrounds, _ := cal.Readyz(t)["backgrounds"].(map[string]any)
	for key, bg := range backgrounds {
		if strings.HasSuffix(key, ":pdb") {
			entry, _ := bg.(map[string]any)
			return entry
		}
	}
	t.Fatalf("no pdb background in /readyz: %v", backgrounds)
	return nil
}

// sla first, then resourcequota: a tier that permits ends the vote, as in Volcano.
const admissionConfig = `volcanoVersion: "1.14"
explainEvents: true
explainEventsKubeconfig: "{{KUBECONFIG}}"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
- plugins:
  - name: resourcequota
`

// admission: a namespace ResourceQuota of 4 CPU. A job whose PodGroup asks for 6 CPU stays
// Pending (resourcequota rejects it at enqueue); a small job is admitted and bound; a 6-CPU job
// whose PodGroup carries volcano.sh/sla-waiting-time: 3s is admitted once it has waited that long.
// mode is Caldera's sessionState (cluster_mode_test.go): the same decisions in every mode.
func testAdmission(t *testing.T, c *Cluster, mode string) {
	s := c.newScenario(t, scenarioName("admission", mode), withSessionState(admissionConfig, mode),
		"enqueue, allocate, backfill", modeOptions(mode),
		NodeSpec{Name: "adm-a", CPU: "8", Memory: "16Gi"},
		NodeSpec{Name: "adm-b", CPU: "8", Memory: "16Gi"},
	)
	s.createQuota(t, "4")

	big := Res("6", "1Gi")
	s.CreateJob(t, JobSpec{Name: "over-quota", Pods: 1, Request: Res("1", "1Gi"), MinResources: big})
	s.CreateJob(t, JobSpec{Name: "small", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "past-sla", Pods: 1, Request: Res("1", "1Gi"), MinResources: big,
		PGAnnotations: map[string]string{"volcano.sh/sla-waiting-time": "3s"}})

	s.WaitAdmittedBound(t, "small", 1, 60*time.Second)
	got := s.WaitAdmittedBound(t, "past-sla", 1, 60*time.Second)
	t.Logf("past-sla admitted after its SLA: %v", got)
	s.WaitPodGroupPhase(t, "past-sla", "Running", 30*time.Second)
	// By now several sessions have voted on over-quota; give it a few more.
	time.Sleep(5 * time.Second)
	if ph := s.PodGroupPhase(t, "over-quota"); ph != vcsched.PodGroupPending {
		s.Wrong(t, "over-quota PodGroup phase %q, want Pending", ph)
	}
	if pl := s.Placement(t, "over-quota"); pl["over-quota-0"] != "" {
		s.Wrong(t, "over-quota pod bound to %s", pl["over-quota-0"])
	}
	if !s.EventReasons(t, "Pod", "small-0")["Scheduled"] {
		t.Errorf("small-0 has no Scheduled event from vc-scheduler")
	}
	if n := s.Caldera.Answered(t, "jobEnqueueable"); n < 2 {
		t.Errorf("Caldera answered %v jobEnqueueable calls", n)
	}
	checkExplainOverQuota(t, s)
	checkVerdictEvents(t, s)
	checkSessionState(t, s, mode)
}

// checkVerdictEvents: with explainEvents on, Caldera records a Warning CalderaRejected on the
// PodGroup resourcequota holds back, naming the plugin and the quota's numbers, and on the job
// sla let through once its 3 s passed, the rejection it had first and a Normal CalderaAdmitted.
func checkVerdictEvents(t *testing.T, s *Scenario) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		overQuota := s.podGroupEvents(t, "over-quota")
		pastSLA := s.podGroupEvents(t, "past-sla")
		rejected, admitted := overQuota["CalderaRejected"], pastSLA["CalderaAdmitted"]
		if rejected != nil && admitted != nil {
			if rejected.Type != "Warning" || !strings.HasPrefix(rejected.Message, "resourcequota: quota ") ||
				!strings.Contains(rejected.Message, "cpu 6 requested") || rejected.Source.Component != "caldera" {
				t.Errorf("over-quota's CalderaRejected event: %s %q from %q", rejected.Type, rejected.Message, rejected.Source.Component)
			}
			if pastSLA["CalderaRejected"] == nil || admitted.Type != "Normal" {
				t.Errorf("past-sla's events: %v, want a CalderaRejected then a Normal CalderaAdmitted", pastSLA)
			}
			if _, again := overQuota["CalderaAdmitted"]; again {
				t.Errorf("over-quota, never admitted, has a CalderaAdmitted event")
			}
			t.Logf("over-quota: %s %s %q (count %d)", rejected.Type, rejected.Reason, rejected.Message, rejected.Count)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("no CalderaRejected event on over-quota (%v) or no CalderaAdmitted on past-sla (%v)", overQuota, pastSLA)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkExplainOverQuota: `caldera explain admission/over-quota` tells an operator why the job
// waits: resourcequota rejects it at enqueue, with the quota's numbers (6 CPU requested, a hard
// limit of 4), while sla, an hour from its deadline, abstains. The same with --json, whose first
// summary line is the rejection; an unknown job exits 1.
func checkExplainOverQuota(t *testing.T, s *Scenario) {
	t.Helper()
	key := s.NS + "/over-quota"
	out, errOut, code := s.Caldera.Explain(t, key)
	if code != 0 {
		t.Errorf("caldera explain %s exited %d:\n%s%s", key, code, out, errOut)
	} else {
		t.Logf("caldera explain %s:\n%s", key, out)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		// A header line ("job NS/NAME (session N, ...):"), then the summary, most decisive first.
		if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "resourcequota rejects job "+key) ||
			!strings.Contains(lines[1], "cpu 6 requested") || !strings.Contains(lines[1], "of 4") {
			t.Errorf("caldera explain %s: want its first summary line to say that resourcequota rejects it, "+
				"cpu 6 requested of 4; got:\n%s", key, out)
		}
	}

	out, errOut, code = s.Caldera.Explain(t, key, "--json")
	var doc struct {
		Job      string
		Summary  []string
		Verdicts []struct{ Verb, Plugin, Answer, Code, Message string }
	}
	if code != 0 {
		t.Errorf("caldera explain %s --json exited %d:\n%s%s", key, code, out, errOut)
	} else if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Errorf("caldera explain %s --json: %v\n%s", key, err, out)
	} else {
		if doc.Job != key {
			t.Errorf("caldera explain --json: job %q, want %q", doc.Job, key)
		}
		if len(doc.Summary) == 0 || !strings.HasPrefix(doc.Summary[0], "resourcequota rejects") ||
			!strings.Contains(doc.Summary[0], "cpu 6 requested") {
			t.Errorf("caldera explain --json: summary %q, want resourcequota's rejection first", doc.Summary)
		}
		verdicts := map[string]string{}
		for _, v := range doc.Verdicts {
			if v.Verb == "jobEnqueueable" {
				verdicts[v.Plugin] = v.Answer + " " + v.Code
			}
		}
		if verdicts["resourcequota"] != "reject quota-exceeded" || verdicts["sla"] != "abstain within-sla" {
			t.Errorf("caldera explain --json: jobEnqueueable verdicts %v, want resourcequota reject "+
				"quota-exceeded and sla abstain within-sla:\n%s", verdicts, out)
		}
	}

	if out, errOut, code := s.Caldera.Explain(t, s.NS+"/no-such-job"); code != 1 {
		t.Errorf("caldera explain of an unknown job exited %d, want 1:\n%s%s", code, out, errOut)
	}
}

// Admission and placement both depend on Caldera here: resourcequota rejects the big jobs and
// resource-strategy-fit packs nodes.
const failureConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: priority
  - name: resourcequota
- plugins:
  - name: resource-strategy-fit
    arguments:
      resources:
        cpu: {type: MostAllocated, weight: 1}
`

// createQuota creates a CPU ResourceQuota and publishes its status as the resource quota
// controller (not run here) would; the API server's quota admission then keeps used up to date
// as pods are created. It waits for the scheduler's cache to see it.
func (s *Scenario) createQuota(t *testing.T, cpu string) {
	t.Helper()
	ctx := context.Background()
	hard := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	rq, err := s.C.Kube.CoreV1().ResourceQuotas(s.NS).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rq.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}}
	if _, err := s.C.Kube.CoreV1().ResourceQuotas(s.NS).UpdateStatus(ctx, rq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
}

// failure policy, with extender.ignorable as given: Caldera up (the big job is held by
// resourcequota), stopped, started again, then up but with its jobEnqueueable calls failing.
//
// What Volcano v1.14.1 does when Caldera is down is the same for both values of ignorable: its
// extender's OnSessionOpen posts onSessionOpen first and, when that fails and ignorable is false,
// returns before registering any of its functions (pkg/scheduler/plugins/extender/extender.go);
// with ignorable true it registers them and ignores their errors. Either way the session runs
// without Caldera, so jobs are admitted and placed without its plugins (fail open). ignorable:
// false only rejects nodes/jobs when Caldera answered onSessionOpen and fails later in the session.
// This test pins that behaviour so a change in it is noticed.
func testFailurePolicy(t *testing.T, c *Cluster, name string, ignorable bool) {
	s := c.NewScenarioWithProxy(t, name, failureConfig, "enqueue, allocate, backfill", ignorable,
		NodeSpec{Name: name + "-a", CPU: "8", Memory: "16Gi"},
		NodeSpec{Name: name + "-b", CPU: "8", Memory: "16Gi"},
	)
	s.createQuota(t, "20")
	big := Res("30", "1Gi") // over the 20-CPU quota
	expectPending := func(job string) {
		t.Helper()
		if ph := s.PodGroupPhase(t, job); ph != vcsched.PodGroupPending {
			t.Errorf("%s: PodGroup phase %q, want Pending (held by resourcequota)", job, ph)
		}
		if pl := s.Placement(t, job); pl[job+"-0"] != "" {
			t.Errorf("%s: bound to %s", job, pl[job+"-0"])
		}
	}

	// Caldera up: the small job binds, the big one is held.
	s.CreateJob(t, JobSpec{Name: "up-small", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "up-big", Pods: 1, Request: Res("1", "1Gi"), MinResources: big})
	s.WaitBound(t, "up-small", 1, 60*time.Second)
	time.Sleep(3 * time.Second)
	expectPending("up-big")

	// Caldera stopped: Volcano schedules without it; the held job and a new big one are admitted.
	s.Caldera.Stop()
	s.CreateJob(t, JobSpec{Name: "down-small", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "down-big", Pods: 1, Request: Res("1", "1Gi"), MinResources: big})
	s.WaitBound(t, "down-small", 1, 60*time.Second)
	s.WaitBound(t, "down-big", 1, 60*time.Second)
	s.WaitBound(t, "up-big", 1, 60*time.Second)
	t.Logf("ignorable=%v, Caldera down: over-quota jobs admitted and bound (Volcano skips a dead extender)", ignorable)

	// Caldera back on the same port: the next session consults it again.
	s.Caldera.Start(t)
	before := s.Caldera.Answered(t, "jobEnqueueable")
	s.CreateJob(t, JobSpec{Name: "back-small", Pods: 1, Request: Res("1", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "back-big", Pods: 1, Request: Res("1", "1Gi"), MinResources: big})
	s.WaitBound(t, "back-small", 1, 60*time.Second)
	time.Sleep(3 * time.Second)
	expectPending("back-big")
	if n := s.Caldera.Answered(t, "jobEnqueueable"); n <= before {
		t.Errorf("restarted Caldera answered no jobEnqueueable call")
	}

	// Caldera answers onSessionOpen but its jobEnqueueable calls fail (503 from the proxy): this
	// is where ignorable decides. false: Volcano rejects the job, which waits until the calls
	// succeed again; true: Volcano treats Caldera as absent and admits it.
	s.Proxy.Fail("jobEnqueueable", true)
	s.CreateJob(t, JobSpec{Name: "flaky-small", Pods: 1, Request: Res("1", "1Gi")})
	if ignorable {
		s.WaitBound(t, "flaky-small", 1, 60*time.Second)
		s.Proxy.Fail("jobEnqueueable", false)
		return
	}
	time.Sleep(5 * time.Second)
	expectPendingWhy := func(job, why string) {
		t.Helper()
		if ph := s.PodGroupPhase(t, job); ph != vcsched.PodGroupPending {
			t.Errorf("%s: PodGroup phase %q, want Pending (%s)", job, ph, why)
		}
	}
	expectPendingWhy("flaky-small", "jobEnqueueable fails and ignorable is false")
	s.Proxy.Fail("jobEnqueueable", false)
	s.WaitBound(t, "flaky-small", 1, 60*time.Second)
}

// restart: Caldera killed (SIGKILL, no drain) while vc-scheduler runs a session every second,
// then started again on the same port. The new process has no memory of the old one; every
// session rebuilds its state from the onSessionOpen snapshot, so the decisions after the restart
// are the ones before it: quota still holds the big job, MostAllocated still packs. rst-c
// (7 CPU, a 1-CPU ballast) is full after wave1's six pods; wave2's twelve then fit on either
// empty 12-CPU node. Without Caldera's scores Volcano picks among feasible nodes at random:
// wave1 all on rst-c by chance with probability (1/3)^6 (1 in 729), wave2 all on one node with
// 2 x (1/2)^12 (1 in 2,048).
func testRestart(t *testing.T, c *Cluster) {
	s := c.NewScenario(t, "restart", failureConfig, "enqueue, allocate, backfill", false,
		NodeSpec{Name: "rst-a", CPU: "12", Memory: "32Gi"},
		NodeSpec{Name: "rst-b", CPU: "12", Memory: "32Gi"},
		NodeSpec{Name: "rst-c", CPU: "7", Memory: "32Gi"},
	)
	s.createQuota(t, "40")
	s.CreateBoundPod(t, "ballast", "rst-c", Res("1", "1Gi"))
	time.Sleep(2 * time.Second)
	s.CreateJob(t, JobSpec{Name: "wave1", Pods: 6, Request: Res("1", "1Gi")})
	for pod, node := range s.WaitBound(t, "wave1", 6, 60*time.Second) {
		if node != "rst-c" {
			t.Errorf("before restart: %s on %s, want rst-c", pod, node)
		}
	}

	s.Caldera.Kill()
	s.Caldera.Start(t)
	// Jobs are created after the restart: the sessions of the 1-2 s while Caldera was down ran
	// without it (see testFailurePolicy), so a job pending then would have been admitted.
	s.CreateJob(t, JobSpec{Name: "big", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("50", "1Gi")})

	// rst-a and rst-b are empty: the first pod of wave2 picks one, MostAllocated packs the rest
	// onto it.
	s.CreateJob(t, JobSpec{Name: "wave2", Pods: 12, Request: Res("1", "1Gi")})
	got := s.WaitBound(t, "wave2", 12, 60*time.Second)
	nodes := map[string]bool{}
	for _, n := range got {
		nodes[n] = true
	}
	if len(nodes) != 1 || nodes["rst-c"] {
		t.Errorf("after restart: wave2 spread over %v, want one empty node", got)
	}
	time.Sleep(2 * time.Second)
	if ph := s.PodGroupPhase(t, "big"); ph != vcsched.PodGroupPending {
		t.Errorf("after restart: over-quota PodGroup phase %q, want Pending", ph)
	}
	if n := s.Caldera.Answered(t, "onSessionOpen"); n < 1 {
		t.Errorf("restarted Caldera saw no onSessionOpen")
	}
}

// nodegroup through Caldera's predicate only: only the node group the queue's required affinity
// names. Its prioritize is off, so that the filter alone decides (with it on, the 100 it gives
// the required group would also steer every pod there: a broken predicate went unnoticed).
const nodeGroupConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: nodegroup
    enableNodeOrder: false
`

// placement-nodegroup: three equal nodes in two node groups; the queue requires group "g1",
// whose one node already carries a pod. nodegroup's predicate, answered by Caldera, rejects the
// two empty g2 nodes with code 3, so all eight pods of a job land on the loaded g1 node. No
// node scoring runs (the conf has none of Volcano's and nodegroup's is off): without the
// filter the three nodes tie and all eight would land on ng-a by chance 1 run in 6,561.
// mode is Caldera's sessionState (cluster_mode_test.go): the same decisions in every mode.
func testNodeGroupPlacement(t *testing.T, c *Cluster, mode string) {
	ctx := context.Background()
	q := &vcsched.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-nodegroup"},
		Spec: vcsched.QueueSpec{Weight: 1, Affinity: &vcsched.Affinity{
			NodeGroupAffinity: &vcsched.NodeGroupAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []string{"g1"},
			},
		}},
	}
	if _, err := c.VC.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.VC.SchedulingV1beta1().Queues().Delete(ctx, "e2e-nodegroup", metav1.DeleteOptions{}) })
	group := func(g string) map[string]string { return map[string]string{"volcano.sh/nodegroup-name": g} }
	s := c.newScenario(t, scenarioName("placement-nodegroup", mode), withSessionState(nodeGroupConfig, mode),
		"enqueue, allocate, backfill", modeOptions(mode),
		NodeSpec{Name: "ng-a", CPU: "12", Memory: "32Gi", Labels: group("g1")},
		NodeSpec{Name: "ng-b", CPU: "12", Memory: "32Gi", Labels: group("g2")},
		NodeSpec{Name: "ng-c", CPU: "12", Memory: "32Gi", Labels: group("g2")},
	)
	s.CreateBoundPod(t, "ballast", "ng-a", Res("1", "1Gi"))
	time.Sleep(2 * time.Second) // the scheduler's cache sees the ballast before the job
	s.CreateJob(t, JobSpec{Name: "grouped", Pods: 8, Request: Res("1", "1Gi"), Queue: "e2e-nodegroup"})
	got := s.WaitBound(t, "grouped", 8, 60*time.Second)
	t.Logf("placement: %v", got)
	for pod, node := range got {
		if node != "ng-a" {
			s.Wrong(t, "%s on %s, want ng-a (the queue requires node group g1): %v", pod, node, got)
		}
	}
	if n := s.Caldera.Answered(t, "predicate"); n < 8 {
		t.Errorf("Caldera answered %v predicate calls, want at least one per pod", n)
	}
	// Volcano's in-tree tiers here score every node alike, so the placement alone could be
	// luck: the g2 nodes must have been rejected by nodegroup, answered by Caldera.
	if n := s.Caldera.Decisions(t, "nodegroup", "predicate", "fail"); n < 8 {
		t.Errorf("nodegroup rejected %v predicate calls, want the g2 nodes rejected for each pod", n)
	}
	checkSessionState(t, s, mode)
}

// large-snapshot: Caldera on its embedded default configuration (no --config: what the README's
// `caldera serve` runs) in a cluster whose session snapshot is well over 10 MiB, the limit that
// once bounded every body. Before onSessionOpen had a limit of its own, every snapshot of such a
// cluster was refused with 413 and Volcano scheduled without any hosted plugin, silently.
//
// 20 nodes and a 700-pod job whose pods carry 4 KiB of annotations (as kubectl's
// last-applied-configuration does): Volcano's snapshot carries each pod in its node's NodeInfo
// and four times in its JobInfo. Then a job whose PodGroup asks for more than overcommit allows
// (200 CPU against 20 x 4 CPU x 1.2) and a small one: only Caldera's overcommit keeps the big
// one Pending — the in-tree plugins of this conf (priority, gang) would enqueue it.
func testLargeSnapshot(t *testing.T, c *Cluster) {
	var nodes []NodeSpec
	for i := 0; i < 20; i++ {
		nodes = append(nodes, NodeSpec{Name: fmt.Sprintf("big-%02d", i), CPU: "4", Memory: "16Gi"})
	}
	s := c.NewScenario(t, "large-snapshot", EmbeddedConfig, "enqueue, allocate, backfill", false, nodes...)
	padding := map[string]string{"caldera-e2e/padding": strings.Repeat("x", 4096)}
	const bulk = 700
	s.CreateJob(t, JobSpec{Name: "bulk", Pods: bulk, MinMember: 1, Request: Res("10m", "16Mi"), PodAnnotations: padding})
	s.WaitBound(t, "bulk", bulk, 5*time.Minute)

	s.CreateJob(t, JobSpec{Name: "over-commit", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("200", "1Gi")})
	s.CreateJob(t, JobSpec{Name: "small", Pods: 1, Request: Res("1", "1Gi")})
	s.WaitBound(t, "small", 1, 60*time.Second)
	time.Sleep(5 * time.Second) // several more sessions vote on over-commit

	ready := s.Caldera.Readyz(t)
	snapshot, _ := ready["snapshot"].(map[string]any)
	size, _ := snapshot["bytes"].(float64)
	t.Logf("last snapshot: %v (%.1f MiB for %d nodes and %d pods: %.0f bytes a pod)",
		snapshot, size/(1<<20), len(nodes), bulk+1, size/float64(bulk+1))
	if snapshot["status"] != "taken" || size <= 10<<20 {
		t.Fatalf("the last snapshot was not taken or not over 10 MiB: %v", snapshot)
	}
	if n := s.Caldera.metric(t, "caldera_request_bodies_refused_total", `verb="onSessionOpen"`); n != 0 {
		t.Errorf("Caldera refused %v onSessionOpen bodies", n)
	}
	if ph := s.PodGroupPhase(t, "over-commit"); ph != vcsched.PodGroupPending {
		t.Errorf("over-commit PodGroup phase %q, want Pending (overcommit rejects it)", ph)
	}
	if n := s.Caldera.Decisions(t, "overcommit", "jobEnqueueable", "reject"); n < 1 {
		t.Errorf("Caldera's overcommit rejected nothing (%v)", n)
	}
}
