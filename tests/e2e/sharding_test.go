package e2e

// sharded (issue 50): vc-scheduler with node sharding (--scheduler-sharding-mode=hard and a
// NodeShard naming two of the three nodes, Volcano v1.14) and Caldera in compare mode beside it.
// Volcano's snapshot holds every Ready node, the shard's and the other (Snapshot,
// pkg/scheduler/cache/cache.go; the shard is only NodesInShard, which the extender's
// OnSessionOpenRequest does not carry), and Caldera derives the same without knowing of the
// shard: the comparisons find no difference at quiescence (checkSessionStateAtEnd). The shard
// decides the placement: the node outside it carries a pod, so Caldera's MostAllocated scores
// (resource-strategy-fit, as in the placement scenario, where all eight pods go to the loaded
// node) prefer it, yet hard mode fails it before any predicate and every pod lands on the shard.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	shardv1alpha1 "volcano.sh/apis/pkg/apis/shard/v1alpha1"
)

const shardName = "caldera-e2e-shard"

func testSharded(t *testing.T, c *Cluster) {
	ctx := context.Background()
	shards := c.VC.ShardV1alpha1().NodeShards()
	shard := &shardv1alpha1.NodeShard{
		ObjectMeta: metav1.ObjectMeta{Name: shardName},
		Spec:       shardv1alpha1.NodeShardSpec{NodesDesired: []string{"shard-a", "shard-b"}},
	}
	if _, err := shards.Create(ctx, shard, metav1.CreateOptions{}); err != nil {
		t.Fatalf("NodeShard %s: %v", shardName, err)
	}
	t.Cleanup(func() { _ = shards.Delete(context.Background(), shardName, metav1.DeleteOptions{}) })
	s := c.newScenario(t, "sharded", withSessionState(placementConfig, "compare"), "enqueue, allocate, backfill",
		scenarioOptions{schedulerArgs: []string{
			"--scheduler-sharding-mode=hard", "--scheduler-sharding-name=" + shardName,
		}},
		NodeSpec{Name: "shard-a", CPU: "16", Memory: "32Gi"},
		NodeSpec{Name: "shard-b", CPU: "16", Memory: "32Gi"},
		NodeSpec{Name: "outside", CPU: "16", Memory: "32Gi"},
	)
	s.CreateBoundPod(t, "ballast", "outside", Res("1", "1Gi"))
	// vc-scheduler took the shard: it writes the nodes it uses into the NodeShard's status.
	if err := waitFor(30*time.Second, func() (bool, error) {
		got, err := shards.Get(ctx, shardName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.Status.NodesInUse) == 2, nil
	}); err != nil {
		t.Fatalf("vc-scheduler did not take NodeShard %s (status.nodesInUse): %v", shardName, err)
	}
	time.Sleep(2 * time.Second) // the scheduler's cache sees the ballast before the job
	s.CreateJob(t, JobSpec{Name: "pack", Pods: 8, Request: Res("1", "1Gi")})
	got := s.WaitBound(t, "pack", 8, 60*time.Second)
	t.Logf("sharded: %v", got)
	for pod, node := range got {
		if node != "shard-a" && node != "shard-b" {
			s.Wrong(t, "%s on %s, outside NodeShard %s (shard-a, shard-b): %v", pod, node, shardName, got)
		}
	}
	s.WaitPodGroupPhase(t, "pack", "Running", 30*time.Second)
	// The shard decided it: hard mode failed the node outside before any predicate
	// (PredicateNodes, pkg/scheduler/util/predicate_helper.go, logged at -v 3).
	if log, err := os.ReadFile(s.Scheduler.log); err != nil || !strings.Contains(string(log), "node outside is not in scheduler shard") {
		s.Wrong(t, "vc-scheduler's log does not show the node outside failed as not in its shard (%v)", err)
	}
	if n := s.Caldera.Decisions(t, "resource-strategy-fit", "prioritize", "scored"); n < 8 {
		t.Errorf("resource-strategy-fit scored %v prioritize calls, want at least one per pod", n)
	}
	// The scenario is about the comparison: its Caldera compares whatever
	// CALDERA_E2E_SESSION_STATE says for the others (checkSessionStateAtEnd checks it then).
	if scenarioSessionState() != "compare" && mutatedVerb() == "" {
		s.CheckSessionStateAtQuiescence(t)
	}
}
