//go:build scale

package e2e

// The node group of the cluster-scale benchmark (scale_test.go): nodegroup, resource-strategy-fit
// and task-topology, in-tree or hosted by Caldera, and the placement fact each of them decides.
//
// Four queues, queue qI requiring node group ngI alone (createScaleNodes labels the nodes ng0 to
// ng3 in turn), so each queue has a quarter of the nodes to itself. resource-strategy-fit scores
// cpu LeastAllocated at plugin weight 1 (a pod of 1 CPU lowers a 32-CPU node's score by 3.125);
// task-topology (weight 1) adds 10 to a node per pod of the task's job already there (100 over the
// job's bucket of ten). The jobs of q2 and q3 carry `volcano.sh/task-topology-affinity: worker`
// (their pods the task-spec annotation task-topology reads), so their ten pods land together
// (+10 a pod outweighs -3.125); those of q0 and q1 carry none, so each of their pods goes to a
// least allocated node of its group. Whatever Volcano's random choice among equal nodes, with the
// three plugins at work:
//
//   - podsOutsideNodeGroups (nodegroup): pods bound on a node outside their queue's groups, 0;
//   - spreadWithinNodeGroup (resource-strategy-fit): over the groups of q0 and q1, the largest
//     difference between the pods on two nodes of one group: 0 when the group's pods divide
//     evenly over its nodes (every size of the benchmark: ten pods a node), 1 otherwise;
//   - affinityJobsSplit (task-topology): jobs of q2 and q3 whose pods are on more than one node, 0.
//
// Through the neutral server nothing filters or scores (the node group's conf has no in-tree
// scorer), so Volcano places each pod on a node chosen at random among all: each fact is far from
// its in-tree value, and bench/cluster.py fails a run where in-tree equals the neutral server on a
// fact (no control: the fact would not show a Caldera that answers nothing).

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

const (
	nodeGroupLabel    = "volcano.sh/nodegroup-name"
	topologyAffinity  = "volcano.sh/task-topology-affinity"
	taskSpecKey       = "volcano.sh/task-spec"
	affinityQueueFrom = 2 // q2 and q3: jobs with task-topology affinity; q0 and q1: spread
)

func nodeGroup() scaleGroup {
	var queues []*vcsched.Queue
	for i := 0; i < scaleNodeGroups; i++ {
		queues = append(queues, &vcsched.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%d", i)},
			Spec: vcsched.QueueSpec{Weight: 1, Affinity: &vcsched.Affinity{NodeGroupAffinity: &vcsched.NodeGroupAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []string{fmt.Sprintf("ng%d", i)},
			}}},
		})
	}
	return scaleGroup{
		intree: `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: nodegroup
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 1
      resources:
        cpu: {type: LeastAllocated, weight: 1}
  - name: task-topology
`,
		caldera: `volcanoVersion: "1.14.1"
tiers:
- plugins:
  - name: nodegroup
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 1
      resources:
        cpu: {type: LeastAllocated, weight: 1}
  - name: task-topology
`,
		queues: queues,
	}
}

// nodeGroupJob dresses job j of the node group: its queue, and for the queues of task-topology's
// fact the affinity of its workers.
func nodeGroupJob(job *JobSpec, g scaleGroup, j int) {
	q := j % len(g.queues)
	job.Queue = g.queues[q].Name
	if q >= affinityQueueFrom {
		job.PGAnnotations[topologyAffinity] = "worker"
		job.PodAnnotations = map[string]string{taskSpecKey: "worker"}
	}
}

// nodePlacement reads the placement facts above from the final pod -> node bindings.
func nodePlacement(t *testing.T, b bulk, w workspace, g scaleGroup) map[string]int {
	ctx := context.Background()
	nodes, err := b.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groupOfNode := map[string]string{}
	podsOn := map[string]int{}
	for _, n := range nodes.Items {
		if group, ok := n.Labels[nodeGroupLabel]; ok && strings.HasPrefix(n.Name, "scale-") {
			groupOfNode[n.Name] = group
			podsOn[n.Name] = 0
		}
	}
	allowed := map[string]map[string]bool{} // queue -> its required node groups
	spread := map[string]bool{}             // the node groups of the queues without affinity
	for i, q := range g.queues {
		allowed[q.Name] = map[string]bool{}
		for _, group := range q.Spec.Affinity.NodeGroupAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			allowed[q.Name][group] = true
			if i < affinityQueueFrom {
				spread[group] = true
			}
		}
	}
	facts := map[string]int{"podsOutsideNodeGroups": 0, "spreadWithinNodeGroup": 0, "affinityJobsSplit": 0}
	for i := 0; i < scaleNamespaces; i++ {
		ns := w.ns(i)
		pgs, err := b.vc.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		queueOf, affine := map[string]string{}, map[string]bool{}
		for _, pg := range pgs.Items {
			queueOf[pg.Name] = pg.Spec.Queue
			affine[pg.Name] = pg.Annotations[topologyAffinity] != ""
		}
		pods, err := b.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodesOfJob := map[string]map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			job := p.Labels["job"]
			podsOn[p.Spec.NodeName]++
			if !allowed[queueOf[job]][groupOfNode[p.Spec.NodeName]] {
				facts["podsOutsideNodeGroups"]++
			}
			if affine[job] {
				if nodesOfJob[job] == nil {
					nodesOfJob[job] = map[string]bool{}
				}
				nodesOfJob[job][p.Spec.NodeName] = true
			}
		}
		for _, on := range nodesOfJob {
			if len(on) > 1 {
				facts["affinityJobsSplit"]++
			}
		}
	}
	least, most := map[string]int{}, map[string]int{}
	for node, group := range groupOfNode {
		if !spread[group] {
			continue
		}
		n := podsOn[node]
		if low, seen := least[group]; !seen || n < low {
			least[group] = n
		}
		if n > most[group] {
			most[group] = n
		}
	}
	for group := range least {
		facts["spreadWithinNodeGroup"] = max(facts["spreadWithinNodeGroup"], most[group]-least[group])
	}
	return facts
}

// withoutPlugin is a Caldera configuration with the named plugin's entry (and its arguments)
// taken out: the mutant a smoke with --mutant serves, while vc-scheduler's conf is still the
// merge of the whole configuration, so Volcano keeps asking Caldera for the plugin.
func withoutPlugin(t *testing.T, config, plugin string) string {
	var out []string
	skipping, indent, found := false, 0, false
	for _, line := range strings.Split(config, "\n") {
		depth := len(line) - len(strings.TrimLeft(line, " "))
		if skipping && (depth > indent || strings.TrimSpace(line) == "") {
			continue
		}
		skipping = false
		if strings.TrimSpace(line) == "- name: "+plugin {
			skipping, indent, found = true, depth, true
			continue
		}
		out = append(out, line)
	}
	if !found {
		t.Fatalf("--mutant %s: the group's Caldera configuration hosts no such plugin:\n%s", plugin, config)
	}
	return strings.Join(out, "\n") + "\n"
}
