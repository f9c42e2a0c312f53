package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// Scenario is one comparison: the in-tree plugin named Plugin inside Tiers,
// then the same tiers with that entry replaced by the extender (and, if
// Residual, the in-tree plugin with only its unreachable flags left on).
type Scenario struct {
	Name     string
	Cluster  func() Cluster
	Actions  func() []framework.Action
	Tiers    []conf.Tier
	Plugin   string
	Residual bool
	Ext      ExtOpts
	// Expect, if set, is checked against the in-tree run (the upstream
	// test's own expectation), proving the harness reproduces it.
	Expect func(t *testing.T, o Outcome)
	// Diff overrides the comparison (default: diff, exact).
	Diff func(a, b Outcome) string
	// Abstain, if set, names the one control this scenario's outcome may equal (Caldera
	// hosting no plugin, or every evictee granted: control.go) and why it is kept anyway; it
	// must still differ from every other control. Nil: it must differ from every control.
	Abstain *Abstention
}

// The controls' names (control.go).
const (
	controlNoPlugin = "no plugin"
	controlGranting = "every evictee a victim"
)

// Abstention is a scenario's leave to equal one named control.
type Abstention struct {
	Equals string // controlNoPlugin or controlGranting
	Why    string
	// ByChance: the outcome equals the control only when Volcano's own random choice (Go map
	// order, a tie) falls the same way in every control run, so a run in which it differs from
	// every control is expected. Without it, such a run fails: the mark is stale.
	ByChance bool
}

// abstain is the mark for a scenario that may equal the control named equals.
func abstain(equals, why string) *Abstention { return &Abstention{Equals: equals, Why: why} }

// abstainByChance is the mark for a scenario that equals the control named equals in some runs
// and not in others, by Volcano's own randomness (why says which).
func abstainByChance(equals, why string) *Abstention {
	return &Abstention{Equals: equals, Why: why, ByChance: true}
}

// extenderTiers replaces the entry named s.Plugin.
func (s Scenario) extenderTiers(url string) ([]conf.Tier, conf.PluginOption) {
	var under conf.PluginOption
	out := make([]conf.Tier, 0, len(s.Tiers))
	for _, tier := range s.Tiers {
		nt := conf.Tier{}
		for _, p := range tier.Plugins {
			if p.Name != s.Plugin {
				nt.Plugins = append(nt.Plugins, p)
				continue
			}
			under = p
			if s.Residual && hasUnreachable(p) {
				nt.Plugins = append(nt.Plugins, residualOption(p))
			}
			nt.Plugins = append(nt.Plugins, extenderOption(url, p, s.Ext))
		}
		out = append(out, nt)
	}
	return out, under
}

// calderaConfig is a single tier holding the plugin under test. pdb reads
// its budgets from a file written next to the config.
func (s Scenario) calderaConfig(t *testing.T, under conf.PluginOption, cl Cluster) CalderaConfig {
	cp := calderaPluginFrom(under)
	if s.Plugin == "pdb" {
		path := filepath.Join(t.TempDir(), "pdbs.json")
		writePDBFile(t, path, cl.PDBs)
		cp.Arguments = map[string]interface{}{"source": "file", "file": path}
	}
	cp.Arguments = mutatedArguments(s.Plugin, cp.Arguments)
	return CalderaConfig{ManagedResources: s.Ext.ManagedResources, Tiers: [][]CalderaPlugin{{cp}}}
}

func writePDBFile(t *testing.T, path string, pdbs []*policyv1.PodDisruptionBudget) {
	t.Helper()
	list := make([]*policyv1.PodDisruptionBudget, 0, len(pdbs))
	for _, p := range pdbs {
		c := p.DeepCopy()
		c.APIVersion, c.Kind = "policy/v1", "PodDisruptionBudget"
		list = append(list, c)
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// compare runs both sessions and asserts identical outcomes.
func compare(t *testing.T, s Scenario) {
	t.Helper()
	inTree := runSession(t, s.Cluster(), s.Tiers, s.Actions())
	t.Logf("in-tree : %s", inTree)
	if s.Expect != nil {
		s.Expect(t, inTree)
	}
	ext, rec, tiers := extenderSession(t, s)
	t.Logf("extender%s: %s (Caldera answered %s)", bodiesNote(), ext, rec)
	cmp := s.Diff
	if cmp == nil {
		cmp = diff
	}
	// Every scenario is held to the answered check and its controls: there is no per-release
	// escape hatch (a difference Caldera cannot reproduce is a scenario in differences.go, which
	// asserts that difference instead). The identifiers mode checks every call was one; its
	// controls are the objects mode's (the same state, the same answers).
	if mutation() == "" {
		checkAnswered(t, s, rec, extenderEntry(tiers))
	}
	if identifiersMode {
		checkIdentifierBodies(t, rec)
	} else if mutation() == "" {
		neutral := neutralCaldera(t, s.Ext.ManagedResources)
		abstaining, _ := s.extenderTiers(neutral)
		controls := map[string]func() Outcome{
			controlNoPlugin: func() Outcome { return runSession(t, s.Cluster(), abstaining, s.Actions()) },
		}
		if asksVictims(s, extenderArgs(abstaining)) {
			// Only the victim verbs answer differently from "no plugin" in the granting control:
			// where no action asks them it is "no plugin" again, whose random tie-breaks it can
			// match by chance in every run without telling anything.
			granting, _ := s.extenderTiers(startPermissive(t, neutral))
			controls[controlGranting] = func() Outcome { return runSession(t, s.Cluster(), granting, s.Actions()) }
		}
		checkControl(t, s, ext, cmp, controls)
	}
	d := cmp(inTree, ext)
	if d != "" && mutating(s.Plugin) {
		t.Errorf("%s: the extender run differs from in-tree %s:\n%s", caughtMarker(mutation()), s.Plugin, d)
	} else if d != "" {
		t.Errorf("extender run%s differs from in-tree %s:\n%s", bodiesNote(), s.Plugin, d)
	}
}

// extenderSession runs s with the extender entry in place of s.Plugin, Volcano's extender
// calling a Caldera that hosts the plugin (through the mutator when a mutant is asked for) through
// a recorder: in objects mode on the snapshot's bodies, in identifiers mode (identifiers.go) on
// the patched plugin's identifiers, Caldera in cluster mode over a stand-in API server.
func extenderSession(t *testing.T, s Scenario) (Outcome, *recorder, []conf.Tier) {
	t.Helper()
	_, under := s.extenderTiers("")
	cl := s.Cluster()
	cfg := s.calderaConfig(t, under, cl)
	var rec *recorder
	if identifiersMode {
		rec = identifiersCaldera(t, cfg, cl)
	} else {
		target := startCaldera(t, cfg).URL
		if mutating(s.Plugin) {
			target = startMutator(t, target, neutralCaldera(t, s.Ext.ManagedResources))
		}
		rec = startRecorder(t, target)
	}
	tiers, _ := s.extenderTiers(rec.URL)
	if identifiersMode {
		withIdentifiers(extenderArgs(tiers))
	}
	return runSession(t, s.Cluster(), tiers, s.Actions()), rec, tiers
}

// asksVictims: the scenario runs preempt or reclaim and the extender entry sends that action's
// victim verb.
func asksVictims(s Scenario, args map[string]interface{}) bool {
	for _, a := range s.Actions() {
		if _, sends := args[verbPreemptable]; sends && a.Name() == "preempt" {
			return true
		}
		if _, sends := args[verbReclaimable]; sends && a.Name() == "reclaim" {
			return true
		}
	}
	return false
}

// extenderEntry is the extender entry in tiers.
func extenderEntry(tiers []conf.Tier) conf.PluginOption {
	for _, tier := range tiers {
		for _, p := range tier.Plugins {
			if p.Name == "extender" {
				return p
			}
		}
	}
	return conf.PluginOption{}
}

// extenderArgs is the extender entry's arguments in tiers.
func extenderArgs(tiers []conf.Tier) map[string]interface{} { return extenderEntry(tiers).Arguments }

func runAll(t *testing.T, scenarios []Scenario) {
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) { compare(t, s) })
	}
}

// ---- expectation helpers -------------------------------------------------------

func expectEvicts(want ...string) func(*testing.T, Outcome) {
	return func(t *testing.T, o Outcome) {
		t.Helper()
		if len(want) == 0 {
			want = []string{}
		}
		if mustJSON(o.Evicts) != mustJSON(want) {
			t.Fatalf("in-tree run: evicts %v, upstream expects %v", o.Evicts, want)
		}
	}
}

func expectPhases(want map[string]string) func(*testing.T, Outcome) {
	return func(t *testing.T, o Outcome) {
		t.Helper()
		for k, v := range want {
			if o.Phases[k] != v {
				t.Fatalf("in-tree run: podgroup %s phase %q, upstream expects %q (all: %v)", k, o.Phases[k], v, o.Phases)
			}
		}
	}
}

// byRelease picks the expectation of the release under test: from (a
// "major.minor" release) on, or before it.
func byRelease(from string, since, before func(*testing.T, Outcome)) func(*testing.T, Outcome) {
	if rel.AtLeast(from) {
		return since
	}
	return before
}

func all(fs ...func(*testing.T, Outcome)) func(*testing.T, Outcome) {
	return func(t *testing.T, o Outcome) {
		t.Helper()
		for _, f := range fs {
			f(t, o)
		}
	}
}

// ---- object helpers -------------------------------------------------------------

func rl(cpu, mem string, extra ...api.ScalarResource) v1.ResourceList {
	return api.BuildResourceList(cpu, mem, extra...)
}

func node(name, cpu, mem string) *v1.Node {
	return buildNode(name, rl(cpu, mem, api.ScalarResource{Name: "pods", Value: "10"}), map[string]string{})
}

// The builders below construct the same objects as the Build* helpers of
// Volcano's pkg/scheduler/util (which v1.8 lacks in part).

func buildNode(name string, alloc v1.ResourceList, labels map[string]string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{}},
		Status:     v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
}

func buildPod(ns, name, nodeName string, p v1.PodPhase, req v1.ResourceList, group string, labels, selector map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(fmt.Sprintf("%v-%v", ns, name)), Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{vcapisv1.KubeGroupNameAnnotationKey: group},
		},
		Status: v1.PodStatus{Phase: p},
		Spec: v1.PodSpec{NodeName: nodeName, NodeSelector: selector,
			Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: req}}}},
	}
}

func buildPodGroup(name, ns, queue string, min int32, phase vcapisv1.PodGroupPhase) *vcapisv1.PodGroup {
	return &vcapisv1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       vcapisv1.PodGroupSpec{Queue: queue, MinMember: min},
		Status:     vcapisv1.PodGroupStatus{Phase: phase},
	}
}

func buildQueue(name string, weight int32, capability v1.ResourceList) *vcapisv1.Queue {
	return &vcapisv1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       vcapisv1.QueueSpec{Weight: weight, Capability: capability},
		Status:     vcapisv1.QueueStatus{State: vcapisv1.QueueStateOpen},
	}
}

func buildResourceQuota(name, ns string, hard v1.ResourceList) *v1.ResourceQuota {
	return &v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1.ResourceQuotaSpec{Hard: hard},
		Status:     v1.ResourceQuotaStatus{Hard: hard},
	}
}

func buildPriorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

func preemptable() map[string]string { return map[string]string{vcapisv1.PodPreemptable: "true"} }

func running(ns, name, nodeName, cpu, mem, pg string, labels map[string]string) *v1.Pod {
	return buildPod(ns, name, nodeName, v1.PodRunning, rl(cpu, mem), pg, labels, map[string]string{})
}

func pending(ns, name, cpu, mem, pg string) *v1.Pod {
	return buildPod(ns, name, "", v1.PodPending, rl(cpu, mem), pg, map[string]string{}, map[string]string{})
}

func withPriority(p *v1.Pod, prio int32) *v1.Pod { p.Spec.Priority = &prio; return p }

func withClass(p *v1.Pod, class string) *v1.Pod { p.Spec.PriorityClassName = class; return p }

func scheduledAgo(p *v1.Pod, d time.Duration) *v1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-d)),
	})
	return p
}

func annotate(p *v1.Pod, k, v string) *v1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

func pgPrio(name, ns, queue string, min int32, phase vcapisv1.PodGroupPhase, class string) *vcapisv1.PodGroup {
	pg := buildPodGroup(name, ns, queue, min, phase)
	pg.Spec.MinTaskMember = map[string]int32{}
	pg.Spec.PriorityClassName = class
	return pg
}

func pgMin(name, ns, queue string, min int32, res v1.ResourceList, phase vcapisv1.PodGroupPhase) *vcapisv1.PodGroup {
	pg := buildPodGroup(name, ns, queue, min, phase)
	pg.Spec.MinResources = &res
	return pg
}

func queue(name string, cpu, mem string) *vcapisv1.Queue {
	if cpu == "" {
		return buildQueue(name, 1, nil)
	}
	return buildQueue(name, 1, rl(cpu, mem))
}

func tier(ps ...conf.PluginOption) conf.Tier { return conf.Tier{Plugins: ps} }

func preemptActions() []framework.Action { return []framework.Action{allocateNew(), preemptNew()} }
