package suite

import (
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/enqueue"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"
	"volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

func allocateNew() framework.Action { return allocate.New() }
func preemptNew() framework.Action  { return preempt.New() }
func reclaimNew() framework.Action  { return reclaim.New() }
func enqueueNew() framework.Action  { return enqueue.New() }

func enqueueActions() []framework.Action { return []framework.Action{enqueueNew()} }
func reclaimActions() []framework.Action { return []framework.Action{reclaimNew()} }

var (
	// priorityOrderOnly supplies JobStarving / JobOrder / TaskOrder (which
	// the extender cannot carry) without a Preemptable function, so the
	// plugin under test is the only victim filter.
	priorityOrderOnly = conf.PluginOption{Name: "priority", EnabledJobOrder: &yes, EnabledTaskOrder: &yes, EnabledJobStarving: &yes}
	// priorityEnableEvict is priority_test.go's.
	priorityEnableEvict = conf.PluginOption{Name: "priority", EnabledTaskOrder: &yes, EnabledJobOrder: &yes,
		EnabledPreemptable: &yes, EnabledReclaimable: &yes, EnabledJobStarving: &yes}
	// priorityNoTaskOrder / priorityNoJobOrder: priority_test.go's entry less one order
	// function, so that Volcano's victim order falls back to creation times (see "victim order").
	priorityNoTaskOrder = conf.PluginOption{Name: "priority", EnabledJobOrder: &yes,
		EnabledPreemptable: &yes, EnabledReclaimable: &yes, EnabledJobStarving: &yes}
	priorityNoJobOrder = conf.PluginOption{Name: "priority", EnabledTaskOrder: &yes,
		EnabledPreemptable: &yes, EnabledReclaimable: &yes, EnabledJobStarving: &yes}
	evictFlags = func(name string) conf.PluginOption {
		return conf.PluginOption{Name: name, EnabledPreemptable: &yes, EnabledReclaimable: &yes}
	}
	classes = func() []*schedulingv1.PriorityClass {
		return []*schedulingv1.PriorityClass{buildPriorityClass("low-priority", 100), buildPriorityClass("high-priority", 1000)}
	}
)

// ---- victim order ---------------------------------------------------------------------
//
// Volcano evicts a node's victims in the order of BuildVictimsPriorityQueue (v1.8.2: the same
// comparison inline in preempt): victims of one job by !TaskOrderFn, of different jobs in one
// queue by !JobOrderFn. Without an order function that decides, both fall back to the creation
// time and then the UID (CompareTask, Session.JobOrderFn), so the newest job, and within a job
// the newest pod, goes first. The victim scenarios below make the pod the plugin protects the
// one Volcano's own order would evict first: a Caldera that protected nothing would evict it
// (the granting control), so agreeing with the in-tree run shows that Caldera's answer chose the
// victims. Creation times are minutes apart, and a pod's never equals another's of the same job
// (v1.8.2's CompareTask has no UID fallback: equal times leave the order to the heap).

// createdAgo sets a PodGroup's (the job's) creation time.
func createdAgo(pg *vcapisv1.PodGroup, d time.Duration) *vcapisv1.PodGroup {
	pg.CreationTimestamp = metav1.NewTime(time.Now().Add(-d))
	return pg
}

// podCreatedAgo sets a pod's (the task's) creation time.
func podCreatedAgo(p *v1.Pod, d time.Duration) *v1.Pod {
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(-d))
	return p
}

// kubeSystemNewest makes pg-sys the newest job and pg-app an hour old: Volcano's own order
// (same priority, then the newest job first) evicts sys-pod before app-pod.
func kubeSystemNewest(cl Cluster) Cluster {
	for _, pg := range cl.PodGroups {
		switch pg.Name {
		case "pg-sys":
			createdAgo(pg, time.Minute)
		case "pg-app":
			createdAgo(pg, time.Hour)
		}
	}
	return cl
}

// reclaimOrderAbstain: before v1.9 the reclaim action evicts its victims in the order
// ssn.Reclaimable returns them, which is the node's task map order (no victim queue), so the
// granting control evicts either candidate at random and cannot be told apart reliably.
func reclaimOrderAbstain() *Abstention {
	if rel.AtLeast("1.9") {
		return nil
	}
	return abstainByChance(controlGranting, "Volcano "+rel.Volcano+"'s reclaim has no victim queue: it evicts in the order Reclaimable returns"+
		" (the node's task map), so the granting control picks either candidate at random; the no-plugin control differs")
}

// classDiff compares outcomes after renaming the evicted pods of each class to the class's name:
// pods Volcano itself treats as interchangeable (which of them spends a budget follows Go map
// order in its node task list). Every other eviction, and every bind, is compared by identity.
func classDiff(classes map[string]string) func(a, b Outcome) string {
	rename := func(o Outcome) Outcome {
		c := o
		c.Evicts = make([]string, len(o.Evicts))
		for i, e := range o.Evicts {
			if n, ok := classes[e]; ok {
				e = n
			}
			c.Evicts[i] = e
		}
		sort.Strings(c.Evicts)
		return c
	}
	return func(a, b Outcome) string { return diff(rename(a), rename(b)) }
}

// ---- conformance ------------------------------------------------------------------

func testConformancePlugin(t *testing.T) {
	tiers := []conf.Tier{tier(priorityOrderOnly, evictFlags("conformance"))}
	if !rel.AtLeast("1.9") {
		// Before v1.9 "reclaim skips kube-system victim" cannot tell a granted kube-system pod
		// from the other candidate (the order is the node's task map), so the kube-system pod
		// stands alone here: conformance spares it and nothing is reclaimed, while a Caldera
		// granting it (the conformance/reclaimable mutant) evicts it.
		defer runAll(t, []Scenario{{
			Name: "reclaim spares a lone kube-system victim",
			Abstain: abstain(controlNoPlugin, "the only candidate is in kube-system: conformance grants none, the same as"+
				" no victim vote; the granting control differs"),
			Cluster: func() Cluster {
				return Cluster{
					Nodes:      []*v1.Node{node("node1", "4", "4G")},
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						pgPrio("pg-sys", "kube-system", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-q2", "ns2", "q2", 1, vcapisv1.PodGroupInqueue, "low-priority"),
					},
					Pods: []*v1.Pod{
						running("kube-system", "sys-pod", "node1", "4", "4G", "pg-sys", preemptable()),
						pending("ns2", "reclaimer", "2", "2G", "pg-q2"),
					},
					Queues: []*vcapisv1.Queue{queue("q1", "", ""), queue("q2", "", "")},
				}
			},
			Actions: reclaimActions, Tiers: tiers, Plugin: "conformance",
			Expect: expectEvicts(),
		}})
	}
	runAll(t, []Scenario{
		{
			// The kube-system job is the newest: Volcano's own victim order (the newest job of
			// equal priority first) would evict sys-pod; only conformance's answer spares it.
			Name:    "preempt skips kube-system victim",
			Cluster: func() Cluster { return kubeSystemNewest(kubeSystemVictimCluster()) },
			Actions: preemptActions, Tiers: tiers, Plugin: "conformance",
			Expect: expectEvicts("ns1/app-pod"),
		},
		{
			Name:    "preempt finds only critical victims",
			Abstain: abstain(controlNoPlugin, "every candidate is critical or in kube-system: conformance grants none, the same as no victim vote; the granting control differs"),
			Cluster: func() Cluster {
				return Cluster{
					Nodes:      []*v1.Node{node("node1", "4", "4G")},
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						pgPrio("pg-sys", "kube-system", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-crit", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-hi", "ns2", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
					},
					Pods: []*v1.Pod{
						running("kube-system", "sys-pod", "node1", "2", "2G", "pg-sys", preemptable()),
						withClass(running("ns1", "crit-pod", "node1", "2", "2G", "pg-crit", preemptable()), "system-node-critical"),
						pending("ns2", "preemptor", "2", "2G", "pg-hi"),
					},
					Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				}
			},
			Actions: preemptActions, Tiers: tiers, Plugin: "conformance",
			Expect: expectEvicts(),
		},
		{
			Name:    "reclaim skips kube-system victim",
			Abstain: reclaimOrderAbstain(),
			Cluster: func() Cluster {
				return kubeSystemNewest(Cluster{
					Nodes:      []*v1.Node{node("node1", "4", "4G")},
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						pgPrio("pg-sys", "kube-system", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-app", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
						pgPrio("pg-q2", "ns2", "q2", 1, vcapisv1.PodGroupInqueue, "low-priority"),
					},
					Pods: []*v1.Pod{
						running("kube-system", "sys-pod", "node1", "2", "2G", "pg-sys", preemptable()),
						running("ns1", "app-pod", "node1", "2", "2G", "pg-app", preemptable()),
						pending("ns2", "reclaimer", "2", "2G", "pg-q2"),
					},
					Queues: []*vcapisv1.Queue{queue("q1", "", ""), queue("q2", "", "")},
				})
			},
			Actions: reclaimActions, Tiers: tiers, Plugin: "conformance",
			Expect: expectEvicts("ns1/app-pod"),
		},
	})
}

// ---- priority ------------------------------------------------------------------------

// priorityPreemptCluster1/2 are priority_test.go TestPreempt's two cases.
func priorityPreemptCluster1() Cluster {
	prio := int32(1000)
	return Cluster{
		PriClasses: classes(),
		PodGroups: []*vcapisv1.PodGroup{
			pgPrio("pg1", "ns1", "q1", 1, vcapisv1.PodGroupInqueue, "low-priority"),
			pgPrio("pg2", "ns2", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
		},
		Pods: []*v1.Pod{
			running("ns1", "preemptee1", "node1", "3", "3G", "pg1", preemptable()),
			withPriority(running("ns1", "preemptee2", "node1", "3", "3G", "pg1", preemptable()), prio),
			pending("ns2", "preemptor1", "3", "3G", "pg2"),
		},
		Nodes:  []*v1.Node{node("node1", "6", "6G"), node("node2", "2", "2G")},
		Queues: []*vcapisv1.Queue{queue("q1", "6", "6G")},
	}
}

// equalPriorityPeerCluster: a preemptor of high priority, and on its node two victims of
// different jobs, one of low priority (an hour old) and one of the preemptor's own priority
// (newer, so Volcano's own victim order, without JobOrder, would evict it first).
func equalPriorityPeerCluster() Cluster {
	return Cluster{
		PriClasses: classes(),
		PodGroups: []*vcapisv1.PodGroup{
			createdAgo(pgPrio("pg-old", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"), time.Hour),
			createdAgo(pgPrio("pg-peer", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "high-priority"), 2*time.Minute),
			createdAgo(pgPrio("pg-hi", "ns2", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"), time.Minute),
		},
		Pods: []*v1.Pod{
			running("ns1", "old", "node1", "2", "2G", "pg-old", preemptable()),
			running("ns1", "peer", "node1", "2", "2G", "pg-peer", preemptable()),
			pending("ns2", "preemptor", "2", "2G", "pg-hi"),
		},
		Nodes:  []*v1.Node{node("node1", "4", "4G")},
		Queues: []*vcapisv1.Queue{queue("q1", "", "")},
	}
}

func testPriorityPlugin(t *testing.T) {
	runAll(t, []Scenario{
		{
			// Upstream's own case, kept for its expectation: both preemptees belong to a job of
			// lower priority than the preemptor's, so priority grants both, and its TaskOrder
			// evicts preemptee1 (priority 0) first. The protection is decided in the two
			// scenarios that follow.
			Name: "upstream TestPreempt: enable preempt low priority",
			Abstain: abstain(controlGranting, "upstream's case: priority grants both preemptees (their job's priority is below the preemptor's),"+
				" as the granting control does; 'same-job victims compare task priority' and 'a job of equal priority is"+
				" not a victim' show the protection"),
			Cluster: priorityPreemptCluster1, Actions: preemptActions,
			Tiers: []conf.Tier{tier(priorityEnableEvict)}, Plugin: "priority", Residual: true,
			Expect: all(expectEvicts("ns1/preemptee1"), func(t *testing.T, o Outcome) {
				if o.Pipelined["ns2/preemptor1"] != "node1" {
					t.Fatalf("upstream expects ns2/pg2 pipelined on node1, got %v", o.Pipelined)
				}
			}),
		},
		// upstream TestPreempt "disable preempt low priority" is not compared: with every flag
		// off the extender entry never asks Caldera, so no answer of Caldera's could change it.
		{
			// Priority's TaskOrder would evict the lower task priority first, which is also the
			// one its preemptable grants: with it on, Volcano's order alone picks "low". Here
			// TaskOrder is off, so the task order is the creation time (newest first): "high"
			// (500, protected against the preemptor's 100) is the newest and would go first.
			Name: "same-job victims compare task priority",
			Cluster: func() Cluster {
				return Cluster{
					PriClasses: classes(),
					PodGroups:  []*vcapisv1.PodGroup{pgPrio("pg1", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority")},
					Pods: []*v1.Pod{
						podCreatedAgo(withPriority(running("ns1", "low", "node1", "2", "2G", "pg1", preemptable()), 10), time.Hour),
						podCreatedAgo(withPriority(running("ns1", "high", "node1", "2", "2G", "pg1", preemptable()), 500), 2*time.Minute),
						podCreatedAgo(withPriority(pending("ns1", "new", "2", "2G", "pg1"), 100), time.Minute),
					},
					Nodes:  []*v1.Node{node("node1", "4", "4G")},
					Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				}
			},
			Actions: preemptActions,
			Tiers:   []conf.Tier{tier(priorityNoTaskOrder)}, Plugin: "priority", Residual: true,
			Expect: expectEvicts("ns1/low"),
		},
		{
			// Between jobs priority grants a victim whose job's priority is below the
			// preemptor's. JobOrder is off, so Volcano orders the victims' jobs by creation time
			// (newest first): pg-peer (high-priority, equal to the preemptor's, so protected) is
			// the newest and would go first; pg-old (low-priority) is an hour old.
			Name:    "a job of equal priority is not a victim",
			Cluster: equalPriorityPeerCluster,
			Actions: preemptActions,
			Tiers:   []conf.Tier{tier(priorityNoJobOrder)}, Plugin: "priority", Residual: true,
			Expect: expectEvicts("ns1/old"),
		},
		{
			// priority registers no ReclaimableFn: the service must abstain.
			// priority alone in the tier: with no ReclaimableFn registered (upstream), no plugin
			// votes and nothing is reclaimed. A Caldera granting the victim would evict busy, as
			// the granting control does. (Beside conformance, which grants busy, the outcome
			// equalled both controls: Caldera's answer could not show.)
			Name: "reclaim: priority has no reclaimable function",
			Abstain: abstain(controlNoPlugin, "priority registers no ReclaimableFn upstream: Caldera's priority takes no part in"+
				" reclaim and nothing is reclaimed, as with no plugin; the granting control differs"), Actions: reclaimActions,
			Tiers: []conf.Tier{tier(priorityEnableEvict)}, Plugin: "priority", Residual: true,
			Cluster: func() Cluster {
				return Cluster{
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						pgPrio("pg-hi", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "high-priority"),
						pgPrio("pg-lo", "ns2", "q2", 1, vcapisv1.PodGroupInqueue, "low-priority"),
					},
					Pods: []*v1.Pod{
						running("ns1", "busy", "node1", "4", "4G", "pg-hi", preemptable()),
						pending("ns2", "reclaimer", "2", "2G", "pg-lo"),
					},
					Nodes:  []*v1.Node{node("node1", "4", "4G")},
					Queues: []*vcapisv1.Queue{queue("q1", "", ""), queue("q2", "", "")},
				}
			},
			Expect: expectEvicts(),
		},
	})
}

// ---- cdp ----------------------------------------------------------------------------------

func testCdpPlugin(t *testing.T) {
	const key = "volcano.sh/cooldown-time"
	cluster := func() Cluster {
		return Cluster{
			PriClasses: classes(),
			PodGroups: []*vcapisv1.PodGroup{
				pgPrio("pg-lo", "default", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
				pgPrio("pg-hi", "default", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
			},
			Pods: []*v1.Pod{
				// cdp_test.go TestPreemptableFn's three tasks. "cool" (protected) is the newest
				// pod of the job, so Volcano's own order (see "victim order") would evict it
				// first; "expired" is the oldest.
				podCreatedAgo(scheduledAgo(annotate(running("default", "cool", "node1", "1", "1G", "pg-lo", preemptable()), key, "600s"), 100*time.Second), 2*time.Minute),
				podCreatedAgo(scheduledAgo(annotate(running("default", "invalid", "node1", "1", "1G", "pg-lo", preemptable()), key, "600abcde"), 100*time.Second), 30*time.Minute),
				podCreatedAgo(scheduledAgo(annotate(running("default", "expired", "node1", "1", "1G", "pg-lo", preemptable()), key, "600s"), 800*time.Second), time.Hour),
				pending("default", "preemptor", "2", "2G", "pg-hi"),
			},
			Nodes:  []*v1.Node{node("node1", "3", "3G")},
			Queues: []*vcapisv1.Queue{queue("q1", "", "")},
		}
	}
	tiers := []conf.Tier{tier(priorityOrderOnly, evictFlags("cdp"))}
	runAll(t, []Scenario{
		{
			Name:    "preempt respects cooldown",
			Cluster: cluster, Actions: preemptActions,
			Tiers: tiers, Plugin: "cdp",
			Expect: expectEvicts("default/expired", "default/invalid"),
		},
		{
			// cdp registers its filter as ReclaimableFn only from v1.12.0 on;
			// before, no plugin in these tiers answers reclaimable and nothing
			// is reclaimed. Caldera follows volcanoVersion.
			Name:    "reclaim respects cooldown",
			Abstain: cdpReclaimAbstain(), Actions: reclaimActions, Tiers: tiers, Plugin: "cdp",
			Cluster: func() Cluster {
				cl := cluster()
				cl.Queues = append(cl.Queues, queue("q2", "", ""))
				cl.PodGroups[1] = pgPrio("pg-hi", "default", "q2", 1, vcapisv1.PodGroupInqueue, "high-priority")
				return cl
			},
			Expect: byRelease("1.12", expectEvicts("default/expired", "default/invalid"), expectEvicts()),
		},
		{
			Name:    "label wins over annotation",
			Actions: preemptActions, Tiers: tiers, Plugin: "cdp",
			Cluster: func() Cluster {
				cl := cluster()
				// The label is read before the annotation: on "cool" an invalid label
				// disables the valid annotation's protection; on "expired" a valid label
				// ("1h") protects a pod whose annotation ("600s") has run out. "expired" is
				// made the newest pod, so Volcano's own order would evict it first; a Caldera
				// reading the annotation first would protect "cool" and leave too little.
				cl.Pods[0].Labels[key] = "soon"
				cl.Pods[2].Labels[key] = "1h"
				podCreatedAgo(cl.Pods[2], time.Minute)
				return cl
			},
			Expect: expectEvicts("default/cool", "default/invalid"),
		},
	})
}

// cdpReclaimAbstain: before v1.12 cdp registers no ReclaimableFn, so Caldera's cdp abstains
// from reclaimable and nothing is reclaimed, as with no plugin.
func cdpReclaimAbstain() *Abstention {
	if rel.AtLeast("1.12") {
		return nil
	}
	return abstain(controlNoPlugin, "cdp registers no ReclaimableFn before v1.12: Caldera abstains and nothing is reclaimed,"+
		" as with no plugin; the granting control differs")
}

// ---- sla ---------------------------------------------------------------------------------

var (
	drfEnq        = conf.PluginOption{Name: "drf", EnabledJobOrder: &yes, EnabledJobEnqueued: &yes}
	proportionEnq = conf.PluginOption{Name: "proportion", EnabledQueueOrder: &yes, EnabledJobEnqueued: &yes}
	gangOrder     = conf.PluginOption{Name: "gang", EnabledJobOrder: &yes}
	slaEnq        = func(wait interface{}) conf.PluginOption {
		args := map[string]interface{}{}
		if wait != nil {
			args["sla-waiting-time"] = wait
		}
		return conf.PluginOption{Name: "sla", Arguments: args, EnabledJobOrder: &yes, EnabledJobEnqueued: &yes}
	}
)

// slaPastDeadlineCluster: three jobs larger than their queue, one with no creation time (past
// any SLA), one a minute old and one ten minutes old.
func slaPastDeadlineCluster() Cluster {
	return Cluster{
		PodGroups: []*vcapisv1.PodGroup{
			// zero creationTimestamp: long past any deadline
			pgMin("old", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending),
			createdAgo(pgMin("new", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), time.Minute),
			createdAgo(pgMin("late", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), 10*time.Minute),
		},
		Queues: []*vcapisv1.Queue{queue("c1", "1", "1G")},
	}
}

func testSlaPlugin(t *testing.T) {
	runAll(t, []Scenario{
		// upstream TestEnqueue "podgroup pending" is not compared: its PodGroups have no
		// MinResources, which Volcano's enqueue action admits before asking any plugin
		// (enqueue.go: MinResources == nil || ssn.JobEnqueueable), so Caldera is never asked.
		// upstream TestEnqueue "queue smaller than MinResources" is not compared: proportion's
		// Reject in the same tier always wins (Session.JobEnqueueable), so no answer of Caldera's
		// sla could change it.
		{
			Name: "sla Permit in tier 1 hides proportion Reject in tier 2", Actions: enqueueActions,
			Tiers: []conf.Tier{tier(slaEnq("3m")), tier(drfEnq, proportionEnq, gangOrder)}, Plugin: "sla", Residual: true,
			Cluster: slaPastDeadlineCluster,
			Expect:  expectPhases(map[string]string{"c1/old": "Inqueue", "c1/new": "Pending", "c1/late": "Inqueue"}),
		},
		{
			Name: "per-job annotation overrides global", Actions: enqueueActions,
			Tiers: []conf.Tier{tier(slaEnq(nil)), tier(drfEnq, proportionEnq)}, Plugin: "sla", Residual: true,
			Cluster: func() Cluster {
				a := createdAgo(pgMin("short", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), 10*time.Minute)
				a.Annotations = map[string]string{"volcano.sh/sla-waiting-time": "5m"}
				b := createdAgo(pgMin("long", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), 10*time.Minute)
				b.Annotations = map[string]string{"sla-waiting-time": "1h"}
				c := createdAgo(pgMin("bad-prefixed", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), 10*time.Minute)
				c.Annotations = map[string]string{"volcano.sh/sla-waiting-time": "-1m", "sla-waiting-time": "2m"}
				return Cluster{PodGroups: []*vcapisv1.PodGroup{a, b, c}, Queues: []*vcapisv1.Queue{queue("c1", "1", "1G")}}
			},
			Expect: expectPhases(map[string]string{"c1/short": "Inqueue", "c1/long": "Pending", "c1/bad-prefixed": "Inqueue"}),
		},
		{
			Name: "non-string sla-waiting-time means no global sla",
			Abstain: abstain(controlNoPlugin, "no global sla and no annotation: sla abstains, which is what no plugin"+
				" answers (enqueue asks no victim verb, so there is no other control); the scenario shows Caldera does not"+
				" reject where Volcano would not (a wrong Reject fails it against in-tree)"), Actions: enqueueActions,
			Tiers: []conf.Tier{tier(slaEnq(1)), tier(drfEnq, proportionEnq)}, Plugin: "sla", Residual: true,
			Cluster: func() Cluster {
				return Cluster{
					PodGroups: []*vcapisv1.PodGroup{pgMin("pg1", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending)},
					Queues:    []*vcapisv1.Queue{queue("c1", "1", "1G")},
				}
			},
			Expect: expectPhases(map[string]string{"c1/pg1": "Pending"}),
		},
	})
}

// behindRejecter adds a tier below tiers whose test-rejecter rejects the job named job. Volcano's
// JobEnqueueable stops at the first tier where a plugin permits, so a Permit from the plugin
// under test admits the job, while an abstention (what a Caldera hosting no plugin answers)
// lets the rejecter keep it Pending: the admission scenarios then differ from their control.
func behindRejecter(tiers []conf.Tier, job string) []conf.Tier {
	return append(append([]conf.Tier{}, tiers...), tier(conf.PluginOption{Name: rejecterName, EnabledJobEnqueued: &yes,
		Arguments: map[string]interface{}{"rejectJob": job}}))
}

// rejecterBefore is behindRejecter(tiers, job) before the release from, tiers from it on.
func rejecterBefore(from string, tiers []conf.Tier, job string) []conf.Tier {
	if rel.AtLeast(from) {
		return tiers
	}
	return behindRejecter(tiers, job)
}

// ---- overcommit ----------------------------------------------------------------------------

func testOvercommitPlugin(t *testing.T) {
	oc := func(factor interface{}) []conf.Tier {
		args := map[string]interface{}{}
		if factor != nil {
			args["overcommit-factor"] = factor
		}
		return []conf.Tier{tier(conf.PluginOption{Name: "overcommit", EnabledJobEnqueued: &yes, Arguments: args})}
	}
	// overcommit_test.go: n1 (2 CPU, 4Gi) + n2 (4 CPU, 16Gi) => idle 7200m at 1.2
	nodes := func() []*v1.Node {
		return []*v1.Node{buildNode("n1", rl("2", "4Gi"), nil), buildNode("n2", rl("4", "16Gi"), nil)}
	}
	cl := func(pgs ...*vcapisv1.PodGroup) func() Cluster {
		return func() Cluster {
			fresh := make([]*vcapisv1.PodGroup, len(pgs))
			for i, pg := range pgs {
				fresh[i] = pg.DeepCopy()
			}
			return Cluster{Nodes: nodes(), PodGroups: fresh, Queues: []*vcapisv1.Queue{queue("c1", "", "")}}
		}
	}
	ns := "test-namespace"
	runAll(t, []Scenario{
		{Name: "pg fits (factor 1.2)", Actions: enqueueActions, Tiers: behindRejecter(oc(1.2), "pg1"), Plugin: "overcommit",
			Cluster: cl(pgMin("pg1", ns, "c1", 2, rl("2000m", "2G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{ns + "/pg1": "Inqueue"})},
		{Name: "factor below 1 resets to 1.2", Actions: enqueueActions, Tiers: behindRejecter(oc(0.8), "pg1"), Plugin: "overcommit",
			Cluster: cl(pgMin("pg1", ns, "c1", 2, rl("7", "2G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{ns + "/pg1": "Inqueue"})},
		{Name: "integer factor", Actions: enqueueActions, Tiers: behindRejecter(oc(2), "pg1"), Plugin: "overcommit",
			Cluster: cl(pgMin("pg1", ns, "c1", 2, rl("11", "2G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{ns + "/pg1": "Inqueue"})},
		{Name: "required resources too large", Actions: enqueueActions, Tiers: oc(1.2), Plugin: "overcommit",
			Cluster: cl(pgMin("pg2", ns, "c1", 2, rl("20000m", "20G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{ns + "/pg2": "Pending"})},
		// upstream "no MinResources" is not compared: the enqueue action admits a PodGroup
		// without MinResources before asking any plugin, so Caldera is never asked.
		{Name: "existing Inqueue job reserves resources", Actions: enqueueActions, Tiers: oc(nil), Plugin: "overcommit",
			Cluster: cl(pgMin("in", ns, "c1", 1, rl("6", "1G"), vcapisv1.PodGroupInqueue),
				pgMin("new", ns, "c1", 1, rl("2", "1G"), vcapisv1.PodGroupPending)),
			Expect: expectPhases(map[string]string{ns + "/new": "Pending"})},
		{Name: "enqueue decisions accumulate within a session", Actions: enqueueActions, Tiers: oc(nil), Plugin: "overcommit",
			Cluster: cl(pgMin("a", ns, "c1", 1, rl("4", "1G"), vcapisv1.PodGroupPending),
				pgMin("b", ns, "c1", 1, rl("4", "1G"), vcapisv1.PodGroupPending))},
		{Name: "missing scalar resource rejects", Actions: enqueueActions, Tiers: oc(nil), Plugin: "overcommit",
			Cluster: cl(pgMin("gpu", ns, "c1", 1, rl("1", "1G", gpu("1")), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{ns + "/gpu": "Pending"})},
		{
			// A Running job still reserves MinResources - allocated. Up to
			// v1.14.2 GetInqueueResource took a scalar's whole-unit Value()
			// (2 GPUs = 2) against milli-unit allocations (1000), so the job
			// reserves nothing and the 3-GPU job fits in 4*1.2 - 1 GPUs; from
			// v1.14.3/v1.15.1 it reserves 1 GPU and the new job waits.
			// Caldera runs with the module's patch release as its
			// volcanoVersion ("1.14.1", "1.15.1") and follows it.
			Name: "running job's GPU reservation (units fixed in v1.14.3 and v1.15.1)", Actions: enqueueActions,
			// Before v1.15 overcommit admits pg-new (a Permit the rejecter below shows); from
			// v1.15.1 it rejects, which differs from no plugin without the rejecter.
			Tiers: rejecterBefore("1.15", oc(nil), "pg-new"), Plugin: "overcommit",
			Cluster: func() Cluster {
				gpuNode := buildNode("n1", rl("8", "8Gi", gpu("4"), api.ScalarResource{Name: "pods", Value: "10"}), nil)
				runner := buildPod(ns, "run-0", "n1", v1.PodRunning, rl("1", "1G", gpu("1")), "pg-run", map[string]string{}, nil)
				return Cluster{
					Nodes: []*v1.Node{gpuNode},
					Pods:  []*v1.Pod{runner},
					PodGroups: []*vcapisv1.PodGroup{
						pgMin("pg-run", ns, "c1", 1, rl("1", "1G", gpu("2")), vcapisv1.PodGroupRunning),
						pgMin("pg-new", ns, "c1", 1, rl("1", "1G", gpu("3")), vcapisv1.PodGroupPending),
					},
					Queues: []*vcapisv1.Queue{queue("c1", "", "")},
				}
			},
			Expect: byRelease("1.15", expectPhases(map[string]string{ns + "/pg-new": "Pending"}),
				expectPhases(map[string]string{ns + "/pg-new": "Inqueue"})),
		},
	})
}

// ---- resourcequota ---------------------------------------------------------------------------

func testResourceQuotaPlugin(t *testing.T) {
	rqOpt := conf.PluginOption{Name: "resourcequota", EnabledJobEnqueued: &yes}
	tiers := []conf.Tier{tier(rqOpt)}
	cl := func(quota bool, pgs ...*vcapisv1.PodGroup) func() Cluster {
		return func() Cluster {
			c := Cluster{Queues: []*vcapisv1.Queue{queue("c1", "", "")}, Nodes: []*v1.Node{node("n1", "100", "100G")}}
			for _, pg := range pgs {
				c.PodGroups = append(c.PodGroups, pg.DeepCopy())
			}
			if quota {
				c.ResourceQuotas = append(c.ResourceQuotas, buildResourceQuota("test", "default", rl("2000m", "2G")))
			}
			return c
		}
	}
	runAll(t, []Scenario{
		{Name: "upstream: capacity can match", Actions: enqueueActions, Tiers: behindRejecter(tiers, "pg1"), Plugin: "resourcequota",
			Cluster: cl(true, pgMin("pg1", "default", "c1", 2, rl("2000m", "2G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{"default/pg1": "Inqueue"})},
		{Name: "upstream: capacity can't match", Actions: enqueueActions, Tiers: tiers, Plugin: "resourcequota",
			Cluster: cl(true, pgMin("pg2", "default", "c1", 2, rl("20000m", "20G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{"default/pg2": "Pending"})},
		{Name: "upstream: no ResourceQuota object", Actions: enqueueActions, Tiers: behindRejecter(tiers, "pg2"), Plugin: "resourcequota",
			Cluster: cl(false, pgMin("pg2", "default", "c1", 2, rl("20000m", "20G"), vcapisv1.PodGroupPending)),
			Expect:  expectPhases(map[string]string{"default/pg2": "Inqueue"})},
		// upstream "MinResources not set" is not compared: the enqueue action admits a PodGroup
		// without MinResources before asking any plugin, so Caldera is never asked.
		{Name: "pending usage accumulates within a session", Actions: enqueueActions, Tiers: tiers, Plugin: "resourcequota",
			Cluster: cl(true, pgMin("a", "default", "c1", 1, rl("1500m", "1G"), vcapisv1.PodGroupPending),
				pgMin("b", "default", "c1", 1, rl("1500m", "1G"), vcapisv1.PodGroupPending))},
		{
			// resourcequota_test.go TestJobEnqueuedOnOtherPluginsReject (HEAD);
			// before v1.16 resourcequota books usage inside JobEnqueueable, so
			// the outcome depends on job order -- the comparison still must agree.
			Name: "upstream: JobEnqueued on other plugins reject", Actions: enqueueActions, Plugin: "resourcequota",
			Tiers: []conf.Tier{tier(rqOpt, conf.PluginOption{Name: rejecterName, EnabledJobEnqueued: &yes,
				Arguments: map[string]interface{}{"rejectJob": "pgA"}})},
			Cluster: func() Cluster {
				return Cluster{
					Nodes:          []*v1.Node{node("n1", "4", "4G")},
					Queues:         []*vcapisv1.Queue{queue("c1", "", "")},
					ResourceQuotas: []*v1.ResourceQuota{buildResourceQuota("rq1", "ns1", rl("1", "1G"))},
					PodGroups: []*vcapisv1.PodGroup{
						pgMin("pgA", "ns1", "c1", 1, rl("1", "1G"), vcapisv1.PodGroupPending),
						pgMin("pgB", "ns1", "c1", 1, rl("1", "1G"), vcapisv1.PodGroupPending),
					},
					Pods: []*v1.Pod{pending("ns1", "pa", "1", "1G", "pgA"), pending("ns1", "pb", "1", "1G", "pgB")},
				}
			},
		},
	})
}

// ---- pdb ------------------------------------------------------------------------------------

func pdbObj(name, ns string, allowed int32, match map[string]string) *policyv1.PodDisruptionBudget {
	one := intstr.IntOrString{Type: intstr.Int, IntVal: 1}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: match}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func testPdbPlugin(t *testing.T) {
	web := func() map[string]string { return map[string]string{vcapisv1.PodPreemptable: "true", "app": "web"} }
	preemptCl := func(pdbs ...*policyv1.PodDisruptionBudget) func() Cluster {
		return func() Cluster {
			c := Cluster{
				PriClasses: classes(),
				PodGroups: []*vcapisv1.PodGroup{
					pgPrio("pg-web", "default", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
					pgPrio("pg-hi", "default", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"),
				},
				Pods: []*v1.Pod{
					running("default", "web-1", "node1", "1", "1G", "pg-web", web()),
					running("default", "web-2", "node1", "1", "1G", "pg-web", web()),
					pending("default", "preemptor", "1", "1G", "pg-hi"),
				},
				Nodes:  []*v1.Node{node("node1", "2", "2G")},
				Queues: []*vcapisv1.Queue{queue("q1", "", "")},
			}
			for _, p := range pdbs {
				c.PDBs = append(c.PDBs, p.DeepCopy())
			}
			return c
		}
	}
	reclaimCl := func(pdbs ...*policyv1.PodDisruptionBudget) func() Cluster {
		return func() Cluster {
			c := preemptCl(pdbs...)()
			c.Queues = append(c.Queues, queue("q2", "", ""))
			c.PodGroups[1] = pgPrio("pg-q2", "default", "q2", 1, vcapisv1.PodGroupInqueue, "low-priority")
			c.Pods[2] = pending("default", "reclaimer", "1", "1G", "pg-q2")
			return c
		}
	}
	// plainCl adds "plain" (1 CPU, no budget selects it) in pg-plain, an hour old, beside web-1
	// and web-2 in pg-web, a minute old, on a 3-CPU node; the preemptor (reclaimer) needs want
	// CPUs. Volcano's own order (same priority: the newest job first) evicts the web pods before
	// plain, so a budget that spares a web pod shows in which pods are evicted.
	plainCl := func(base func(...*policyv1.PodDisruptionBudget) func() Cluster, want string,
		pdbs ...*policyv1.PodDisruptionBudget) func() Cluster {
		return func() Cluster {
			c := base(pdbs...)()
			c.Nodes = []*v1.Node{node("node1", "3", "3G")}
			createdAgo(c.PodGroups[0], time.Minute)
			c.PodGroups = append(c.PodGroups, createdAgo(pgPrio("pg-plain", "default", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"), time.Hour))
			podCreatedAgo(c.Pods[0], 3*time.Minute)
			podCreatedAgo(c.Pods[1], 2*time.Minute)
			c.Pods = append(c.Pods, running("default", "plain", "node1", "1", "1G", "pg-plain", preemptable()))
			c.Pods[2].Spec.Containers[0].Resources.Requests = rl(want, want+"G")
			return c
		}
	}
	// Which of web-1 and web-2 spends a single disruption follows the evictee order, i.e. Go
	// map iteration in Volcano itself: they are one class; plain is compared by identity.
	webClass := classDiff(map[string]string{"default/web-1": "default/web-*", "default/web-2": "default/web-*"})
	tiers := []conf.Tier{tier(priorityOrderOnly, conf.PluginOption{Name: "pdb", EnabledPreemptable: &yes, EnabledReclaimable: &yes})}
	sel := map[string]string{"app": "web"}
	runAll(t, []Scenario{
		{Name: "preempt without pdbs",
			Abstain: abstain(controlGranting, "no budget applies: pdb grants every evictee, as the granting control does; the no-plugin control differs"), Cluster: preemptCl(), Actions: preemptActions, Tiers: tiers, Plugin: "pdb",
			Expect: func(t *testing.T, o Outcome) {
				if len(o.Evicts) != 1 {
					t.Fatalf("in-tree: want one eviction, got %v", o.Evicts)
				}
			}},
		{Name: "preempt with pdb allowing 0",
			Abstain: abstain(controlNoPlugin, "pdb protects every candidate: no victim, as no victim vote at all; the granting control differs"), Cluster: preemptCl(pdbObj("web", "default", 0, sel)), Actions: preemptActions,
			Tiers: tiers, Plugin: "pdb", Expect: expectEvicts()},
		// Both web pods protected: the newest job's pods would go first, plain goes instead.
		{Name: "preempt with pdb allowing 0, an unprotected pod beside", Actions: preemptActions, Tiers: tiers, Plugin: "pdb",
			Cluster: plainCl(preemptCl, "1", pdbObj("web", "default", 0, sel)), Expect: expectEvicts("default/plain")},
		// One disruption: one web pod and plain make the 2 CPUs (web-1 and web-2 without pdb).
		{Name: "preempt with pdb allowing 1", Actions: preemptActions, Tiers: tiers, Plugin: "pdb", Diff: webClass,
			Cluster: plainCl(preemptCl, "2", pdbObj("web", "default", 1, sel)),
			Expect: func(t *testing.T, o Outcome) {
				if d := webClass(Outcome{Evicts: []string{"default/plain", "default/web-1"}}, Outcome{Evicts: o.Evicts}); d != "" {
					t.Fatalf("in-tree: want plain and one web pod evicted: %s", d)
				}
			}},
		{Name: "preempt with pdb allowing 1, preemptor needs 2 victims",
			Abstain: abstain(controlNoPlugin, "one disruption cannot free two victims' room: nothing is evicted, as with no victim vote; the granting control differs"), Actions: preemptActions, Tiers: tiers, Plugin: "pdb",
			Cluster: func() Cluster {
				c := preemptCl(pdbObj("web", "default", 1, sel))()
				c.Pods[2] = pending("default", "preemptor", "2", "2G", "pg-hi")
				return c
			}},
		{Name: "preempt with pdb in another namespace",
			Abstain: abstain(controlGranting, "the budget is in another namespace: pdb grants every evictee, as the granting control does; the no-plugin control differs"), Cluster: preemptCl(pdbObj("web", "other", 0, sel)), Actions: preemptActions,
			Tiers: tiers, Plugin: "pdb"},
		{Name: "reclaim with pdb allowing 0",
			Abstain: abstain(controlNoPlugin, "pdb protects every candidate: no victim, as no victim vote at all; the granting control differs"), Cluster: reclaimCl(pdbObj("web", "default", 0, sel)), Actions: reclaimActions,
			Tiers: tiers, Plugin: "pdb", Expect: expectEvicts()},
		{Name: "reclaim with pdb allowing 0, an unprotected pod beside", Actions: reclaimActions, Tiers: tiers, Plugin: "pdb",
			Cluster: plainCl(reclaimCl, "1", pdbObj("web", "default", 0, sel)), Expect: expectEvicts("default/plain")},
		{Name: "reclaim with pdb allowing 1", Actions: reclaimActions, Tiers: tiers, Plugin: "pdb", Diff: webClass,
			Cluster: plainCl(reclaimCl, "2", pdbObj("web", "default", 1, sel)),
			Expect: func(t *testing.T, o Outcome) {
				if d := webClass(Outcome{Evicts: []string{"default/plain", "default/web-1"}}, Outcome{Evicts: o.Evicts}); d != "" {
					t.Fatalf("in-tree: want plain and one web pod evicted: %s", d)
				}
			}},
	})
}
