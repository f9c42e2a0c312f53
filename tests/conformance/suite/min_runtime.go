package suite

// min-runtime (KAI-Scheduler's reclaim-/preempt-min-runtime, plugins/min_runtime/min_runtime.py) has
// no in-tree twin in Volcano, so these scenarios are not differential. Each case runs
// Volcano's real preempt or reclaim action over the operator's tier layout from the
// README (priority, gang without victim votes, conformance, capacity with
// enableHierarchy, and the extender last in the tier, pointed at a `caldera serve`
// hosting min-runtime) and checks the outcome against expectations written by hand
// from KAI's semantics (the shared reference min-runtime.md §4, KAI's
// pkg/scheduler/plugins/minruntime/{resolver,minruntime}_test.go and the design
// document's examples). Every protection case holds a run inside the min-runtime (the
// victim survives), one with the same setup once the time is up (the victim is
// evicted), and a control run without the extender entry (the same victim is evicted
// by Volcano's own plugins), so each protection can fail. The cases whose resolution
// gives no protection (a child's own 0s, reclaimResolveMethod queue, preemption under
// a reclaim-only annotation) evict a victim of the age that a sibling case protects.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"
	v1 "k8s.io/api/core/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

const (
	mrPreemptKey = "preempt-min-runtime"
	mrReclaimKey = "reclaim-min-runtime"
	mrStartKey   = "kai.scheduler/last-start-timestamp"
)

// mrStart is when the victim job started, as the snapshot shows it. Zero fields are
// absent: no annotation, no PodScheduled condition.
type mrStart struct {
	// annotation: the PodGroup's kai.scheduler/last-start-timestamp, this long ago.
	annotation time.Duration
	// rawAnnotation, if set, is written verbatim instead (an unparsable value).
	rawAnnotation string
	// scheduled: each victim pod's PodScheduled=True transition, this long ago (one
	// entry per pod, in pod order; a shorter list leaves the rest without one).
	scheduled []time.Duration
}

func (s mrStart) String() string {
	var parts []string
	if s.rawAnnotation != "" {
		parts = append(parts, fmt.Sprintf("annotation %q", s.rawAnnotation))
	} else if s.annotation != 0 {
		parts = append(parts, "annotated "+s.annotation.String()+" ago")
	}
	if len(s.scheduled) > 0 {
		ages := make([]string, len(s.scheduled))
		for i, d := range s.scheduled {
			ages[i] = d.String()
		}
		parts = append(parts, "scheduled "+strings.Join(ages, "/")+" ago")
	}
	if len(parts) == 0 {
		return "no start time"
	}
	return strings.Join(parts, ", ")
}

// stamp writes the start onto the victim job's PodGroup and pods.
func (s mrStart) stamp(pg *vcapisv1.PodGroup, pods ...*v1.Pod) {
	value := s.rawAnnotation
	if value == "" && s.annotation != 0 {
		value = time.Now().Add(-s.annotation).UTC().Format(time.RFC3339)
	}
	if value != "" {
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[mrStartKey] = value
	}
	for i, d := range s.scheduled {
		if i < len(pods) {
			scheduledAgo(pods[i], d)
		}
	}
}

func ago(d ...time.Duration) mrStart { return mrStart{scheduled: d} }

// mrWant is a hand-written outcome. Entries are "ns/pod", or "ns/prefix*" for one pod
// of several interchangeable ones (which of a job's identical tasks Volcano picks
// follows Go map iteration in its node task list).
type mrWant struct {
	evicts    []string
	pipelined []string
}

func (w mrWant) check(t *testing.T, o Outcome) {
	t.Helper()
	pipelined := make([]string, 0, len(o.Pipelined))
	for k := range o.Pipelined {
		pipelined = append(pipelined, k)
	}
	sort.Strings(pipelined)
	if !matchPods(o.Evicts, w.evicts) {
		t.Errorf("evicts %v, want %v", o.Evicts, w.evicts)
	}
	if !matchPods(pipelined, w.pipelined) {
		t.Errorf("pipelined %v, want %v", pipelined, w.pipelined)
	}
}

// matchPods: every got entry consumes one want entry, exact names first.
func matchPods(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	left := map[string]int{}
	for _, w := range want {
		left[w]++
	}
	var rest []string
	for _, g := range got {
		if left[g] > 0 {
			left[g]--
			continue
		}
		rest = append(rest, g)
	}
	for _, g := range rest {
		matched := false
		for p, n := range left {
			if n > 0 && strings.HasSuffix(p, "*") && strings.HasPrefix(g, strings.TrimSuffix(p, "*")) {
				left[p]--
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

// mrRun is one session of a case.
type mrRun struct {
	start mrStart
	// without: the control, the same tiers without the extender entry.
	without bool
	// calderaDown: the extender entry points at a port nobody listens on.
	calderaDown bool
	want        mrWant
}

type minRuntimeCase struct {
	name    string
	args    map[string]interface{} // min-runtime's arguments in caldera.yaml
	actions func() []framework.Action
	cluster func(mrStart) Cluster
	runs    []mrRun
	// since: the first release (of those this suite runs) whose action can tell the
	// runs apart; before it the case is skipped, saying why.
	since, why string
}

// minRuntimeTier is the README's recommended layout for min-runtime, as an operator
// writes it in volcano-scheduler.conf: every victim voter in one tier, gang's victim
// votes off (min-runtime's elastic rule replaces gang's), capacity with enableHierarchy
// for the queue tree; the extender entry goes last. Volcano fills a flag left out with
// true (ApplyPluginConfDefaults); here every flag these actions read is spelled out,
// because the scenarios build the session from conf.Tier directly, where nil means off.
// It is parsed with gopkg.in/yaml.v2, as UnmarshalSchedulerConf parses the file (strictly,
// so a misspelt flag fails), which also lets the suite compile against v1.8.2's
// conf.PluginOption, which has no EnablePreemptive (the group never runs there).
const minRuntimeTier = `
plugins:
- name: priority
  enableJobOrder: true
  enableTaskOrder: true
  enablePreemptable: true
  enableReclaimable: true
  enableJobStarving: true
- name: gang
  enableJobOrder: true
  enableJobReady: true
  enableJobPipelined: true
  enableJobStarving: true
  enablePreemptable: false
  enableReclaimable: false
- name: conformance
  enablePreemptable: true
  enableReclaimable: true
- name: capacity
  enabledAllocatable: true
  enablePreemptive: true
  enableReclaimable: true
  enableQueueOrder: true
  enableJobEnqueued: true
  enabledOverused: true
  enableHierarchy: true
`

func minRuntimeTiers(t *testing.T, ext *conf.PluginOption) []conf.Tier {
	var tr conf.Tier
	if err := yaml.UnmarshalStrict([]byte(minRuntimeTier), &tr); err != nil {
		t.Fatalf("min-runtime tier: %v", err)
	}
	if ext != nil {
		tr.Plugins = append(tr.Plugins, *ext)
	}
	return []conf.Tier{tr}
}

func runMinRuntimeCase(t *testing.T, c minRuntimeCase) {
	if c.since != "" && !rel.AtLeast(c.since) {
		t.Skipf("not on Volcano %s: %s", rel.Volcano, c.why)
	}
	// One caldera for the case's runs, behind a recording proxy; started on the case's
	// test so that it outlives each run's subtest.
	cfg := CalderaConfig{Tiers: [][]CalderaPlugin{{{
		Name:      "min-runtime",
		Flags:     map[string]bool{"enablePreemptable": true, "enableReclaimable": true},
		Arguments: mutatedArguments("min-runtime", c.args),
	}}}}
	caldera := startCaldera(t, cfg)
	upstream := caldera.URL
	if mutating("min-runtime") { // its entry sends no predicate or allocate: no neutral Caldera needed
		upstream = startMutator(t, caldera.URL, caldera.URL)
	}
	proxy := newRecorder(t, upstream, nil)
	extender := func(url string) *conf.PluginOption {
		opt := extenderOption(url, conf.PluginOption{EnabledPreemptable: &yes, EnabledReclaimable: &yes},
			ExtOpts{Verbs: verbs(verbOnSessionOpen, verbOnSessionClose, verbPreemptable, verbReclaimable)})
		return &opt
	}
	verb := map[string]string{"preempt": "preemptable", "reclaim": "reclaimable"}[c.actions()[0].Name()]
	for _, r := range c.runs {
		name := "started " + r.start.String()
		tiers := minRuntimeTiers(t, extender(proxy.URL))
		switch {
		case r.without:
			name += ", without min-runtime"
			tiers = minRuntimeTiers(t, nil)
		case r.calderaDown:
			name += ", caldera down"
			tiers = minRuntimeTiers(t, extender(fmt.Sprintf("http://127.0.0.1:%d", freePort(t))))
		}
		t.Run(name, func(t *testing.T) {
			calls := proxy.Calls
			if identifiersMode && !r.without && !r.calderaDown {
				// Caldera in cluster mode over this run's objects, called with identifiers.
				rec := identifiersCaldera(t, cfg, c.cluster(r.start))
				tiers = minRuntimeTiers(t, extender(rec.URL))
				withIdentifiers(extenderArgs(tiers))
				calls = rec.Answered
				defer checkIdentifierBodies(t, rec)
			}
			before := calls()
			o := runSession(t, c.cluster(r.start), tiers, c.actions())
			after := calls()
			t.Logf("%s; caldera asked %s %d times", o, verb, after[verb]-before[verb])
			failed := t.Failed()
			r.want.check(t, o)
			if mutating("min-runtime") && !failed && t.Failed() {
				t.Logf("%s: the outcome misses the expectation", caughtMarker(mutation()))
			}
			// A session whose onSessionOpen failed runs without the extender (its
			// OnSessionOpen returns before registering anything), so an eviction
			// proves nothing about min-runtime unless Caldera was really asked.
			asked := after["onSessionOpen"] > before["onSessionOpen"] && after[verb] > before[verb]
			if inPath := !r.without && !r.calderaDown; asked != inPath {
				t.Errorf("caldera asked: %v, want %v (calls before %v, after %v)", asked, inPath, before, after)
			}
		})
	}
}

// ---- objects -------------------------------------------------------------------------

// mrQueue builds a Queue from its manifest, so that the suite compiles against every
// release's API: spec.parent and spec.deserved exist in volcano.sh/apis from v1.10 on
// (the group needs capacity, which v1.8.2 lacks, so it never runs there).
// deserved "0" marks a queue capacity may reclaim from; annotations are min-runtime's.
func mrQueue(name, parent, deserved string, annotations map[string]string) *vcapisv1.Queue {
	spec := map[string]interface{}{"weight": 1, "reclaimable": true}
	if parent != "" {
		spec["parent"] = parent
	}
	if deserved != "" {
		spec["deserved"] = map[string]string{"cpu": deserved, "memory": deserved + "G"}
	}
	manifest := map[string]interface{}{
		"metadata": map[string]interface{}{"name": name, "annotations": annotations},
		"spec":     spec,
		"status":   map[string]interface{}{"state": "Open"},
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		panic(err)
	}
	q := &vcapisv1.Queue{}
	if err := json.Unmarshal(data, q); err != nil {
		panic(err)
	}
	return q
}

func mr(preempt, reclaim string) map[string]string {
	a := map[string]string{}
	if preempt != "" {
		a[mrPreemptKey] = preempt
	}
	if reclaim != "" {
		a[mrReclaimKey] = reclaim
	}
	return a
}

// runningJob is a Running PodGroup with n pods of 1 CPU / 1G on n1, named
// <prefix>-0..n-1, its start stamped.
func runningJob(ns, prefix, queue, class string, min int32, n int, start mrStart) (*vcapisv1.PodGroup, []*v1.Pod) {
	pg := pgPrio("pg-"+prefix, ns, queue, min, vcapisv1.PodGroupRunning, class)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = running(ns, fmt.Sprintf("%s-%d", prefix, i), "n1", "1", "1G", pg.Name, preemptable())
	}
	start.stamp(pg, pods...)
	return pg, pods
}

// pendingJob is an Inqueue PodGroup with n pending pods of 1 CPU / 1G.
func pendingJob(ns, prefix, queue, class string, min int32, n int) (*vcapisv1.PodGroup, []*v1.Pod) {
	pg := pgPrio("pg-"+prefix, ns, queue, min, vcapisv1.PodGroupInqueue, class)
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = pending(ns, fmt.Sprintf("%s-%d", prefix, i), "1", "1G", pg.Name)
	}
	return pg, pods
}

// preemptCluster: one node of cpus CPUs, filled by a low-priority victim job in leaf
// queue `leaf`; a high-priority job in the same queue wants one pod per CPU the victim
// holds (so it needs every victim pod).
func preemptCluster(queues []*vcapisv1.Queue, leaf string, victimPods int) func(mrStart) Cluster {
	return func(s mrStart) Cluster {
		vpg, vpods := runningJob("ns1", "victim", leaf, "low-priority", 1, victimPods, s)
		ppg, ppods := pendingJob("ns1", "preemptor", leaf, "high-priority", int32(victimPods), victimPods)
		cpu := fmt.Sprint(victimPods)
		return Cluster{
			Nodes:      []*v1.Node{node("n1", cpu, cpu+"G")},
			PriClasses: classes(),
			PodGroups:  []*vcapisv1.PodGroup{vpg, ppg},
			Pods:       append(vpods, ppods...),
			Queues:     queues,
		}
	}
}

// reclaimCluster: one node of one CPU held by a victim in queue `from`, one pending pod
// in queue `to` (deserved one CPU; every other leaf deserves nothing).
func reclaimCluster(queues func(to string) []*vcapisv1.Queue, to, from string) func(mrStart) Cluster {
	return func(s mrStart) Cluster {
		vpg, vpods := runningJob("ns1", "victim", from, "low-priority", 1, 1, s)
		rpg, rpods := pendingJob("ns1", "reclaimer", to, "low-priority", 1, 1)
		return Cluster{
			Nodes:      []*v1.Node{node("n1", "1", "1G")},
			PriClasses: classes(),
			PodGroups:  []*vcapisv1.PodGroup{vpg, rpg},
			Pods:       append(vpods, rpods...),
			Queues:     queues(to),
		}
	}
}

func leafDeserved(leaf, to string) string {
	if leaf == to {
		return "1"
	}
	return "0"
}

// designDocTree is the reclaim example of KAI's design document
// (docs/developer/designs/min-runtime/README.md): A → B(600s) → {C → {leaf1(0s),
// leaf2(180s)}, D(60s) → leaf3}, under Volcano's root.
func designDocTree(to string) []*vcapisv1.Queue {
	return []*vcapisv1.Queue{
		mrQueue("root", "", "", nil),
		mrQueue("a", "root", "", nil),
		mrQueue("b", "a", "", mr("", "600s")),
		mrQueue("c", "b", "", nil),
		mrQueue("d", "b", "", mr("", "60s")),
		mrQueue("leaf1", "c", leafDeserved("leaf1", to), mr("", "0s")),
		mrQueue("leaf2", "c", leafDeserved("leaf2", to), mr("", "180s")),
		mrQueue("leaf3", "d", leafDeserved("leaf3", to), nil),
	}
}

// kaiTree is createTestQueues() of KAI's resolver_test.go (the dev and prod subtrees),
// with KAI's seconds read as minutes so that session latency cannot matter:
// dev(5/10) → dev-team1(—/8); prod(20/30) → prod-team2(15/35) (preempt/reclaim).
func kaiTree(to string) []*vcapisv1.Queue {
	return []*vcapisv1.Queue{
		mrQueue("root", "", "", nil),
		mrQueue("dev", "root", "", mr("5m", "10m")),
		mrQueue("dev-team1", "dev", leafDeserved("dev-team1", to), mr("", "8m")),
		mrQueue("prod", "root", "", mr("20m", "30m")),
		mrQueue("prod-team2", "prod", leafDeserved("prod-team2", to), mr("15m", "35m")),
	}
}

// ---- expectations ----------------------------------------------------------------------

var (
	preemptorWins  = mrWant{evicts: []string{"ns1/victim-0"}, pipelined: []string{"ns1/preemptor-0"}}
	victimSurvives = mrWant{}
	reclaimerWins  = mrWant{evicts: []string{"ns1/victim-0"}, pipelined: []string{"ns1/reclaimer-0"}}
)

func protectedThenExpired(young, old mrStart, evicted mrWant) []mrRun {
	return []mrRun{
		{start: young, want: victimSurvives},
		{start: old, want: evicted},
		{start: young, without: true, want: evicted},
	}
}

// calderaDown adds the run README's "A failed onSessionOpen" describes: Volcano's
// extender registers nothing for a session whose onSessionOpen failed, so with
// Caldera unreachable the young victim is evicted (protection fails open).
func calderaDown(runs []mrRun, young mrStart, evicted mrWant) []mrRun {
	return append(runs, mrRun{start: young, calderaDown: true, want: evicted})
}

// ---- the group ---------------------------------------------------------------------------

func testMinRuntime(t *testing.T) {
	const m = time.Minute
	preempt := func() []framework.Action { return []framework.Action{preemptNew()} }
	reclaim := func() []framework.Action { return []framework.Action{reclaimNew()} }
	single := func(annotations map[string]string) []*vcapisv1.Queue {
		return []*vcapisv1.Queue{mrQueue("root", "", "", nil), mrQueue("q1", "root", "", annotations)}
	}
	// prod(20m) → {prod-team1 (unset), prod-team0 (own 0s)}: resolver_test.go's prod
	// subtree, KAI's seconds as minutes; prod-team0 is the design document's "leaf1=0s".
	inherit := []*vcapisv1.Queue{
		mrQueue("root", "", "", nil),
		mrQueue("prod", "root", "", mr("20m", "")),
		mrQueue("prod-team1", "prod", "", nil),
		mrQueue("prod-team0", "prod", "", mr("0s", "")),
	}
	lca := map[string]interface{}{}
	byQueue := map[string]interface{}{"reclaimResolveMethod": "queue"}

	cases := []minRuntimeCase{
		// ---- preempt: within one queue, preempt-min-runtime from the victim's queue up
		{
			// minruntime_test.go preemptFilterFn: protected (now-10s < 15s) / not (now-30s).
			name: "preempt: queue preempt-min-runtime protects a young victim (KAI preemptFilterFn)",
			args: lca, actions: preempt, cluster: preemptCluster(single(mr("10m", "")), "q1", 1),
			runs: calderaDown(protectedThenExpired(ago(2*m), ago(20*m), preemptorWins), ago(2*m), preemptorWins),
		},
		{
			name: "preempt: plugin default defaultPreemptMinRuntime, no queue annotation",
			args: map[string]interface{}{"defaultPreemptMinRuntime": "10m"}, actions: preempt,
			cluster: preemptCluster(single(nil), "q1", 1),
			runs:    protectedThenExpired(ago(2*m), ago(20*m), preemptorWins),
		},
		{
			// resolver_test.go: preempt prod-team1 → 20s (inherited from prod).
			name: "preempt: inherited from the parent queue (KAI resolver prod-team1 → prod)",
			args: lca, actions: preempt, cluster: preemptCluster(inherit, "prod-team1", 1),
			runs: protectedThenExpired(ago(10*m), ago(30*m), preemptorWins),
		},
		{
			// Same tree: a queue's own 0s stops inheritance (design document, leaf1=0s), so
			// the 10m-old victim that prod-team1's twin protects is evicted here.
			name: "preempt: a child's own 0s stops inheritance (design doc leaf1=0s)",
			args: lca, actions: preempt, cluster: preemptCluster(inherit, "prod-team0", 1),
			runs: []mrRun{
				{start: ago(10 * m), want: preemptorWins},
				{start: ago(10 * m), without: true, want: preemptorWins},
			},
		},
		{
			// preemptable resolves preempt-min-runtime only; the queue's reclaim value is
			// for victims of another queue.
			name: "preempt: reclaim-min-runtime does not guard preemption within a queue",
			args: lca, actions: preempt, cluster: preemptCluster(single(mr("", "1h")), "q1", 1),
			runs: []mrRun{{start: ago(10 * m), want: preemptorWins}},
		},

		// ---- reclaim: across queues, reclaim-min-runtime by lca (default) or queue
		{
			// Design doc: "leaf3 reclaims from leaf1: 600s" (step down to C, unset, so B);
			// leaf1's own 0s is below the step and not consulted.
			name: "reclaim lca: leaf3 from leaf1 resolves B's 600s (design doc)",
			args: lca, actions: reclaim, cluster: reclaimCluster(designDocTree, "leaf3", "leaf1"),
			runs: protectedThenExpired(mrStart{annotation: 5 * m}, mrStart{annotation: 15 * m}, reclaimerWins),
		},
		{
			// reclaimResolveMethod queue walks up from the victim's queue: leaf1's own 0s.
			name: "reclaim queue: leaf3 from leaf1 resolves leaf1's own 0s",
			args: byQueue, actions: reclaim, cluster: reclaimCluster(designDocTree, "leaf3", "leaf1"),
			runs: []mrRun{
				{start: mrStart{annotation: 5 * m}, want: reclaimerWins},
				{start: mrStart{annotation: 5 * m}, without: true, want: reclaimerWins},
			},
		},
		{
			name: "reclaim lca: leaf1 from leaf3 resolves D's 60s (design doc)",
			args: lca, actions: reclaim, cluster: reclaimCluster(designDocTree, "leaf1", "leaf3"),
			runs: protectedThenExpired(mrStart{annotation: 30 * time.Second}, mrStart{annotation: 2 * m}, reclaimerWins),
		},
		{
			name: "reclaim lca: leaf1 from leaf2 resolves leaf2's 180s (design doc)",
			args: lca, actions: reclaim, cluster: reclaimCluster(designDocTree, "leaf1", "leaf2"),
			runs: protectedThenExpired(mrStart{annotation: 2 * m}, mrStart{annotation: 5 * m}, reclaimerWins),
		},
		{
			// minruntime_test.go reclaimFilterFn (now-20s protected, now-40s not; lca 30s)
			// and resolver_test.go "both methods" dev-team1 → prod-team2: lca 30s, queue 35s.
			// At 32 minutes lca has expired where queue still protects (next case).
			name: "reclaim lca: dev-team1 from prod-team2 across top-level queues resolves prod's 30 (KAI reclaimFilterFn)",
			args: lca, actions: reclaim, cluster: reclaimCluster(kaiTree, "dev-team1", "prod-team2"),
			runs: []mrRun{
				{start: mrStart{annotation: 20 * m}, want: victimSurvives},
				{start: mrStart{annotation: 32 * m}, want: reclaimerWins},
				{start: mrStart{annotation: 40 * m}, want: reclaimerWins},
				{start: mrStart{annotation: 20 * m}, without: true, want: reclaimerWins},
			},
		},
		{
			name: "reclaim queue: dev-team1 from prod-team2 resolves prod-team2's 35 (KAI reclaimResolveMethod queue)",
			args: byQueue, actions: reclaim, cluster: reclaimCluster(kaiTree, "dev-team1", "prod-team2"),
			runs: protectedThenExpired(mrStart{annotation: 32 * m}, mrStart{annotation: 40 * m}, reclaimerWins),
		},

		// ---- start time
		{
			// The annotation is the start when present (KAI's LastStartTimestamp); the pods'
			// PodScheduled times say the opposite in each run.
			name: "start: kai.scheduler/last-start-timestamp wins over PodScheduled",
			args: lca, actions: preempt, cluster: preemptCluster(single(mr("10m", "")), "q1", 1),
			runs: []mrRun{
				{start: mrStart{annotation: 2 * m, scheduled: []time.Duration{time.Hour}}, want: victimSurvives},
				{start: mrStart{annotation: time.Hour, scheduled: []time.Duration{2 * m}}, want: preemptorWins},
				{start: mrStart{annotation: 2 * m, scheduled: []time.Duration{time.Hour}}, without: true, want: preemptorWins},
			},
		},
		{
			// Without the annotation the job started at its earliest allocated pod's
			// PodScheduled transition: one pod 20m ago is enough to end the protection.
			name: "start: earliest PodScheduled of the job's pods, no annotation",
			args: lca, actions: preempt, cluster: preemptCluster(single(mr("10m", "")), "q1", 2),
			runs: protectedThenExpired(ago(2*m, 5*m), ago(2*m, 20*m), mrWant{
				evicts:    []string{"ns1/victim-0", "ns1/victim-1"},
				pipelined: []string{"ns1/preemptor-0", "ns1/preemptor-1"},
			}),
		},
		{
			// minruntime_test.go "no start time" (preemptFilterFn true); an annotation that
			// does not parse as RFC 3339 is no start time either (KAI ignores it), even with
			// a recent PodScheduled.
			name: "start: no start time is never protected (KAI preemptFilterFn without LastStartTimestamp)",
			args: lca, actions: preempt, cluster: preemptCluster(single(mr("10m", "")), "q1", 1),
			runs: []mrRun{
				{start: mrStart{}, want: preemptorWins},
				{start: mrStart{rawAnnotation: "yesterday", scheduled: []time.Duration{2 * m}}, want: preemptorWins},
				{start: ago(2 * m), want: victimSurvives},
				{start: mrStart{}, without: true, want: preemptorWins},
			},
		},

		// ---- elastic jobs: never below minAvailable while protected
		{
			// KAI e2e reclaim_elastic_test.go "Reclaim elastic job with min runtime
			// protecting": an elastic reclaimee (3 pods, minMember 1, reclaimMinRuntime 90s)
			// gives two pods to reclaimer1 at once; reclaimer2 waits until the 90s are up.
			name: "elastic reclaim: protected reclaimee keeps minMember (KAI e2e reclaim elastic with min runtime)",
			args: lca, actions: reclaim, cluster: elasticReclaimCluster,
			since: "1.14", why: "v1.10.0's reclaim action serves one task per queue pop and ends when the " +
				"popped queue's first job has no task left (it does not push the queue back), so reclaimer2 " +
				"is never considered and the control evicts only two pods, as the protected run does",
			runs: []mrRun{
				{start: mrStart{annotation: 30 * time.Second}, want: mrWant{
					evicts:    []string{"ns1/elastic*", "ns1/elastic*"},
					pipelined: []string{"ns1/reclaimer1-0", "ns1/reclaimer1-1"},
				}},
				{start: mrStart{annotation: 3 * m}, want: elasticAllReclaimed},
				{start: mrStart{annotation: 30 * time.Second}, without: true, want: elasticAllReclaimed},
			},
		},
		{
			// minruntime_test.go preemptScenarioValidatorFn: minAvailable 2 of 3 pods, a
			// scenario taking two is refused while protected; one is allowed (2 ≤ 3-1).
			name: "elastic preempt: protected victim keeps minAvailable (KAI preemptScenarioValidatorFn)",
			args: lca, actions: preempt, cluster: elasticPreemptCluster,
			runs: []mrRun{
				{start: ago(2*m, 2*m, 2*m), want: mrWant{
					evicts: []string{"ns1/elastic*"}, pipelined: []string{"ns1/hi*"},
				}},
				{start: ago(20*m, 20*m, 20*m), want: elasticAllPreempted},
				{start: ago(2*m, 2*m, 2*m), without: true, want: elasticAllPreempted},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runMinRuntimeCase(t, c) })
	}
}

var (
	elasticAllReclaimed = mrWant{
		evicts:    []string{"ns1/elastic-0", "ns1/elastic-1", "ns1/elastic-2"},
		pipelined: []string{"ns1/reclaimer1-0", "ns1/reclaimer1-1", "ns1/reclaimer2-0"},
	}
	elasticAllPreempted = mrWant{
		evicts:    []string{"ns1/elastic-0", "ns1/elastic-1", "ns1/elastic-2"},
		pipelined: []string{"ns1/hi-a-0", "ns1/hi-b-0", "ns1/hi-c-0"},
	}
)

// elasticReclaimCluster mirrors KAI's e2e setup with CPUs for GPUs: parent → {reclaimee
// (deserved 0, reclaim-min-runtime 90s), reclaimers (deserved 3)}; node of 3 CPUs.
// reclaimer1 (2 pods, minMember 2) outranks reclaimer2 (1 pod) in job order, as KAI's
// test creates it first.
func elasticReclaimCluster(s mrStart) Cluster {
	epg, epods := runningJob("ns1", "elastic", "reclaimee", "low-priority", 1, 3, s)
	r1, r1pods := pendingJob("ns1", "reclaimer1", "reclaimers", "high-priority", 2, 2)
	r2, r2pods := pendingJob("ns1", "reclaimer2", "reclaimers", "low-priority", 1, 1)
	return Cluster{
		Nodes:      []*v1.Node{node("n1", "3", "3G")},
		PriClasses: classes(),
		PodGroups:  []*vcapisv1.PodGroup{epg, r1, r2},
		Pods:       append(append(epods, r1pods...), r2pods...),
		Queues: []*vcapisv1.Queue{
			mrQueue("root", "", "", nil),
			mrQueue("parent", "root", "", nil),
			mrQueue("reclaimee", "parent", "0", mr("", "90s")),
			mrQueue("reclaimers", "parent", "3", nil),
		},
	}
}

// elasticPreemptCluster: an elastic low-priority job (3 pods, minMember 2) fills a
// 3-CPU node in q1 (preempt-min-runtime 10m); three high-priority one-pod jobs want in.
func elasticPreemptCluster(s mrStart) Cluster {
	epg, epods := runningJob("ns1", "elastic", "q1", "low-priority", 2, 3, s)
	pgs := []*vcapisv1.PodGroup{epg}
	pods := epods
	for _, name := range []string{"hi-a", "hi-b", "hi-c"} {
		pg, ps := pendingJob("ns1", name, "q1", "high-priority", 1, 1)
		pgs = append(pgs, pg)
		pods = append(pods, ps...)
	}
	return Cluster{
		Nodes:      []*v1.Node{node("n1", "3", "3G")},
		PriClasses: classes(),
		PodGroups:  pgs,
		Pods:       pods,
		Queues:     []*vcapisv1.Queue{mrQueue("root", "", "", nil), mrQueue("q1", "root", "", mr("10m", ""))},
	}
}
