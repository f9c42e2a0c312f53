package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
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
	_, under := s.extenderTiers("")
	c := startCaldera(t, s.calderaConfig(t, under, s.Cluster()))
	tiers, _ := s.extenderTiers(c.URL)
	ext := runSession(t, s.Cluster(), tiers, s.Actions())
	t.Logf("extender: %s", ext)
	cmp := s.Diff
	if cmp == nil {
		cmp = diff
	}
	if d := cmp(inTree, ext); d != "" {
		t.Errorf("extender run differs from in-tree %s:\n%s", s.Plugin, d)
	}
}

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
	return util.BuildNode(name, rl(cpu, mem, api.ScalarResource{Name: "pods", Value: "10"}), map[string]string{})
}

func preemptable() map[string]string { return map[string]string{vcapisv1.PodPreemptable: "true"} }

func running(ns, name, nodeName, cpu, mem, pg string, labels map[string]string) *v1.Pod {
	return util.BuildPod(ns, name, nodeName, v1.PodRunning, rl(cpu, mem), pg, labels, map[string]string{})
}

func pending(ns, name, cpu, mem, pg string) *v1.Pod {
	return util.BuildPod(ns, name, "", v1.PodPending, rl(cpu, mem), pg, map[string]string{}, map[string]string{})
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
	return util.BuildPodGroupWithPrio(name, ns, queue, min, map[string]int32{}, phase, class)
}

func pgMin(name, ns, queue string, min int32, res v1.ResourceList, phase vcapisv1.PodGroupPhase) *vcapisv1.PodGroup {
	return util.BuildPodGroupWithMinResources(name, ns, queue, min, nil, res, phase)
}

func queue(name string, cpu, mem string) *vcapisv1.Queue {
	if cpu == "" {
		return util.BuildQueue(name, 1, nil)
	}
	return util.BuildQueue(name, 1, rl(cpu, mem))
}

func tier(ps ...conf.PluginOption) conf.Tier { return conf.Tier{Plugins: ps} }

func preemptActions() []framework.Action { return []framework.Action{allocateNew(), preemptNew()} }
