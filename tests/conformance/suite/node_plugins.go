package suite

// Scenarios for the four plugins that judge nodes: nodegroup, usage,
// resource-strategy-fit and task-topology (pkg/scheduler/plugins/<name>/ of
// the Volcano release under test). Each runs Volcano's allocate and backfill
// actions (preempt where a predicate's status code decides whether a node is
// a preemption candidate) once with the in-tree plugin and once with the
// extender pointed at Caldera serving the same plugin and arguments.
//
// Arguments are written as YAML and decoded with gopkg.in/yaml.v2, as
// Volcano's scheduler ConfigMap loader (pkg/scheduler/util.go) does, so nested
// sections reach the in-tree plugin as map[interface{}]interface{} (usage's
// thresholds are only read in that shape) and Caldera gets the same text.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"
	v1 "k8s.io/api/core/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/backfill"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

func backfillNew() framework.Action { return backfill.New() }

// allocBackfill is the action list of every node scenario without eviction.
func allocBackfill() []framework.Action { return []framework.Action{allocateNew(), backfillNew()} }

// allocPreempt runs allocate, then preempt for what allocate could not place.
func allocPreempt() []framework.Action { return []framework.Action{allocateNew(), preemptNew()} }

// pluginArgs decodes plugin arguments the way Volcano loads its ConfigMap.
func pluginArgs(t *testing.T, text string) framework.Arguments {
	t.Helper()
	args := framework.Arguments{}
	if err := yaml.Unmarshal([]byte(text), &args); err != nil {
		t.Fatalf("plugin arguments %q: %v", text, err)
	}
	return args
}

// nodeJudge is the plugin entry under test with predicate and node order on.
func nodeJudge(name string, args framework.Arguments) conf.PluginOption {
	return conf.PluginOption{Name: name, EnabledPredicate: &yes, EnabledNodeOrder: &yes, Arguments: args}
}

func labelledNode(name, cpu, mem string, labels map[string]string, extra ...api.ScalarResource) *v1.Node {
	extra = append(extra, api.ScalarResource{Name: "pods", Value: "10"})
	return buildNode(name, rl(cpu, mem, extra...), labels)
}

// bestEffort is a pod without requests: allocate skips it, backfill places it.
func bestEffort(ns, name, pg string) *v1.Pod {
	return buildPod(ns, name, "", v1.PodPending, v1.ResourceList{}, pg, map[string]string{}, map[string]string{})
}

func pendingN(ns, prefix string, n int, cpu, mem, pg string) []*v1.Pod {
	pods := make([]*v1.Pod, 0, n)
	for i := 0; i < n; i++ {
		pods = append(pods, pending(ns, fmt.Sprintf("%s-%d", prefix, i), cpu, mem, pg))
	}
	return pods
}

func inqueue(name, ns, queue string) *vcapisv1.PodGroup {
	return buildPodGroup(name, ns, queue, 1, vcapisv1.PodGroupInqueue)
}

// withParent sets spec.parent through the JSON form: QueueSpec.Parent does not
// exist in volcano.sh/apis v1.8.2, which this package also compiles against.
func withParent(q *vcapisv1.Queue, parent string) *vcapisv1.Queue {
	patch, _ := json.Marshal(map[string]interface{}{"spec": map[string]string{"parent": parent}})
	if err := json.Unmarshal(patch, q); err != nil {
		panic(err)
	}
	return q
}

// groupAffinity is a queue's spec.affinity over node groups.
type groupAffinity struct{ required, preferred, antiRequired, antiPreferred []string }

func ngQueue(name string, a *groupAffinity) *vcapisv1.Queue {
	q := buildQueue(name, 1, nil)
	if a != nil {
		q.Spec.Affinity = &vcapisv1.Affinity{
			NodeGroupAffinity: &vcapisv1.NodeGroupAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  a.required,
				PreferredDuringSchedulingIgnoredDuringExecution: a.preferred,
			},
			NodeGroupAntiAffinity: &vcapisv1.NodeGroupAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  a.antiRequired,
				PreferredDuringSchedulingIgnoredDuringExecution: a.antiPreferred,
			},
		}
	}
	return q
}

const nodeGroupLabel = "volcano.sh/nodegroup-name" // nodegroup.NodeGroupNameKey

// ngNodes: one 4-CPU node per group a, b, c and one without the label, so that
// every score difference picks a single node.
func ngNodes() []*v1.Node {
	return []*v1.Node{
		labelledNode("n-a", "4", "8G", map[string]string{nodeGroupLabel: "a"}),
		labelledNode("n-b", "4", "8G", map[string]string{nodeGroupLabel: "b"}),
		labelledNode("n-c", "4", "8G", map[string]string{nodeGroupLabel: "c"}),
		labelledNode("n-none", "4", "8G", map[string]string{}),
	}
}

// ---- nodegroup ------------------------------------------------------------------------

// stringStrict is where strictCluster's pods go with `strict: "false"`: strict stays on until
// v1.15.0, whose GetBool parses the string.
func stringStrict() map[string]string {
	if rel.AtLeast("1.15") {
		return map[string]string{"ns1/q-a-0": "n-a", "ns1/q-a-be": "n-a",
			"ns1/q-none-0": "n-none", "ns1/q-none-be": "n-none", "ns1/q-empty-0": "n-none", "ns1/q-empty-be": "n-none"}
	}
	return map[string]string{"ns1/q-a-0": "n-a", "ns1/q-a-be": "n-a"}
}

func testNodeGroupPlugin(t *testing.T) {
	ng := func(args string) []conf.Tier { return []conf.Tier{tier(nodeJudge("nodegroup", pluginArgs(t, args)))} }
	// one job per queue: 2-CPU pods, and a best-effort pod for backfill.
	jobIn := func(c *Cluster, queue string, pods int) {
		pg := "pg-" + queue
		c.PodGroups = append(c.PodGroups, inqueue(pg, "ns1", queue))
		c.Pods = append(c.Pods, pendingN("ns1", queue, pods, "2", "1G", pg)...)
		c.Pods = append(c.Pods, bestEffort("ns1", queue+"-be", pg))
	}
	oneQueue := func(a *groupAffinity, pods int) func() Cluster {
		return func() Cluster {
			c := Cluster{Nodes: ngNodes(), Queues: []*vcapisv1.Queue{ngQueue("q1", a)}}
			jobIn(&c, "q1", pods)
			return c
		}
	}
	// queues with and without affinity side by side, for strict on and off.
	strictCluster := func() Cluster {
		c := Cluster{Nodes: ngNodes(), Queues: []*vcapisv1.Queue{
			ngQueue("q-none", nil), ngQueue("q-a", &groupAffinity{required: []string{"a"}}), ngQueue("q-empty", &groupAffinity{}),
		}}
		for _, q := range []string{"q-none", "q-a", "q-empty"} {
			jobIn(&c, q, 1)
		}
		return c
	}
	// eng requires b, its child eng-ml requires c; eng-cv (child of eng) and
	// eng-ml-x (child of eng-ml) have no affinity of their own.
	hierarchy := func() Cluster {
		c := Cluster{Nodes: ngNodes(), Queues: []*vcapisv1.Queue{
			ngQueue("eng", &groupAffinity{required: []string{"b"}}),
			withParent(ngQueue("eng-ml", &groupAffinity{required: []string{"c"}}), "eng"),
			withParent(ngQueue("eng-cv", nil), "eng"),
			withParent(ngQueue("eng-ml-x", nil), "eng-ml"),
		}}
		jobIn(&c, "eng-cv", 1)
		jobIn(&c, "eng-ml-x", 1)
		return c
	}
	hierTiers := func(on bool) []conf.Tier {
		opt := nodeJudge("nodegroup", nil)
		opt.EnabledHierarchy = &on
		return []conf.Tier{tier(opt)}
	}
	expectBinds := func(want map[string]string) func(*testing.T, Outcome) {
		return func(t *testing.T, o Outcome) {
			t.Helper()
			if sortedMap(o.Binds) != sortedMap(want) {
				t.Fatalf("in-tree run binds %s, expected %s", sortedMap(o.Binds), sortedMap(want))
			}
		}
	}
	runAll(t, []Scenario{
		{Name: "required affinity keeps the queue on its group", Actions: allocBackfill, Plugin: "nodegroup",
			Tiers: ng(""), Cluster: oneQueue(&groupAffinity{required: []string{"a"}}, 2),
			Expect: expectBinds(map[string]string{"ns1/q1-0": "n-a", "ns1/q1-1": "n-a", "ns1/q1-be": "n-a"})},
		{
			// b: required 100 + preferred 50; a: required 100; c: anti-preferred
			// passes the predicate and scores -1; n-none: no label (strict).
			Name: "scores required 100, preferred 50, anti-preferred -1", Actions: allocBackfill, Plugin: "nodegroup",
			Tiers: ng(""), Cluster: oneQueue(&groupAffinity{required: []string{"a", "b"}, preferred: []string{"b"}, antiPreferred: []string{"c"}}, 5),
			Expect: func(t *testing.T, o Outcome) {
				perNode := map[string]int{}
				for _, n := range o.Binds {
					perNode[n]++
				}
				if perNode["n-b"] != 3 || perNode["n-a"] != 2 || perNode["n-c"] != 1 || perNode["n-none"] != 0 {
					t.Fatalf("in-tree run: pods per node %v, expected n-b 3 (2 + best-effort), n-a 2, n-c 1", perNode)
				}
			},
		},
		{Name: "anti-affinity required removes a required group", Actions: allocBackfill, Plugin: "nodegroup",
			Tiers: ng(""), Cluster: oneQueue(&groupAffinity{required: []string{"a", "b"}, antiRequired: []string{"a"}}, 3),
			Expect: func(t *testing.T, o Outcome) {
				for p, n := range o.Binds {
					if n != "n-b" {
						t.Fatalf("in-tree run: %s on %s, only n-b is allowed", p, n)
					}
				}
				if len(o.Binds) != 3 {
					t.Fatalf("in-tree run: want two 2-CPU pods and the best-effort one on n-b, got %v", o.Binds)
				}
			}},
		{Name: "anti-preferred admits an anti-required group", Actions: allocBackfill, Plugin: "nodegroup",
			Tiers: ng(""), Cluster: oneQueue(&groupAffinity{antiRequired: []string{"c"}, antiPreferred: []string{"c"}}, 1),
			Expect: expectBinds(map[string]string{"ns1/q1-0": "n-c", "ns1/q1-be": "n-c"})},
		{Name: "strict true (default): unlabelled nodes and queues without affinity place nothing", Actions: allocBackfill,
			Plugin: "nodegroup", Tiers: ng(""), Cluster: strictCluster,
			Expect: expectBinds(map[string]string{"ns1/q-a-0": "n-a", "ns1/q-a-be": "n-a"})},
		{Name: "strict false: a queue without affinity may use unlabelled nodes", Actions: allocBackfill,
			Plugin: "nodegroup", Tiers: ng("strict: false"), Cluster: strictCluster,
			Expect: expectBinds(map[string]string{"ns1/q-a-0": "n-a", "ns1/q-a-be": "n-a",
				"ns1/q-none-0": "n-none", "ns1/q-none-be": "n-none", "ns1/q-empty-0": "n-none", "ns1/q-empty-be": "n-none"})},
		// GetBool parses strings only from v1.15.0 (5ba79f316): before it strict stays true.
		{Name: "strict as the string \"false\": ignored before v1.15, parsed from it", Actions: allocBackfill,
			Plugin: "nodegroup", Tiers: ng(`strict: "false"`), Cluster: strictCluster,
			Expect: expectBinds(stringStrict())},
		{Name: "enableHierarchy: a queue inherits its nearest ancestor's affinity", Actions: allocBackfill,
			Plugin: "nodegroup", Tiers: hierTiers(true), Cluster: hierarchy,
			Expect: expectBinds(map[string]string{"ns1/eng-cv-0": "n-b", "ns1/eng-cv-be": "n-b",
				"ns1/eng-ml-x-0": "n-c", "ns1/eng-ml-x-be": "n-c"})},
		{Name: "enableHierarchy off: child queues without affinity place nothing", Actions: allocBackfill,
			Plugin: "nodegroup", Tiers: hierTiers(false), Cluster: hierarchy, Expect: expectBinds(map[string]string{})},
	})
	t.Run("preempt skips a node the queue may not use (code 3)", func(t *testing.T) {
		testCode3StopsPreemption(t, "nodegroup", []conf.Tier{tier(priorityEnableEvict), tier(nodeJudge("nodegroup", nil))},
			func() Cluster {
				c := code3PreemptCluster(map[string]string{nodeGroupLabel: "a"}, map[string]string{nodeGroupLabel: "b"})
				c.Queues = []*vcapisv1.Queue{ngQueue("q1", &groupAffinity{required: []string{"a"}})}
				return c
			})
	})
}

// code3PreemptCluster: a high-priority 2-CPU preemptor and two full 2-CPU
// nodes, n-allowed (its pod outranks the preemptor: no victim) and
// n-refused (a low-priority preemptable victim). Only a predicate failure of
// code 2 on n-refused would let preempt evict there.
func code3PreemptCluster(allowedLabels, refusedLabels map[string]string) Cluster {
	return Cluster{
		Nodes: []*v1.Node{
			labelledNode("n-allowed", "2", "4G", allowedLabels),
			labelledNode("n-refused", "2", "4G", refusedLabels),
		},
		PriClasses: append(classes(), buildPriorityClass("top-priority", 10000)),
		PodGroups: []*vcapisv1.PodGroup{
			pgPrio("pg-top", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "top-priority"),
			pgPrio("pg-low", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
			pgPrio("pg-hi", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
		},
		Pods: []*v1.Pod{
			running("ns1", "top-run", "n-allowed", "2", "2G", "pg-top", preemptable()),
			running("ns1", "low-run", "n-refused", "2", "2G", "pg-low", preemptable()),
			pending("ns1", "preemptor", "2", "2G", "pg-hi"),
		},
		Queues: []*vcapisv1.Queue{queue("q1", "", "")},
	}
}

// testCode3StopsPreemption compares in-tree and Caldera on the cluster (no
// eviction: the refusing node is UnschedulableAndUnresolvable), then proves
// the scenario depends on the code: the same Caldera behind a proxy that turns
// its predicate code 3 into 2 (Unschedulable) makes preempt evict low-run.
func testCode3StopsPreemption(t *testing.T, plugin string, tiers []conf.Tier, cluster func() Cluster) {
	s := Scenario{Name: plugin, Cluster: cluster, Actions: allocPreempt, Tiers: tiers, Plugin: plugin, Expect: expectEvicts()}
	compare(t, s)
	if t.Failed() || identifiersMode {
		return // the negative control is the objects mode's (it rewrites the per-node predicate's code)
	}
	_, under := s.extenderTiers("")
	c := startCaldera(t, s.calderaConfig(t, under, cluster()))
	downgrade := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		resp, err := http.Post(c.URL+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if r.URL.Path == "/predicate" {
			var ans map[string]interface{}
			if json.Unmarshal(out, &ans) == nil && ans["code"] == float64(api.UnschedulableAndUnresolvable) {
				ans["code"] = float64(api.Unschedulable)
				out, _ = json.Marshal(ans)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
	}))
	defer downgrade.Close()
	extTiers, _ := s.extenderTiers(downgrade.URL)
	got := runSession(t, cluster(), extTiers, allocPreempt())
	t.Logf("negative control (code 3 answered as 2): %s", got)
	if mustJSON(got.Evicts) != mustJSON([]string{"ns1/low-run"}) {
		t.Errorf("negative control: with code 2 preempt should evict ns1/low-run on n-refused, evicted %v", got.Evicts)
	}
}

// ---- usage ----------------------------------------------------------------------------

const usagePeriod = "10m" // source.NODE_METRICS_PERIOD

func nodeUsage(cpu, mem float64, age time.Duration) *api.NodeUsage {
	return &api.NodeUsage{
		MetricsTime: time.Now().Add(-age),
		CPUUsageAvg: map[string]float64{usagePeriod: cpu},
		MEMUsageAvg: map[string]float64{usagePeriod: mem},
	}
}

func testUsagePlugin(t *testing.T) {
	// u1 CPU 90% and u5 memory 85% are over the default 80% thresholds; u4 is
	// overloaded but its sample is 6 minutes old (stale: passes, scores 0).
	// Default scores: u2 350, u3 325 (cpu.weight 3: u3 387.5, u2 350).
	cluster := func(pods int) func() Cluster {
		return func() Cluster {
			c := Cluster{
				Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
				PodGroups: []*vcapisv1.PodGroup{inqueue("pg1", "ns1", "q1")},
				Pods:      append(pendingN("ns1", "p", pods, "2", "1G", "pg1"), bestEffort("ns1", "be", "pg1")),
				NodeUsage: map[string]*api.NodeUsage{
					"u1": nodeUsage(90, 10, time.Minute), "u2": nodeUsage(30, 30, time.Minute),
					"u3": nodeUsage(10, 60, time.Minute), "u4": nodeUsage(95, 95, 6*time.Minute),
					"u5": nodeUsage(20, 85, time.Minute),
				},
			}
			for _, n := range []string{"u1", "u2", "u3", "u4", "u5"} {
				c.Nodes = append(c.Nodes, labelledNode(n, "4", "8G", nil))
			}
			return c
		}
	}
	usage := func(args string) []conf.Tier { return []conf.Tier{tier(nodeJudge("usage", pluginArgs(t, args)))} }
	perNode := func(want map[string]int) func(*testing.T, Outcome) {
		return func(t *testing.T, o Outcome) {
			t.Helper()
			got := map[string]int{}
			for _, n := range o.Binds {
				got[n]++
			}
			if mustJSON(got) != mustJSON(want) {
				t.Fatalf("in-tree run: pods per node %v, expected %v (%s)", got, want, o)
			}
		}
	}
	runAll(t, []Scenario{
		{Name: "default thresholds and weights; stale metrics pass", Actions: allocBackfill, Plugin: "usage",
			Tiers: usage(""), Cluster: cluster(5),
			Expect: perNode(map[string]int{"u2": 3, "u3": 2, "u4": 1})},
		{Name: "cpu.weight 3 prefers the idle CPU", Actions: allocBackfill, Plugin: "usage",
			Tiers: usage("cpu.weight: 3"), Cluster: cluster(5),
			Expect: perNode(map[string]int{"u3": 3, "u2": 2, "u4": 1})},
		{
			// usage passes a node whose usage equals the threshold (upstream compares with >):
			// u1's CPU 90 and u5's memory 85 sit exactly on them.
			Name: "thresholds cpu 90 mem 85 admit u1 and u5 (usage at the threshold passes)", Actions: allocBackfill, Plugin: "usage",
			Tiers: usage("thresholds:\n  cpu: 90\n  mem: 85\n"), Cluster: cluster(9),
			Expect: perNode(map[string]int{"u2": 3, "u3": 2, "u1": 2, "u5": 2, "u4": 1}),
		},
		{
			// u1 (CPU 90%, memory 10%) passes a 95% CPU threshold and, with
			// memory weighted 5, outscores u2: (0.1 + 0.9*5)/6 > (0.7 + 0.7*5)/6.
			Name: "memory.weight 5, usage.weight 2, thresholds.cpu 95 prefer u1's idle memory", Actions: allocBackfill,
			Plugin: "usage", Tiers: usage("usage.weight: 2\nmemory.weight: 5\nthresholds:\n  cpu: 95\n"), Cluster: cluster(5),
			Expect: perNode(map[string]int{"u1": 3, "u2": 2, "u3": 1})},
	})
	t.Run("preempt skips an overloaded node (code 3)", func(t *testing.T) {
		testCode3StopsPreemption(t, "usage", []conf.Tier{tier(priorityEnableEvict), tier(nodeJudge("usage", nil))},
			func() Cluster {
				c := code3PreemptCluster(nil, nil)
				c.NodeUsage = map[string]*api.NodeUsage{
					"n-allowed": nodeUsage(20, 20, time.Minute), "n-refused": nodeUsage(90, 20, time.Minute),
				}
				return c
			})
	})
}

// ---- resource-strategy-fit --------------------------------------------------------

func testResourceStrategyFitPlugin(t *testing.T) {
	rsf := func(args string) []conf.Tier {
		return []conf.Tier{tier(nodeJudge("resource-strategy-fit", pluginArgs(t, args)))}
	}
	// rsfBeside shares rsf's tier with in-tree binpack (binpack.weight, cpu and memory 1 each
	// unless args say otherwise), which prefers the fuller node where rsf's LeastAllocated
	// prefers the emptier one: without rsf's scores the winner is binpack's (no random
	// tie-break), and rsf's weight decides whether it outweighs binpack.
	rsfBeside := func(args, binpackArgs string) []conf.Tier {
		return []conf.Tier{tier(nodeJudge("resource-strategy-fit", pluginArgs(t, args)),
			conf.PluginOption{Name: "binpack", EnabledNodeOrder: &yes, Arguments: pluginArgs(t, binpackArgs)})}
	}
	gpuNode := func(name, cpu, mem, gpus string) *v1.Node { return labelledNode(name, cpu, mem, nil, gpu(gpus)) }
	// r1 runs a 4-CPU pod, r2 is empty.
	cpuCluster := func(extra ...*v1.Pod) func() Cluster {
		return func() Cluster {
			c := Cluster{
				Nodes:     []*v1.Node{labelledNode("r1", "8", "16G", nil), labelledNode("r2", "8", "16G", nil)},
				Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
				PodGroups: []*vcapisv1.PodGroup{inqueue("pg-run", "ns1", "q1"), inqueue("pg1", "ns1", "q1")},
				Pods:      append([]*v1.Pod{running("ns1", "run", "r1", "4", "4G", "pg-run", nil)}, pendingN("ns1", "p", 3, "1", "1G", "pg1")...),
			}
			for i, p := range extra {
				p = p.DeepCopy()
				pg := fmt.Sprintf("pg-x%d", i)
				c.PodGroups = append(c.PodGroups, inqueue(pg, "ns1", "q1"))
				p.Annotations[vcapisv1.KubeGroupNameAnnotationKey] = pg
				c.Pods = append(c.Pods, p)
			}
			return c
		}
	}
	// g1 runs a pod holding 2 of its 4 GPUs, g2 a pod with the same CPU and
	// memory and no GPU: only the GPU term tells them apart.
	gpuCluster := func() Cluster {
		return Cluster{
			Nodes:  []*v1.Node{gpuNode("g1", "8", "16G", "4"), gpuNode("g2", "8", "16G", "4")},
			Queues: []*vcapisv1.Queue{queue("q1", "", "")},
			PodGroups: []*vcapisv1.PodGroup{inqueue("pg-run1", "ns1", "q1"), inqueue("pg-run2", "ns1", "q1"),
				inqueue("pg1", "ns1", "q1")},
			Pods: []*v1.Pod{
				buildPod("ns1", "run1", "g1", v1.PodRunning, rl("1", "1G", gpu("2")), "pg-run1", map[string]string{}, nil),
				buildPod("ns1", "run2", "g2", v1.PodRunning, rl("1", "1G"), "pg-run2", map[string]string{}, nil),
				buildPod("ns1", "gp-0", "", v1.PodPending, rl("1", "1G", gpu("1")), "pg1", map[string]string{}, nil),
				buildPod("ns1", "gp-1", "", v1.PodPending, rl("1", "1G", gpu("1")), "pg1", map[string]string{}, nil),
				buildPod("ns1", "gp-2", "", v1.PodPending, rl("1", "1G", gpu("1")), "pg1", map[string]string{}, nil),
			},
		}
	}
	// g1 has GPUs and the most free CPU; c1 has none. A CPU pod, a GPU pod and
	// a best-effort pod, each its own job.
	sraCluster := func(cpuPod string) func() Cluster {
		return func() Cluster {
			return Cluster{
				Nodes:  []*v1.Node{gpuNode("g1", "10", "20G", "2"), labelledNode("c1", "4", "8G", nil)},
				Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				PodGroups: []*vcapisv1.PodGroup{inqueue("pg-cpu", "ns1", "q1"), inqueue("pg-gpu", "ns1", "q1"),
					inqueue("pg-be", "ns1", "q1")},
				Pods: []*v1.Pod{
					pending("ns1", "cpu-pod", cpuPod, "1G", "pg-cpu"),
					buildPod("ns1", "gpu-pod", "", v1.PodPending, rl("6", "2G", gpu("1")), "pg-gpu", map[string]string{}, nil),
					bestEffort("ns1", "be", "pg-be"),
				},
			}
		}
	}
	// proportionalCluster: g1 is half used by a CPU pod, so its free 8 CPUs and 16 GB are
	// what its two idle GPUs reserve (4 CPUs and 8 GB each).
	proportionalCluster := func() Cluster {
		return Cluster{
			Nodes:  []*v1.Node{gpuNode("g1", "16", "32G", "2"), labelledNode("c1", "4", "8G", nil)},
			Queues: []*vcapisv1.Queue{queue("q1", "", "")},
			PodGroups: []*vcapisv1.PodGroup{inqueue("pg-run", "ns1", "q1"), inqueue("pg-cpu", "ns1", "q1"),
				inqueue("pg-gpu", "ns1", "q1")},
			Pods: []*v1.Pod{
				running("ns1", "run", "g1", "8", "16G", "pg-run", nil),
				pending("ns1", "cpu-pod", "3", "1G", "pg-cpu"),
				buildPod("ns1", "gpu-pod", "", v1.PodPending, rl("2", "2G", gpu("1")), "pg-gpu", map[string]string{}, nil),
			},
		}
	}
	mostCPU := annotate(annotate(pending("ns1", "most", "1", "1G", ""), "volcano.sh/resource-strategy-scoring-type", "MostAllocated"),
		"volcano.sh/resource-strategy-weight", `{"cpu": 1}`)
	// encoding/json stores a null map value as the element's zero value, no error: weight 0 for
	// cpu, memory still scored (Caldera once threw the whole annotation away).
	nullCPU := annotate(annotate(pending("ns1", "most", "1", "1G", ""), "volcano.sh/resource-strategy-scoring-type", "MostAllocated"),
		"volcano.sh/resource-strategy-weight", `{"cpu": null, "memory": 2}`)
	onNodes := func(want map[string]string) func(*testing.T, Outcome) {
		return func(t *testing.T, o Outcome) {
			t.Helper()
			for p, n := range want {
				if o.Binds[p] != n {
					t.Fatalf("in-tree run: %s on %q, expected %s (%s)", p, o.Binds[p], n, o)
				}
			}
		}
	}
	const sra = "sra:\n  enable: true\n  resources: nvidia.com/gpu\n  weight: 10\n  resourceWeight:\n    nvidia.com/gpu: 1\n"
	const proportional = "proportional:\n  enable: true\n  resources: nvidia.com/gpu\n  resourceProportion:\n" +
		"    nvidia.com/gpu.cpu: 4\n    nvidia.com/gpu.memory: 8\n"
	runAll(t, []Scenario{
		{
			// rsf (weight 10) prefers r2 by 375, 281 and 187.5 for the three pods; binpack
			// prefers r1 by 37.5, 28.1 and 18.75: without rsf's scores all three go to r1.
			Name: "default LeastAllocated cpu and memory, beside binpack", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsfBeside("", "binpack.weight: 1\n"), Cluster: cpuCluster(),
			Expect: onNodes(map[string]string{"ns1/p-0": "r2", "ns1/p-1": "r2", "ns1/p-2": "r2"}),
		},
		{
			// CPU only. rsf at weight 20 prefers r2 by 1000, 750 and 500 for the three pods,
			// binpack at weight 15 prefers r1 by 750, 562.5 and 375: rsf wins each. At the
			// default weight 10 (the weight ignored) rsf's 500 loses the first pod to binpack's
			// 750, and the rest follow it to r1.
			Name: "LeastAllocated cpu, weight 20, outweighs binpack weight 15", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsfBeside("resourceStrategyFitWeight: 20\nresources:\n  cpu:\n    type: LeastAllocated\n    weight: 1\n",
				"binpack.weight: 15\nbinpack.cpu: 1\nbinpack.memory: 0\n"), Cluster: cpuCluster(),
			Expect: onNodes(map[string]string{"ns1/p-0": "r2", "ns1/p-1": "r2", "ns1/p-2": "r2"}),
		},
		{Name: "pod annotations override the configured strategy", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsf(""), Cluster: cpuCluster(mostCPU),
			Expect: onNodes(map[string]string{"ns1/most": "r1", "ns1/p-0": "r2"})},
		{Name: "a null pod weight is zero, not an invalid annotation", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsf(""), Cluster: cpuCluster(nullCPU),
			Expect: onNodes(map[string]string{"ns1/most": "r1", "ns1/p-0": "r2"})},
		{Name: "wildcard nvidia.com/* MostAllocated packs GPUs", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers:   rsf("resources:\n  nvidia.com/*:\n    type: MostAllocated\n    weight: 2\n  cpu:\n    type: LeastAllocated\n    weight: 1\n"),
			Cluster: gpuCluster,
			Expect:  onNodes(map[string]string{"ns1/gp-0": "g1", "ns1/gp-1": "g1", "ns1/gp-2": "g2"})},
		{Name: "exact key nvidia.com/gpu wins over the wildcard", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsf("resources:\n  nvidia.com/*:\n    type: MostAllocated\n    weight: 2\n  nvidia.com/gpu:\n    type: LeastAllocated\n" +
				"    weight: 2\n  cpu:\n    type: LeastAllocated\n    weight: 1\n"),
			Cluster: gpuCluster,
			Expect:  onNodes(map[string]string{"ns1/gp-0": "g2", "ns1/gp-1": "g2", "ns1/gp-2": "g1"})},
		{
			// rsf (weight 10) prefers g1 by 112.5 for cpu-pod, binpack prefers c1 by 11.25:
			// without rsf's scores cpu-pod goes to c1.
			Name: "without sra a CPU pod takes the GPU node, beside binpack", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsfBeside("", "binpack.weight: 1\n"), Cluster: sraCluster("1"), Diff: diffBindsExceptBestEffort,
			Expect: onNodes(map[string]string{"ns1/cpu-pod": "g1", "ns1/gpu-pod": "g1"})},
		{Name: "sra keeps CPU and best-effort pods off GPU nodes", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsf(sra), Cluster: sraCluster("1"),
			Expect: onNodes(map[string]string{"ns1/cpu-pod": "c1", "ns1/gpu-pod": "g1", "ns1/be": "c1"})},
		{
			// g1 (16 CPUs, 32 GB, two idle GPUs) keeps 16 CPUs and 32 GB for them: the 3-CPU pod
			// fails proportional there. g1 is half full, so binpack prefers it for cpu-pod
			// (0.61 against c1's 0.44) and so does nothing else: without the filter cpu-pod
			// goes to g1, whatever rsf scores.
			Name: "proportional keeps 4 CPUs and 8 GB per idle GPU", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsfBeside(proportional, "binpack.weight: 1\n"), Cluster: proportionalCluster, Diff: diffBindsExceptBestEffort,
			Expect: onNodes(map[string]string{"ns1/cpu-pod": "c1", "ns1/gpu-pod": "g1"})},
		{Name: "proportional admits a small CPU pod", Actions: allocBackfill, Plugin: "resource-strategy-fit",
			Tiers: rsf(proportional), Cluster: sraCluster("1"), Diff: diffBindsExceptBestEffort},
	})
	t.Run("preempt skips a node whose idle GPU reserves its CPU (code 3)", func(t *testing.T) {
		// n-refused keeps 4 CPUs and 8 GB for its idle GPU: a CPU-only
		// preemptor fails proportional there whatever preempt would free.
		testCode3StopsPreemption(t, "resource-strategy-fit",
			[]conf.Tier{tier(priorityEnableEvict), tier(nodeJudge("resource-strategy-fit", pluginArgs(t, proportional)))},
			func() Cluster {
				c := code3PreemptCluster(nil, nil)
				c.Nodes[1] = labelledNode("n-refused", "2", "4G", nil, gpu("1"))
				return c
			})
	})
}

// diffBindsExceptBestEffort is diff without the node of ns1/be: without sra
// every node scores 0 for a pod without requests, so Volcano picks at random.
func diffBindsExceptBestEffort(a, b Outcome) string {
	strip := func(o Outcome) Outcome {
		c := o
		c.Binds = map[string]string{}
		for k, v := range o.Binds {
			if k == "ns1/be" {
				v = "*"
			}
			c.Binds[k] = v
		}
		return c
	}
	return diff(strip(a), strip(b))
}

// ---- task-topology ------------------------------------------------------------------

const taskSpecKey = "volcano.sh/task-spec" // batch v1alpha1.TaskSpecKey

func taskPod(p *v1.Pod, spec string) *v1.Pod { return annotate(p, taskSpecKey, spec) }

func topologyGroup(name, ns string, min int32, annotations map[string]string) *vcapisv1.PodGroup {
	pg := buildPodGroup(name, ns, "q1", min, vcapisv1.PodGroupInqueue)
	pg.Annotations = annotations
	return pg
}

// topologyOption keeps TaskOrderFn in the residual in-tree entry (the extender
// cannot carry it), so both runs pop tasks in the same order.
func topologyOption(args framework.Arguments) conf.PluginOption {
	opt := nodeJudge("task-topology", args)
	opt.EnabledPredicate = nil
	opt.EnabledTaskOrder = &yes
	return opt
}

func testTaskTopologyPlugin(t *testing.T) {
	nodes := func() []*v1.Node {
		return []*v1.Node{labelledNode("t1", "4", "8G", nil), labelledNode("t2", "4", "8G", nil), labelledNode("t3", "4", "8G", nil)}
	}
	job := func(annotations map[string]string, pods ...*v1.Pod) func() Cluster {
		return func() Cluster {
			c := Cluster{Nodes: nodes(), Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				PodGroups: []*vcapisv1.PodGroup{topologyGroup("pg1", "ns1", 1, annotations)}}
			for _, p := range pods {
				c.Pods = append(c.Pods, p.DeepCopy())
			}
			return c
		}
	}
	task := func(name, spec string) *v1.Pod { return taskPod(pending("ns1", name, "1", "1G", "pg1"), spec) }
	psWorkers := []*v1.Pod{task("ps-0", "ps"), task("ps-1", "ps"), task("worker-0", "worker"), task("worker-1", "worker"),
		task("worker-2", "worker"), task("worker-3", "worker"), taskPod(bestEffort("ns1", "worker-be", "pg1"), "worker")}
	tiers := func(args string) []conf.Tier { return []conf.Tier{tier(topologyOption(pluginArgs(t, args)))} }
	// besideBinpack shares task-topology's tier with in-tree binpack (binpack.weight 3), which
	// pulls each 1-CPU task toward fuller nodes by 56.25 per task already there, against
	// task-topology's 100/3 per bucket point and weight unit.
	besideBinpack := func(args string) []conf.Tier {
		return []conf.Tier{tier(topologyOption(pluginArgs(t, args)),
			conf.PluginOption{Name: "binpack", EnabledNodeOrder: &yes, Arguments: pluginArgs(t, "binpack.weight: 3\n")})}
	}
	// the first task of a bucket meets equal scores everywhere (Volcano picks a
	// node at random); what the plugin decides is which tasks share a node.
	// Upstream's remove-until-fits loop walks a Go map: with tasks of unequal
	// requests (a best-effort task among 1-CPU ones) in a bucket that overflows
	// a node, the score itself is random, so every scenario keeps its
	// overflowing buckets to equal requests.
	colocated := func(groups ...[]string) func(*testing.T, Outcome) {
		return func(t *testing.T, o Outcome) {
			t.Helper()
			if got, want := colocation(o), colocationOf(groups); got != want {
				t.Fatalf("in-tree run: nodes hold %s, expected %s", got, want)
			}
		}
	}
	runAll(t, []Scenario{
		{
			// buckets: {ps-0, worker-0, worker-2, worker-be}, {ps-1, worker-1,
			// worker-3}; ps is self-anti-affine, so the second bucket avoids the
			// first one's node once allocate has put a ps there.
			Name: "affinity ps,worker with anti-affinity ps", Actions: allocBackfill, Plugin: "task-topology", Residual: true,
			Tiers: tiers(""), Diff: diffColocation,
			Cluster: job(map[string]string{"volcano.sh/task-topology-affinity": "ps,worker",
				"volcano.sh/task-topology-anti-affinity": "ps"}, psWorkers...),
			Expect: colocated([]string{"ps-0", "worker-0", "worker-2", "worker-be"}, []string{"ps-1", "worker-1", "worker-3"}),
		},
		{
			// Beside binpack at weight 3: whichever goes first, the anti-affinity keeping ps-0
			// and the workers apart is worth 100 (one worker beside ps) or 300 (ps beside three
			// workers) at weight 3 against binpack's 56.25 or 168.75 pull, and loses at
			// task-topology's default weight 1 (33.3 or 100): a wrong weight changes the
			// co-location.
			Name: "self-affine workers, ps anti-affine to workers, weight 3, beside binpack", Actions: allocBackfill, Plugin: "task-topology",
			Residual: true, Tiers: besideBinpack("task-topology.weight: 3"), Diff: diffColocation,
			Cluster: job(map[string]string{"volcano.sh/task-topology-affinity": "worker",
				"volcano.sh/task-topology-anti-affinity": "ps,worker"},
				task("ps-0", "ps"), task("worker-0", "worker"), task("worker-1", "worker"), task("worker-2", "worker")),
			Expect: colocated([]string{"ps-0"}, []string{"worker-0", "worker-1", "worker-2"}),
		},
		{
			// task-order worker,ps sorts the workers first when buckets are
			// built: no worker is anti-affine, so all six tasks share one
			// bucket (without the order, two buckets of three). On nodes of
			// 6, 4 and 2 CPUs the 6-CPU bucket fits only t1, every score has a
			// single maximum, and the whole job lands on t1 (ps-1 still
			// scores 5 there against 1 on t2 despite ps's anti-affinity).
			Name: "task order annotation builds one bucket", Actions: allocBackfill, Plugin: "task-topology", Residual: true,
			Tiers: tiers(""),
			Cluster: func() Cluster {
				c := job(map[string]string{"volcano.sh/task-topology-affinity": "ps,worker",
					"volcano.sh/task-topology-anti-affinity": "ps", "volcano.sh/task-topology-task-order": "worker,ps"},
					psWorkers[:6]...)()
				c.Nodes = []*v1.Node{labelledNode("t1", "6", "8G", nil), labelledNode("t2", "4", "8G", nil),
					labelledNode("t3", "2", "8G", nil)}
				return c
			},
			Expect: func(t *testing.T, o Outcome) {
				for p, n := range o.Binds {
					if n != "t1" {
						t.Fatalf("in-tree run: %s on %s, expected the whole job on t1 (%s)", p, n, o)
					}
				}
				if len(o.Binds) != 6 {
					t.Fatalf("in-tree run: expected 6 binds, got %s", o)
				}
			},
		},
		{
			// an annotation naming a task the job lacks: the plugin ignores the job.
			Name:    "invalid annotation leaves the job alone",
			Abstain: abstain(controlNoPlugin, "an invalid annotation makes task-topology score nothing, as no plugin: placement is Volcano's own (random among ties); allocate asks no victim verb, so there is no other control"), Actions: allocBackfill, Plugin: "task-topology", Residual: true,
			Tiers: tiers(""), Diff: diffIgnoringNodes,
			Cluster: job(map[string]string{"volcano.sh/task-topology-affinity": "ps,chief"}, psWorkers[:3]...),
		},
	})
	t.Run("rollback keeps the buckets of a discarded statement", testTopologyRollback)
}

// testTopologyRollback: a gang of 4 (ps-0, ps-1, the best-effort ps-be, and
// big-0, 8 CPUs, which fits nowhere) with ps self-anti-affine. Only node-x
// fits a 1-CPU pod, so allocate puts ps-0 and ps-1 there, then big-0 fails,
// gang discards the statement and Volcano sends deallocate for both.
// task-topology has no DeallocateFunc: its allocate records (two ps on
// node-x) survive the rollback, and backfill then scores node-x -1 and
// node-y +1 for ps-be, which stays Allocated on node-y (the job is not ready).
// Caldera must keep the same state through the deallocate events.
func testTopologyRollback(t *testing.T) {
	gangOpt := conf.PluginOption{Name: "gang", EnabledJobOrder: &yes, EnabledJobReady: &yes, EnabledJobPipelined: &yes,
		EnabledJobStarving: &yes}
	cluster := func() Cluster {
		return Cluster{
			Nodes:  []*v1.Node{labelledNode("node-x", "4", "8G", nil), labelledNode("node-y", "500m", "8G", nil)},
			Queues: []*vcapisv1.Queue{queue("q1", "", "")},
			PodGroups: []*vcapisv1.PodGroup{topologyGroup("pg1", "ns1", 4,
				map[string]string{"volcano.sh/task-topology-anti-affinity": "ps"})},
			Pods: []*v1.Pod{
				taskPod(pending("ns1", "ps-0", "1", "1G", "pg1"), "ps"),
				taskPod(pending("ns1", "ps-1", "1", "1G", "pg1"), "ps"),
				taskPod(bestEffort("ns1", "ps-be", "pg1"), "ps"),
				taskPod(pending("ns1", "big-0", "8", "1G", "pg1"), "big"),
			},
		}
	}
	s := Scenario{Cluster: cluster, Actions: allocBackfill, Plugin: "task-topology", Residual: true,
		Tiers: []conf.Tier{tier(gangOpt, topologyOption(nil))}}
	want := runSession(t, cluster(), s.Tiers, allocBackfill())
	t.Logf("in-tree : %s", want)
	if sortedMap(want.Allocated) != sortedMap(map[string]string{"ns1/ps-be": "node-y"}) || len(want.Binds) != 0 {
		t.Fatalf("in-tree run: expected only ns1/ps-be Allocated on node-y, got %s", want)
	}
	got, rec, _ := extenderSession(t, s)
	t.Logf("extender%s: %s\nCaldera answered %s", bodiesNote(), got, rec)
	if d := diff(want, got); d != "" {
		t.Errorf("extender run%s differs from in-tree task-topology:\n%s", bodiesNote(), d)
	}
	if calls := rec.Answered(); calls["allocate"] < 2 || calls["deallocate"] < 2 {
		t.Errorf("expected the two allocations and their rollback to reach Caldera, answered %v", calls)
	}
	if identifiersMode {
		checkIdentifierBodies(t, rec)
	}
}

// colocation is the outcome's placements up to node names: the sorted groups
// of pods (bound, allocated or pipelined) sharing a node.
func colocation(o Outcome) string {
	byNode := map[string][]string{}
	for _, m := range []map[string]string{o.Binds, o.Allocated, o.Pipelined} {
		for pod, node := range m {
			byNode[node] = append(byNode[node], pod[strings.Index(pod, "/")+1:])
		}
	}
	groups := make([][]string, 0, len(byNode))
	for _, pods := range byNode {
		groups = append(groups, pods)
	}
	return colocationOf(groups)
}

func colocationOf(groups [][]string) string {
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		g = append([]string(nil), g...)
		sort.Strings(g)
		parts = append(parts, "{"+strings.Join(g, ",")+"}")
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// diffColocation compares which pods share a node (not which node), for
// identical nodes where Volcano breaks the first tie at random; evictions and
// phases exactly.
func diffColocation(a, b Outcome) string {
	var out []string
	if ca, cb := colocation(a), colocation(b); ca != cb {
		out = append(out, fmt.Sprintf("co-location: in-tree %s, extender %s", ca, cb))
	}
	strip := func(o Outcome) Outcome {
		c := o
		c.Binds, c.Allocated, c.Pipelined = nil, nil, nil
		return c
	}
	if d := diff(strip(a), strip(b)); d != "" {
		out = append(out, d)
	}
	return strings.Join(out, "\n")
}
