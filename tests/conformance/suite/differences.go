package suite

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// These scenarios replace the in-tree plugin by the extender WITHOUT the
// residual in-tree entry, i.e. they lose the extension points the extender
// protocol cannot carry (JobOrder, TaskOrder, JobPipelined, JobStarving).
// They assert the documented difference, not equality.

func documentDifference(t *testing.T, s Scenario, check func(t *testing.T, inTree, ext Outcome)) {
	t.Helper()
	s.Residual = false
	inTree := runSession(t, s.Cluster(), s.Tiers, s.Actions())
	_, under := s.extenderTiers("")
	c := startCaldera(t, s.calderaConfig(t, under, s.Cluster()))
	tiers, _ := s.extenderTiers(c.URL)
	ext := runSession(t, s.Cluster(), tiers, s.Actions())
	t.Logf("in-tree : %s", inTree)
	t.Logf("extender: %s", ext)
	if d := diff(inTree, ext); d != "" {
		t.Logf("DOCUMENTED DIFFERENCE (%s):\n%s", s.Name, d)
	}
	check(t, inTree, ext)
}

func wantBinds(t *testing.T, which string, o Outcome, pod string) {
	t.Helper()
	if _, ok := o.Binds[pod]; !ok || len(o.Binds) != 1 {
		t.Errorf("%s run: want only %s bound, got %v", which, pod, o.Binds)
	}
}

func allocActions() []framework.Action { return []framework.Action{allocateNew()} }

func testDifferences(t *testing.T) {
	// Two jobs compete for one 2-CPU node. Without a JobOrderFn Volcano falls
	// back to creation time, then UID: "ns1/a-..." sorts before "ns1/b-...".
	twoJobs := func(pgA, pgB *vcapisv1.PodGroup) func() Cluster {
		return func() Cluster {
			return Cluster{
				Nodes:      []*v1.Node{node("node1", "2", "2G")},
				PriClasses: classes(),
				PodGroups:  []*vcapisv1.PodGroup{pgA.DeepCopy(), pgB.DeepCopy()},
				Pods:       []*v1.Pod{pending("ns1", "pa", "2", "2G", pgA.Name), pending("ns1", "pb", "2", "2G", pgB.Name)},
				Queues:     []*vcapisv1.Queue{queue("q1", "", "")},
			}
		}
	}

	t.Run("sla JobOrder is not reachable", func(t *testing.T) {
		withSla := pgPrio("b-with-sla", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "")
		withSla.Annotations = map[string]string{"volcano.sh/sla-waiting-time": "1m"}
		documentDifference(t, Scenario{
			Name:    "sla JobOrder",
			Cluster: twoJobs(pgPrio("a-no-sla", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, ""), withSla),
			Actions: allocActions, Plugin: "sla",
			Tiers: []conf.Tier{tier(slaEnq("3m"))},
		}, func(t *testing.T, in, ext Outcome) {
			wantBinds(t, "in-tree (sla orders the job with an SLA first)", in, "ns1/pb")
			wantBinds(t, "extender (UID fallback order)", ext, "ns1/pa")
		})
	})

	t.Run("sla JobPipelined is not reachable", func(t *testing.T) {
		// A 2-member gang can get only one task pipelined by preemption.
		// gang (tier 2) votes "not pipelined"; sla (tier 1), past its
		// deadline, Permits first and short-circuits that vote, so the
		// in-tree preempt commits the eviction. Through the extender only
		// gang votes and the statement is discarded: nothing is evicted.
		gangOpt := conf.PluginOption{Name: "gang", EnabledJobOrder: &yes, EnabledJobReady: &yes,
			EnabledJobPipelined: &yes, EnabledJobStarving: &yes}
		slaPipe := conf.PluginOption{Name: "sla", Arguments: map[string]interface{}{"sla-waiting-time": "1m"},
			EnabledJobPipelined: &yes, EnabledJobEnqueued: &yes}
		documentDifference(t, Scenario{
			Name: "sla JobPipelined", Actions: preemptActions, Plugin: "sla",
			Tiers: []conf.Tier{tier(slaPipe), tier(gangOpt, evictFlags("conformance"))},
			Cluster: func() Cluster {
				return Cluster{
					Nodes:      []*v1.Node{node("node1", "2", "2G")},
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						pgPrio("pg-victim", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-gang", "ns1", "q1", 2, vcapisv1.PodGroupInqueue, "high-priority"),
					},
					Pods: []*v1.Pod{
						running("ns1", "victim", "node1", "2", "2G", "pg-victim", preemptable()),
						pending("ns1", "gang-0", "2", "2G", "pg-gang"),
						pending("ns1", "gang-1", "2", "2G", "pg-gang"),
					},
					Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				}
			},
		}, func(t *testing.T, in, ext Outcome) {
			if mustJSON(in.Evicts) != `["ns1/victim"]` {
				t.Errorf("in-tree: want [ns1/victim] evicted (sla JobPipelined Permit), got %v", in.Evicts)
			}
			if len(ext.Evicts) != 0 {
				t.Errorf("extender: want no eviction (only gang's JobPipelined vote), got %v", ext.Evicts)
			}
		})
	})

	t.Run("priority JobOrder is not reachable", func(t *testing.T) {
		documentDifference(t, Scenario{
			Name: "priority JobOrder", Actions: allocActions, Plugin: "priority",
			Cluster: twoJobs(pgPrio("a-low", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "low-priority"),
				pgPrio("b-high", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority")),
			Tiers: []conf.Tier{tier(priorityEnableEvict)},
		}, func(t *testing.T, in, ext Outcome) {
			wantBinds(t, "in-tree (higher job priority first)", in, "ns1/pb")
			wantBinds(t, "extender (UID fallback order)", ext, "ns1/pa")
		})
	})

	t.Run("priority TaskOrder is not reachable", func(t *testing.T) {
		documentDifference(t, Scenario{
			Name: "priority TaskOrder", Actions: allocActions, Plugin: "priority",
			Cluster: func() Cluster {
				return Cluster{
					Nodes:     []*v1.Node{node("node1", "2", "2G")},
					PodGroups: []*vcapisv1.PodGroup{pgPrio("pg1", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "")},
					Pods: []*v1.Pod{
						withPriority(pending("ns1", "job-task-0", "2", "2G", "pg1"), 10),
						withPriority(pending("ns1", "job-task-1", "2", "2G", "pg1"), 500),
					},
					Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				}
			},
			Tiers: []conf.Tier{tier(priorityEnableEvict)},
		}, func(t *testing.T, in, ext Outcome) {
			wantBinds(t, "in-tree (higher task priority first)", in, "ns1/job-task-1")
			wantBinds(t, "extender (task index fallback order)", ext, "ns1/job-task-0")
		})
	})

	t.Run("priority JobStarving is not reachable", func(t *testing.T) {
		documentDifference(t, Scenario{
			Name: "priority JobStarving (TestPreempt case 1 without residual)", Actions: preemptActions, Plugin: "priority",
			Cluster: priorityPreemptCluster1, Tiers: []conf.Tier{tier(priorityEnableEvict)},
		}, func(t *testing.T, in, ext Outcome) {
			if mustJSON(in.Evicts) != `["ns1/preemptee1"]` {
				t.Errorf("in-tree: want [ns1/preemptee1] evicted, got %v", in.Evicts)
			}
			if len(ext.Evicts) != 0 {
				t.Errorf("extender: without a JobStarvingFn no job may preempt; got evictions %v", ext.Evicts)
			}
		})
	})
}
