package suite

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"

	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// fixtureVerbs are the verb names used while capturing; they are also the
// fixture file names (<verb>.request.json).
var fixtureVerbs = map[string]string{
	verbOnSessionOpen:  "onSessionOpen",
	verbOnSessionClose: "onSessionClose",
	verbPredicate:      "predicate",
	verbPrioritize:     "prioritize",
	verbPreemptable:    "preemptable",
	verbReclaimable:    "reclaimable",
	verbQueueOverused:  "queueOverused",
	verbJobEnqueueable: "jobEnqueueable",
	verbJobReady:       "jobReady",
	verbAllocateFunc:   "allocateFunc",
	verbDeallocateFunc: "deallocateFunc",
}

// testCaptureFixtures records the request bodies the release's extender
// plugin really marshals, and writes them to plugins/api/captured/volcano-<minor>
// (package data: Caldera's tests and plugin authors' test kit read them there).
// Gated: CALDERA_CAPTURE_FIXTURES=1 go test -run TestVolcano/CaptureFixtures
func testCaptureFixtures(t *testing.T) {
	dir := filepath.Join(repoRoot(), "plugins", "api", "captured", "volcano-"+rel.Version)
	if os.Getenv("CALDERA_CAPTURE_FIXTURES") != "1" {
		t.Skipf("set CALDERA_CAPTURE_FIXTURES=1 to rewrite %s", dir)
	}
	verbsToCapture := releaseVerbs(fixtureVerbs)
	rec := newRecorder(t, "", neutral)
	ext := extenderOption(rec.URL, allFlags(), ExtOpts{Verbs: verbsToCapture})

	// Session 1: enqueue + allocate on two nodes (prioritize needs >1 node).
	s1 := func() Cluster {
		pgPending := pgMin("pg-pending", "ns1", "q1", 1, rl("1", "1G"), vcapisv1.PodGroupPending)
		pgPending.Spec.PriorityClassName = "high-priority"
		pgPending.Annotations = map[string]string{"volcano.sh/sla-waiting-time": "10m"}
		gpuPod := pending("ns1", "worker-0", "1", "1G", "pg-pending")
		gpuPod.Spec.Containers[0].Name = "main"
		gpuPod.Labels["volcano.sh/task-spec"] = "worker"
		gpuPod.Annotations["volcano.sh/task-spec"] = "worker"
		return Cluster{
			Nodes:      []*v1.Node{node("node1", "4", "8Gi"), node("node2", "4", "8Gi")},
			PriClasses: classes(),
			PodGroups: []*vcapisv1.PodGroup{
				pgPending,
				pgPrio("pg-running", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
			},
			Pods: []*v1.Pod{
				gpuPod,
				running("ns1", "runner-0", "node1", "1", "1G", "pg-running", preemptable()),
			},
			Queues:         []*vcapisv1.Queue{queue("q1", "8", "16Gi")},
			ResourceQuotas: []*v1.ResourceQuota{buildResourceQuota("quota", "ns1", rl("10", "20Gi"))},
		}
	}
	runSession(t, s1(), []conf.Tier{tier(ext)}, []framework.Action{enqueueNew(), allocateNew()})

	// Session 2: preempt (preemptable, deallocateFunc on eviction).
	tiers := []conf.Tier{tier(priorityOrderOnly, evictFlags("conformance"), ext)}
	runSession(t, kubeSystemVictimCluster(), tiers, preemptActions())

	// Session 3: reclaim across queues (reclaimable).
	reclaimCl := func() Cluster {
		return Cluster{
			Nodes:      []*v1.Node{node("node1", "4", "4G")},
			PriClasses: classes(),
			PodGroups: []*vcapisv1.PodGroup{
				pgPrio("pg-app", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"),
				pgPrio("pg-q2", "ns2", "q2", 1, vcapisv1.PodGroupInqueue, "low-priority"),
			},
			Pods: []*v1.Pod{
				running("ns1", "app-pod", "node1", "4", "4G", "pg-app", preemptable()),
				pending("ns2", "reclaimer", "2", "2G", "pg-q2"),
			},
			Queues: []*vcapisv1.Queue{queue("q1", "", ""), queue("q2", "", "")},
		}
	}
	runSession(t, reclaimCl(), tiers, []framework.Action{reclaimNew()})

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var missing, written []string
	for _, verb := range verbsToCapture {
		rec.mu.Lock()
		body, ok := rec.bodies[verb]
		rec.mu.Unlock()
		if !ok {
			missing = append(missing, verb)
			continue
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			t.Fatalf("%s: body is not JSON: %v", verb, err)
		}
		pretty.WriteByte('\n')
		if err := os.WriteFile(filepath.Join(dir, verb+".request.json"), pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		written = append(written, verb)
	}
	sort.Strings(written)
	sort.Strings(missing)
	t.Logf("wrote %v; calls %v", written, rec.Calls())
	if len(missing) > 0 {
		t.Errorf("verbs never called: %v", missing)
	}
}
