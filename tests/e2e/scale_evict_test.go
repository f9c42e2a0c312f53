//go:build scale

package e2e

// The evict group of the cluster-scale benchmark (scale_test.go): priority, conformance and pdb
// (in-tree, or hosted by Caldera with min-runtime beside them), under a preemption workload.
//
// The cluster is first filled with low-priority pods of 3 CPU (ten per 32-CPU node: 2 CPU left
// on each), a quarter of them covered by a PodDisruptionBudget that allows no disruption (its
// status written as the disruption controller, not run here, would) and of the lowest priority,
// so that they are the victims Volcano would take first if nothing protected them. Once they are
// bound and reported Running (runScale waits for the fake kubelet: a victim whose status changes
// while Volcano evicts it is not evicted), high-priority pods of 3 CPU arrive, one for every
// tenth low pod, each its own job: each fits only where
// Volcano's preempt action evicts a low pod, and never a protected one. The run measures from
// the preemptors' arrival: how long until they are bound, how many pods were evicted, and
// whether any protected pod was (a decision difference, whatever the scheduler).
//
// Caldera hosts min-runtime too, with no minimum (defaultPreemptMinRuntime 0s): it is asked and
// computes on every preemptable call but protects nothing, so decisions stay comparable with the
// in-tree run, which has no such plugin.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	evictPodCPU     = "3"
	protectedPrefix = "pjob-" // jobs whose pods the PDB covers
	preemptorPrefix = "high-"
)

func evictGroup() scaleGroup {
	return scaleGroup{
		intree: `actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: pdb
- plugins:
  - name: predicates
  - name: nodeorder
`,
		caldera: `volcanoVersion: "1.14.1"
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: pdb
    arguments: {source: kubernetes, kubeconfig: "{{KUBECONFIG}}"}
  - name: min-runtime
`,
	}
}

// createEvictFill creates the low-priority pods (jobs of ten, minMember 1 so that gang lets any
// pod go) and the PDBs covering every fourth job.
func createEvictFill(t *testing.T, c *Cluster, b bulk, w workspace, pods int) {
	ctx := context.Background()
	c.EnsurePriorityClass(t, "scale-low", 10)
	// The protected jobs have the lowest priority, so Volcano's preempt action takes their pods
	// first (its victims queue orders by priority, lowest first): a pdb that protects nothing
	// (bench cluster --mutant pdb) evicts them for certain, where at one priority the victim
	// among equals was Volcano's choice and a mutant smoke once evicted none of them (CI).
	c.EnsurePriorityClass(t, "scale-lowest", 5)
	c.EnsurePriorityClass(t, "scale-high", 1000)
	none := intstr.FromInt32(1 << 20) // minAvailable above any count: no disruption allowed
	for i := 0; i < scaleNamespaces; i++ {
		ns := w.ns(i)
		pdb, err := b.kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "protected"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &none,
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"scale-protected": "true"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0}
		if _, err := b.kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	parallel(t, pods/10, func(j int) error {
		job := JobSpec{Name: fmt.Sprintf("job-%05d", j), Pods: 10, MinMember: 1, Request: Res(evictPodCPU, "1Gi"), PriorityClass: "scale-low"}
		if j%4 == 0 {
			job.Name = fmt.Sprintf("%s%05d", protectedPrefix, j)
			job.PodLabels = map[string]string{"scale-protected": "true"}
			job.PriorityClass = "scale-lowest"
		}
		return createJob(context.Background(), b.kube, b.vc, w.ns(j%scaleNamespaces), job)
	})
}

// createPreemptors creates n high-priority pods, each a job of its own: gang's JobStarvingFn
// stops a job preempting once minMember of its pods run, so a job of ten with minMember 1 would
// preempt for one pod only.
func createPreemptors(t *testing.T, b bulk, w workspace, n int) {
	parallel(t, n, func(j int) error {
		return createJob(context.Background(), b.kube, b.vc, w.ns(j%scaleNamespaces), JobSpec{
			Name: fmt.Sprintf("%s%05d", preemptorPrefix, j), Pods: 1, Request: Res(evictPodCPU, "1Gi"),
			PriorityClass: "scale-high",
		})
	})
}

// evictions: the scale pods the fake kubelet removed after since (Volcano's evictions; the
// workload's own deletion uses no grace period and never reaches it), and how many of them
// a PDB protected.
func evictions(c *Cluster, w workspace, since time.Time) (evicted, protected int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, at := range c.deleted {
		if !strings.HasPrefix(key, string(w)) || at.Before(since) {
			continue
		}
		evicted++
		if strings.Contains(key, "/"+protectedPrefix) {
			protected++
		}
	}
	return evicted, protected
}

// evictPods lists the run's pods (every namespace of its workspace).
func evictPods(t *testing.T, b bulk, w workspace) []corev1.Pod {
	var all []corev1.Pod
	for i := 0; i < scaleNamespaces; i++ {
		pods, err := b.kube.CoreV1().Pods(w.ns(i)).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("listing %s: %v", w.ns(i), err)
			continue
		}
		all = append(all, pods.Items...)
	}
	return all
}

// fillNotRunning: the fill's pods that have a node but are not yet reported Running by the fake
// kubelet. Volcano may pick such a pod as a victim (Bound is preemptable) while the fake
// kubelet's status update for it is still on its way, and its eviction then fails on the
// conflict: runScale waits until there are none before the preemptors come, and records how
// many there were when they came (0 unless the time box ended the wait).
func fillNotRunning(t *testing.T, b bulk, w workspace) int {
	n := 0
	for _, p := range evictPods(t, b, w) {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning {
			n++
		}
	}
	return n
}

// evictLeftovers: at the end of an evict run, the preemptors still without a node, each with
// the node Volcano nominated it to ("none": no preemption placed it), and the run's pods still
// terminating (evicted, not yet removed by the fake kubelet), each with its node. A preemptor
// left pending beside a terminating pod on its nominated node is the harness's doing (the
// fake kubelet never removed that victim); one with no pod terminating in its way is
// Volcano's own: it evicted for it, the next session's allocate gave the freed room to another
// pending preemptor, and preempt refuses it for good since its nominated node passes the
// predicates ("nominated node is already schedulable", volcano-sh/volcano#5131; seen with
// CALDERA_SCALE_SCHEDULER_V=3 under load).
func evictLeftovers(t *testing.T, b bulk, w workspace) (pending, terminating []string) {
	for _, p := range evictPods(t, b, w) {
		key := p.Namespace + "/" + p.Name
		switch {
		case p.DeletionTimestamp != nil:
			terminating = append(terminating, key+" on "+p.Spec.NodeName)
		case strings.HasPrefix(p.Name, preemptorPrefix) && p.Spec.NodeName == "":
			nominated := p.Status.NominatedNodeName
			if nominated == "" {
				nominated = "none"
			}
			pending = append(pending, key+" nominated to "+nominated)
		}
	}
	sort.Strings(pending)
	sort.Strings(terminating)
	return pending, terminating
}
