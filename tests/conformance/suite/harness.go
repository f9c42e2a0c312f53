// Package suite holds the Volcano differential conformance scenarios once, for
// every Volcano release module under tests/conformance/volcano-*. Each release
// module imports this package through a local replace and hands it a Release:
// the in-tree plugins that release ships, the extender verbs it reads, and the
// few session steps whose API changed between releases (mock cache, fake
// binder/evictor, job status update). This package then runs Volcano's
// scheduler actions twice per scenario -- once with an in-tree plugin, once
// with the `extender` plugin pointed at a running `caldera serve` configured
// with that release's volcanoVersion -- and compares the outcomes.
//
// Nothing here is copied from Volcano: the release modules import Volcano's
// packages (framework, cache, actions, plugins) as module dependencies. The
// object builders below only construct Kubernetes and Volcano API objects.
//
// This module's go.mod pins no requirement on purpose: each release module
// decides which Volcano (and Kubernetes) versions this code compiles against.
package suite

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// Cluster is the input of one session. Build it with a func so each run gets
// fresh objects (the cache mutates them).
type Cluster struct {
	Nodes          []*v1.Node
	Pods           []*v1.Pod
	PodGroups      []*vcapisv1.PodGroup
	Queues         []*vcapisv1.Queue
	PriClasses     []*schedulingv1.PriorityClass
	ResourceQuotas []*v1.ResourceQuota
	PDBs           []*policyv1.PodDisruptionBudget
	// NodeUsage is the metrics sample per node name (NodeInfo.ResourceUsage),
	// written into the cache as its metrics poller would.
	NodeUsage map[string]*api.NodeUsage
}

// Outcome is what the comparison looks at.
type Outcome struct {
	Binds     map[string]string // ns/pod -> node
	Evicts    []string          // ns/pod, sorted
	Phases    map[string]string // ns/podgroup -> phase
	Pipelined map[string]string // ns/pod -> node (tasks left Pipelined)
	Allocated map[string]string // ns/pod -> node (placed, not dispatched: job not ready)
}

func (o Outcome) String() string {
	return fmt.Sprintf("binds=%v evicts=%v phases=%v pipelined=%v allocated=%v", sortedMap(o.Binds), o.Evicts,
		sortedMap(o.Phases), sortedMap(o.Pipelined), sortedMap(o.Allocated))
}

func sortedMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"->"+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// diff returns "" when both outcomes are equal.
func diff(a, b Outcome) string {
	var out []string
	if sortedMap(a.Binds) != sortedMap(b.Binds) {
		out = append(out, fmt.Sprintf("binds: in-tree %s, extender %s", sortedMap(a.Binds), sortedMap(b.Binds)))
	}
	if strings.Join(a.Evicts, ",") != strings.Join(b.Evicts, ",") {
		out = append(out, fmt.Sprintf("evicts: in-tree %v, extender %v", a.Evicts, b.Evicts))
	}
	if sortedMap(a.Phases) != sortedMap(b.Phases) {
		out = append(out, fmt.Sprintf("podgroup phases: in-tree %s, extender %s", sortedMap(a.Phases), sortedMap(b.Phases)))
	}
	if sortedMap(a.Pipelined) != sortedMap(b.Pipelined) {
		out = append(out, fmt.Sprintf("pipelined: in-tree %s, extender %s", sortedMap(a.Pipelined), sortedMap(b.Pipelined)))
	}
	if sortedMap(a.Allocated) != sortedMap(b.Allocated) {
		out = append(out, fmt.Sprintf("allocated: in-tree %s, extender %s", sortedMap(a.Allocated), sortedMap(b.Allocated)))
	}
	return strings.Join(out, "\n")
}

// diffIgnoringNodes compares which pods were bound (not where), evictions
// and phases: for scenarios where Volcano picks randomly among equally
// scored nodes.
func diffIgnoringNodes(a, b Outcome) string {
	strip := func(o Outcome) Outcome {
		c := o
		c.Binds, c.Pipelined, c.Allocated = map[string]string{}, map[string]string{}, map[string]string{}
		for k := range o.Binds {
			c.Binds[k] = "*"
		}
		for k := range o.Pipelined {
			c.Pipelined[k] = "*"
		}
		for k := range o.Allocated {
			c.Allocated[k] = "*"
		}
		return c
	}
	return diff(strip(a), strip(b))
}

// sessionMu serialises sessions: plugin builders and conf.EnabledActionMap
// are package globals in Volcano.
var sessionMu sync.Mutex

// runSession opens one scheduling session over the cluster, runs the actions
// and returns the observed outcome. It follows the public steps of Volcano's
// own action tests (mock cache, fake binder/evictor, OpenSession, actions,
// job status update, CloseSession) but keeps the fakes so that outcomes can be
// compared between two runs instead of against hard-coded expectations. The
// steps whose API differs between releases come from rel (see Release).
func runSession(t *testing.T, cl Cluster, tiers []conf.Tier, actions []framework.Action) Outcome {
	t.Helper()
	sessionMu.Lock()
	defer sessionMu.Unlock()

	sc, obs := rel.NewCache(t, cl)
	defer obs.Stop()

	for _, n := range cl.Nodes {
		sc.AddOrUpdateNode(n)
	}
	if len(cl.NodeUsage) > 0 {
		sc.Lock()
		for name, usage := range cl.NodeUsage {
			if ni, ok := sc.Nodes[name]; ok {
				ni.ResourceUsage = usage
			}
		}
		sc.Unlock()
	}
	for _, p := range cl.Pods {
		sc.AddPod(p)
	}
	for _, pg := range cl.PodGroups {
		sc.AddPodGroupV1beta1(pg)
	}
	for _, q := range cl.Queues {
		sc.AddQueueV1beta1(q)
	}
	for _, pc := range cl.PriClasses {
		sc.AddPriorityClass(pc)
	}
	for _, rq := range cl.ResourceQuotas {
		sc.AddResourceQuota(rq)
	}

	for name, b := range rel.Builders {
		framework.RegisterPluginBuilder(name, b)
	}
	framework.RegisterPluginBuilder(rejecterName, newRejecter)
	defer framework.CleanupPluginBuilders()

	ssn := framework.OpenSession(sc, tiers, nil)
	conf.EnabledActionMap = map[string]bool{}
	for _, a := range actions {
		conf.EnabledActionMap[a.Name()] = true
	}
	for _, a := range actions {
		a.Initialize()
		a.Execute(ssn)
		a.UnInitialize()
	}

	// Binds and evictions are asynchronous: wait until both fakes are quiet.
	obs.Settle()

	if rel.UpdateJobs != nil {
		rel.UpdateJobs(ssn)
	}
	out := Outcome{
		Binds:     obs.Binds(),
		Evicts:    obs.Evicts(),
		Phases:    map[string]string{},
		Pipelined: map[string]string{},
		Allocated: map[string]string{},
	}
	sort.Strings(out.Evicts)
	jobs := ssn.Jobs
	for _, job := range jobs {
		for _, task := range job.TaskStatusIndex[api.Pipelined] {
			out.Pipelined[task.Namespace+"/"+task.Name] = task.NodeName
		}
		for _, task := range job.TaskStatusIndex[api.Allocated] {
			out.Allocated[task.Namespace+"/"+task.Name] = task.NodeName
		}
	}
	// Releases before 1.11 update PodGroup status inside CloseSession.
	framework.CloseSession(ssn)
	for id, job := range jobs {
		if job.PodGroup != nil {
			out.Phases[string(id)] = string(job.PodGroup.Status.Phase)
		}
	}
	return out
}

// ---- rejecter: an in-tree test plugin that rejects one named job ----------

const rejecterName = "test-rejecter"

type rejecter struct{ job string }

func newRejecter(args framework.Arguments) framework.Plugin {
	r := &rejecter{}
	r.job, _ = args["rejectJob"].(string)
	return r
}
func (r *rejecter) Name() string { return rejecterName }
func (r *rejecter) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobEnqueueableFn(r.Name(), func(obj interface{}) int {
		if obj.(*api.JobInfo).Name == r.job {
			return -1
		}
		return 1
	})
}
func (r *rejecter) OnSessionClose(*framework.Session) {}

// ---- helpers ----------------------------------------------------------------

var (
	yes = true
	no  = false
)

func gpu(v string) api.ScalarResource { return api.ScalarResource{Name: "nvidia.com/gpu", Value: v} }
