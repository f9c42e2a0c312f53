package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// ---- recording / counting HTTP servers --------------------------------------------

// Recorder is an HTTP server the extender posts to. Each request is recorded
// (verb, raw body, pod names it carries); the response comes from upstream
// (a proxy to Caldera) or from respond.
type Recorder struct {
	*httptest.Server
	mu       sync.Mutex
	calls    map[string]int
	pods     map[string]map[string]bool // verb -> pod names seen in task/evictor
	bodies   map[string][]byte          // verb -> first body
	upstream string
	respond  func(verb string, body []byte) (int, string)
}

func newRecorder(t *testing.T, upstream string, respond func(string, []byte) (int, string)) *Recorder {
	r := &Recorder{calls: map[string]int{}, pods: map[string]map[string]bool{}, bodies: map[string][]byte{},
		upstream: upstream, respond: respond}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *Recorder) serve(w http.ResponseWriter, req *http.Request) {
	verb := strings.TrimPrefix(req.URL.Path, "/")
	body, _ := io.ReadAll(req.Body)
	var probe struct {
		Task    *struct{ Pod *v1.Pod } `json:"task"`
		Evictor *struct{ Pod *v1.Pod } `json:"evictor"`
	}
	_ = json.Unmarshal(body, &probe)
	r.mu.Lock()
	r.calls[verb]++
	if _, ok := r.bodies[verb]; !ok {
		r.bodies[verb] = body
	}
	for _, ti := range []*struct{ Pod *v1.Pod }{probe.Task, probe.Evictor} {
		if ti != nil && ti.Pod != nil {
			if r.pods[verb] == nil {
				r.pods[verb] = map[string]bool{}
			}
			r.pods[verb][ti.Pod.Name] = true
		}
	}
	r.mu.Unlock()

	if r.upstream != "" {
		resp, err := http.Post(r.upstream+req.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	code, out := r.respond(verb, body)
	w.WriteHeader(code)
	_, _ = io.WriteString(w, out)
}

func (r *Recorder) Calls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.calls {
		out[k] = v
	}
	return out
}

func (r *Recorder) PodsSeen(verb string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for p := range r.pods[verb] {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// neutral answers every verb without changing the scheduling outcome.
func neutral(verb string, _ []byte) (int, string) {
	switch verb {
	case "predicate":
		return 200, `{"status":"","code":0}`
	case "prioritize":
		return 200, `{"nodeScore":{},"errorMessage":""}`
	case "preemptable", "reclaimable":
		return 200, `{"status":0,"victims":null}`
	case "jobEnqueueable":
		return 200, `{"status":0}`
	case "queueOverused":
		return 200, `{"overused":false}`
	case "jobReady":
		return 200, `{"status":true}`
	case "allocate", "deallocate", "allocateFunc", "deallocateFunc":
		return 200, `{"errorMessage":""}`
	}
	return 200, `{}`
}

func allFlags() conf.PluginOption {
	return conf.PluginOption{EnabledPredicate: &yes, EnabledNodeOrder: &yes, EnabledPreemptable: &yes,
		EnabledReclaimable: &yes, EnabledJobEnqueued: &yes, EnabledOverused: &yes, EnabledJobReady: &yes}
}

func verbs(keys ...string) map[string]string {
	m := map[string]string{}
	for _, k := range keys {
		m[k] = calderaVerbs[k]
	}
	return m
}

// ---- managedResources ----------------------------------------------------------------

func testManagedResourcesFiltering(t *testing.T) {
	cluster := func() Cluster {
		gpuPod := pending("ns1", "gpu-pod", "1", "1G", "pg-gpu")
		gpuPod.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = rl("0", "0", gpu("1"))["nvidia.com/gpu"]
		limitsPod := pending("ns1", "gpu-limits-pod", "1", "1G", "pg-gpu2")
		limitsPod.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": gpuPod.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]}
		limitsPod.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = limitsPod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		return Cluster{
			Nodes: []*v1.Node{
				util_BuildNodeGPU("node-a"), util_BuildNodeGPU("node-b"),
			},
			PodGroups: []*vcapisv1.PodGroup{
				pgPrio("pg-gpu", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, ""),
				pgPrio("pg-gpu2", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, ""),
				pgPrio("pg-cpu", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, ""),
			},
			Pods:   []*v1.Pod{gpuPod, limitsPod, pending("ns1", "cpu-pod", "1", "1G", "pg-cpu")},
			Queues: []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	actions := func() []framework.Action { return []framework.Action{allocateNew()} }
	baseline := runSession(t, cluster(), nil, actions())
	t.Logf("no extender: %s", baseline)

	c := startCaldera(t, CalderaConfig{ManagedResources: []string{"nvidia.com/gpu"}})
	proxy := newRecorder(t, c.URL, nil)
	opt := extenderOption(proxy.URL, allFlags(), ExtOpts{ManagedResources: []string{"nvidia.com/gpu"}})
	ext := runSession(t, cluster(), []conf.Tier{tier(opt)}, actions())
	t.Logf("extender  : %s", ext)
	t.Logf("calls: %v", proxy.Calls())
	if d := diffIgnoringNodes(baseline, ext); d != "" {
		t.Errorf("pass-through Caldera changed the outcome:\n%s", d)
	}
	for _, verb := range []string{"predicate", "prioritize", "allocate", "deallocate", "preemptable", "reclaimable"} {
		for _, p := range proxy.PodsSeen(verb) {
			if p == "cpu-pod" {
				t.Errorf("extender asked %s about CPU-only pod %s", verb, p)
			}
		}
	}
	if seen := proxy.PodsSeen("predicate"); len(seen) == 0 {
		t.Errorf("GPU pods never reached predicate (calls %v)", proxy.Calls())
	} else {
		t.Logf("predicate saw %v", seen)
	}
	if proxy.Calls()["allocate"] == 0 {
		t.Errorf("allocate verb never called for GPU pods")
	}
}

// util_BuildNodeGPU is a node with 4 GPUs.
func util_BuildNodeGPU(name string) *v1.Node {
	n := node(name, "8", "8G")
	for k, v := range rl("0", "0", gpu("4")) {
		if k == "nvidia.com/gpu" {
			n.Status.Allocatable[k] = v
			n.Status.Capacity[k] = v
		}
	}
	return n
}

// ---- predicate dialect ----------------------------------------------------------------

// testPredicateDialect runs an allocation through Caldera's predicate and
// prioritize verbs with no plugin behind them (ignorable=false): the pass
// answer must decode in this release's predicate dialect ({"status","code"}
// from 1.10, {"status":[{"Code","Reason"}]} in 1.8-1.9), or every node is
// rejected. The negative control serves the other dialect and must bind
// nothing, which shows the first run really depended on the dialect.
func testPredicateDialect(t *testing.T) {
	cluster := func() Cluster {
		return Cluster{
			Nodes:     []*v1.Node{node("node1", "4", "4G"), node("node2", "4", "4G")},
			PodGroups: []*vcapisv1.PodGroup{pgPrio("pg1", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "")},
			Pods:      []*v1.Pod{pending("ns1", "p1", "1", "1G", "pg1"), pending("ns1", "p2", "1", "1G", "pg1")},
			Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	alloc := func() []framework.Action { return []framework.Action{allocateNew()} }
	base := runSession(t, cluster(), nil, alloc())
	if len(base.Binds) != 2 {
		t.Fatalf("baseline should bind both pods: %s", base)
	}
	flags := conf.PluginOption{EnabledPredicate: &yes, EnabledNodeOrder: &yes}
	ev := ExtOpts{Verbs: verbs(verbPredicate, verbPrioritize)}
	other := "1.8"
	if !rel.AtLeast("1.10") {
		other = "1.14"
	}
	for _, tc := range []struct {
		name, version string
		wantBinds     bool
	}{{"volcanoVersion " + rel.Version, "", true}, {"negative control: volcanoVersion " + other, other, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCaldera(t, CalderaConfig{VolcanoVersion: tc.version})
			proxy := newRecorder(t, c.URL, nil)
			got := runSession(t, cluster(), []conf.Tier{tier(extenderOption(proxy.URL, flags, ev))}, alloc())
			t.Logf("baseline %s\nextender %s\ncalls %v", base, got, proxy.Calls())
			if proxy.Calls()["predicate"] == 0 {
				t.Fatalf("predicate verb never called")
			}
			if tc.wantBinds {
				if d := diffIgnoringNodes(base, got); d != "" {
					t.Errorf("pass-through predicate changed the outcome:\n%s", d)
				}
			} else if len(got.Binds) != 0 {
				t.Errorf("the other dialect's predicate answer was accepted: binds %v", got.Binds)
			}
		})
	}
}

// ---- ignorable (protocol reference §1.4), with nothing listening ------------------------

func testIgnorable(t *testing.T) {
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) // "Caldera stopped"
	allocCluster := func() Cluster {
		return Cluster{
			Nodes:     []*v1.Node{node("node1", "4", "4G"), node("node2", "4", "4G")},
			PodGroups: []*vcapisv1.PodGroup{pgPrio("pg1", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "")},
			Pods:      []*v1.Pod{pending("ns1", "p1", "1", "1G", "pg1")},
			Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	enqCluster := func() Cluster {
		return Cluster{
			Nodes:     []*v1.Node{node("node1", "4", "4G")},
			PodGroups: []*vcapisv1.PodGroup{pgMin("pg1", "ns1", "q1", 1, rl("1", "1G"), vcapisv1.PodGroupPending)},
			Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	alloc := func() []framework.Action { return []framework.Action{allocateNew()} }
	enq := func() []framework.Action { return []framework.Action{enqueueNew()} }
	noOpen := map[string]string{}
	for k, v := range allVerbs() {
		if k != verbOnSessionOpen {
			noOpen[k] = v
		}
	}
	withoutJobReady := map[string]string{}
	for k, v := range allVerbs() {
		if k != verbJobReady {
			withoutJobReady[k] = v
		}
	}
	base := runSession(t, allocCluster(), nil, alloc())
	baseEnq := runSession(t, enqCluster(), nil, enq())
	if base.Binds["ns1/p1"] == "" || baseEnq.Phases["ns1/pg1"] != "Inqueue" {
		t.Fatalf("baseline unexpected: %s / %s", base, baseEnq)
	}
	cases := []struct {
		name    string
		cluster func() Cluster
		actions func() []framework.Action
		o       ExtOpts
		check   func(t *testing.T, o Outcome)
		since   string // first release it applies to (allocateFunc: 1.13)
	}{
		{"onSessionOpen fails, ignorable=false: extender inert for the session", allocCluster, alloc,
			ExtOpts{Ignorable: false}, func(t *testing.T, o Outcome) {
				if d := diffIgnoringNodes(base, o); d != "" {
					t.Errorf("want baseline (no callbacks registered):\n%s", d)
				}
			}, ""},
		{"ignorable=true: jobReady error means not ready, nothing binds", allocCluster, alloc,
			ExtOpts{Ignorable: true}, func(t *testing.T, o Outcome) {
				if len(o.Binds) != 0 {
					t.Errorf("want no binds (jobReady returns !ignorable=false), got %v", o.Binds)
				}
			}, ""},
		{"ignorable=true without jobReady verb: predicate passes, prioritize adds nothing", allocCluster, alloc,
			ExtOpts{Ignorable: true, Verbs: withoutJobReady}, func(t *testing.T, o Outcome) {
				if d := diffIgnoringNodes(base, o); d != "" {
					t.Errorf("want baseline:\n%s", d)
				}
			}, ""},
		{"ignorable=false without onSessionOpen: predicate error rejects every node", allocCluster, alloc,
			ExtOpts{Ignorable: false, Verbs: verbs(verbPredicate)}, func(t *testing.T, o Outcome) {
				if len(o.Binds) != 0 {
					t.Errorf("want no binds, got %v", o.Binds)
				}
			}, ""},
		{"ignorable=false: queueOverused error means overused, queue skipped", allocCluster, alloc,
			ExtOpts{Ignorable: false, Verbs: verbs(verbQueueOverused)}, func(t *testing.T, o Outcome) {
				if len(o.Binds) != 0 {
					t.Errorf("want no binds, got %v", o.Binds)
				}
			}, ""},
		// Before v1.11 Volcano's allocate dereferences a nil best node when
		// the score map is empty (v1.10.0 actions/allocate/allocate.go:280):
		// the scheduler itself crashes, so the case runs from 1.14 on here.
		{"ignorable=false: prioritize error leaves task unplaced", allocCluster, alloc,
			ExtOpts{Ignorable: false, Verbs: verbs(verbPrioritize)}, func(t *testing.T, o Outcome) {
				if len(o.Binds) != 0 {
					t.Errorf("want no binds (empty score map), got %v", o.Binds)
				}
			}, "1.14"},
		{"ignorable=true: prioritize error adds no score", allocCluster, alloc,
			ExtOpts{Ignorable: true, Verbs: verbs(verbPrioritize)}, func(t *testing.T, o Outcome) {
				if d := diffIgnoringNodes(base, o); d != "" {
					t.Errorf("want baseline:\n%s", d)
				}
			}, ""},
		{"ignorable=false: allocateFunc error rolls back", allocCluster, alloc,
			ExtOpts{Ignorable: false, Verbs: verbs(verbAllocateFunc, verbDeallocateFunc)},
			func(t *testing.T, o Outcome) {
				if len(o.Binds) != 0 {
					t.Errorf("want no binds, got %v", o.Binds)
				}
			}, "1.13"},
		{"ignorable=true: allocateFunc error ignored", allocCluster, alloc,
			ExtOpts{Ignorable: true, Verbs: verbs(verbAllocateFunc, verbDeallocateFunc)},
			func(t *testing.T, o Outcome) {
				if d := diffIgnoringNodes(base, o); d != "" {
					t.Errorf("want baseline:\n%s", d)
				}
			}, "1.13"},
		{"ignorable=false: jobEnqueueable error rejects", enqCluster, enq,
			ExtOpts{Ignorable: false, Verbs: noOpen}, func(t *testing.T, o Outcome) {
				if o.Phases["ns1/pg1"] != "Pending" {
					t.Errorf("want Pending, got %v", o.Phases)
				}
			}, ""},
		{"ignorable=true: jobEnqueueable error permits", enqCluster, enq,
			ExtOpts{Ignorable: true, Verbs: noOpen}, func(t *testing.T, o Outcome) {
				if o.Phases["ns1/pg1"] != "Inqueue" {
					t.Errorf("want Inqueue, got %v", o.Phases)
				}
			}, ""},
	}
	for _, tc := range cases {
		if tc.since != "" && !rel.AtLeast(tc.since) {
			t.Logf("%s: not run on Volcano %s (applies from %s on)", tc.name, rel.Volcano, tc.since)
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Timeout = "200ms"
			opt := extenderOption(dead, allFlags(), tc.o)
			o := runSession(t, tc.cluster(), []conf.Tier{tier(opt)}, tc.actions())
			t.Logf("outcome: %s", o)
			tc.check(t, o)
		})
	}

	// preemptable/reclaimable: either value of ignorable leaves the
	// extender's tier without victims, so the next tier decides.
	for _, ign := range []bool{false, true} {
		t.Run(fmt.Sprintf("preemptable error, ignorable=%v: next tier decides", ign), func(t *testing.T) {
			cl := kubeSystemVictimCluster
			want := runSession(t, cl(), []conf.Tier{tier(priorityOrderOnly), tier(evictFlags("conformance"))}, preemptActions())
			ext := extenderOption(dead, allFlags(), ExtOpts{Ignorable: ign, Timeout: "200ms",
				Verbs: verbs(verbPreemptable, verbReclaimable)})
			got := runSession(t, cl(), []conf.Tier{tier(priorityOrderOnly, ext), tier(evictFlags("conformance"))}, preemptActions())
			t.Logf("want %s\ngot  %s", want, got)
			if len(want.Evicts) == 0 {
				t.Fatalf("scenario should evict in the second tier")
			}
			if d := diff(want, got); d != "" {
				t.Errorf("%s", d)
			}
		})
	}
}

// kubeSystemVictimCluster: a high-priority pending pod, and two low-priority victims on its only
// node, one in kube-system (which conformance never evicts). ConformancePlugin's "preempt skips
// kube-system victim" the Ignorable cases and the fixture capture share it.
func kubeSystemVictimCluster() Cluster {
	return Cluster{
		Nodes:      []*v1.Node{node("node1", "4", "4G")},
		PriClasses: classes(),
		PodGroups: []*vcapisv1.PodGroup{
			pgPrio("pg-sys", "kube-system", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
			pgPrio("pg-app", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
			pgPrio("pg-hi", "ns2", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
		},
		Pods: []*v1.Pod{
			running("kube-system", "sys-pod", "node1", "2", "2G", "pg-sys", preemptable()),
			running("ns1", "app-pod", "node1", "2", "2G", "pg-app", preemptable()),
			pending("ns2", "preemptor", "2", "2G", "pg-hi"),
		},
		Queues: []*vcapisv1.Queue{queue("q1", "", "")},
	}
}

// ---- allocate / deallocate event handlers and rollbacks ------------------------------------

func testAllocateDeallocate(t *testing.T) {
	gangOpt := conf.PluginOption{Name: "gang", EnabledJobOrder: &yes, EnabledJobReady: &yes, EnabledJobPipelined: &yes, EnabledJobStarving: &yes}
	// gang job of 2 where only one task fits: allocate, then the statement
	// is discarded and the allocation rolled back (DeallocateFunc).
	partial := func() Cluster {
		return Cluster{
			Nodes:     []*v1.Node{node("node1", "4", "4G"), node("node2", "2", "2G")},
			PodGroups: []*vcapisv1.PodGroup{pgPrio("pg1", "ns1", "q1", 2, vcapisv1.PodGroupInqueue, "")},
			Pods:      []*v1.Pod{pending("ns1", "p1", "3", "3G", "pg1"), pending("ns1", "p2", "3", "3G", "pg1")},
			Queues:    []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	fits := func() Cluster {
		c := partial()
		c.Nodes[1] = node("node2", "4", "4G")
		return c
	}
	alloc := func() []framework.Action { return []framework.Action{allocateNew()} }
	ev := ExtOpts{Verbs: verbs(verbAllocateFunc, verbDeallocateFunc)}

	t.Run("caldera pass-through", func(t *testing.T) {
		c := startCaldera(t, CalderaConfig{})
		for _, tc := range []struct {
			name    string
			cluster func() Cluster
			dealloc bool
		}{{"gang rollback", partial, true}, {"gang fits", fits, false}} {
			t.Run(tc.name, func(t *testing.T) {
				want := runSession(t, tc.cluster(), []conf.Tier{tier(gangOpt)}, alloc())
				proxy := newRecorder(t, c.URL, nil)
				got := runSession(t, tc.cluster(), []conf.Tier{tier(gangOpt, extenderOption(proxy.URL, conf.PluginOption{}, ev))}, alloc())
				calls := proxy.Calls()
				t.Logf("in-tree %s\nextender %s\ncalls %v", want, got, calls)
				if d := diffIgnoringNodes(want, got); d != "" {
					t.Errorf("%s", d)
				}
				if calls["allocate"] == 0 {
					t.Errorf("allocate verb not called")
				}
				if tc.dealloc && calls["deallocate"] == 0 {
					t.Errorf("rollback did not call deallocate")
				}
				if !tc.dealloc && calls["deallocate"] != 0 {
					t.Errorf("unexpected deallocate calls: %v", calls)
				}
			})
		}
	})

	t.Run("rejecting allocate verb rolls back", func(t *testing.T) {
		rej := newRecorder(t, "", func(verb string, body []byte) (int, string) {
			if verb == "allocate" {
				return 200, `{"errorMessage":"rejected by test extender"}`
			}
			return neutral(verb, body)
		})
		want := runSession(t, fits(), []conf.Tier{tier(gangOpt)}, alloc())
		got := runSession(t, fits(), []conf.Tier{tier(gangOpt, extenderOption(rej.URL, conf.PluginOption{}, ev))}, alloc())
		t.Logf("in-tree %s\nextender %s\ncalls %v", want, got, rej.Calls())
		if len(want.Binds) != 2 {
			t.Fatalf("baseline should bind both tasks: %s", want)
		}
		if len(got.Binds) != 0 {
			t.Errorf("allocate rejected by the extender, yet binds %v", got.Binds)
		}
		if rej.Calls()["allocate"] == 0 {
			t.Errorf("allocate never called")
		}
	})

	t.Run("deallocate error is ignored on eviction", func(t *testing.T) {
		rej := newRecorder(t, "", func(verb string, body []byte) (int, string) {
			if verb == "deallocate" {
				return 200, `{"errorMessage":"deallocate refused"}`
			}
			return neutral(verb, body)
		})
		tiers := []conf.Tier{tier(priorityOrderOnly, evictFlags("conformance"))}
		want := runSession(t, kubeSystemVictimCluster(), tiers, preemptActions())
		tiers2 := []conf.Tier{tier(priorityOrderOnly, evictFlags("conformance"), extenderOption(rej.URL, conf.PluginOption{}, ev))}
		got := runSession(t, kubeSystemVictimCluster(), tiers2, preemptActions())
		t.Logf("in-tree %s\nextender %s\ncalls %v", want, got, rej.Calls())
		if d := diff(want, got); d != "" {
			t.Errorf("%s", d)
		}
		if rej.Calls()["deallocate"] == 0 {
			t.Errorf("eviction did not call deallocate")
		}
	})
}
