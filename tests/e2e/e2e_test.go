package e2e

// End to end: Volcano's real scheduler binary (v1.14.1) against a real kube-apiserver (v1.34.1) and
// etcd (v3.6.5), with Caldera as its extender sidecar. Run by .ci/run and tests/e2e/run.sh.
//
// CALDERA_E2E=0 leaves the test out; otherwise any build or start-up failure fails it.
// CALDERA_E2E_KEEP=1 (run.sh --keep) starts the cluster with a Caldera and a vc-scheduler, prints
// the kubectl command and waits for Ctrl-C instead of running the scenarios.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func binDir() string {
	if d := os.Getenv("CALDERA_E2E_BIN"); d != "" {
		return d
	}
	return filepath.Join(e2eDir(), ".bin")
}

// setup builds the programs and starts etcd and kube-apiserver in a temporary directory; the
// test's cleanup stops every process (also on Ctrl-C / SIGTERM).
func setup(t *testing.T) *Cluster {
	if os.Getenv("CALDERA_E2E") == "0" {
		t.Skip("CALDERA_E2E=0: end-to-end test left out")
	}
	BuildBinaries(t, binDir())
	dir, err := os.MkdirTemp("", "caldera-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	c := StartCluster(t, dir, binDir())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "\n%s: stopping the cluster (state and logs: %s)\n", s, dir)
			c.Stop()
			if os.Getenv("CALDERA_E2E_KEEP") != "1" {
				os.RemoveAll(dir)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	t.Cleanup(func() {
		close(done)
		signal.Stop(sig)
		c.Stop()
		if t.Failed() || os.Getenv("CALDERA_E2E_KEEP") == "1" {
			t.Logf("state and logs kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	t.Logf("cluster up: %s (state in %s)", c.Server, dir)
	return c
}

// The hosted job and victim plugins, plus resource-strategy-fit packing nodes (MostAllocated),
// which Volcano's default nodeorder (LeastAllocated) would not do.
const placementConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: priority
  - name: conformance
- plugins:
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 10
      resources:
        cpu: {type: MostAllocated, weight: 1}
        memory: {type: MostAllocated, weight: 1}
`

func TestE2E(t *testing.T) {
	c := setup(t)
	if os.Getenv("CALDERA_E2E_KEEP") == "1" {
		playground(t, c)
		return
	}
	t.Run("placement", func(t *testing.T) { testPlacement(t, c) })
	t.Run("placement-nodegroup", func(t *testing.T) { testNodeGroupPlacement(t, c, "snapshot") })
	t.Run("preemption", func(t *testing.T) { testPreemption(t, c, "snapshot") })
	t.Run("preemption-faulty-abstain", func(t *testing.T) { testFaultyAbstain(t, c) })
	t.Run("preemption-faulty-fail", func(t *testing.T) { testFaultyFail(t, c) })
	t.Run("admission", func(t *testing.T) { testAdmission(t, c, "snapshot") })
	t.Run("admission-cluster-state", func(t *testing.T) { testAdmission(t, c, "cluster") })
	t.Run("failure-closed", func(t *testing.T) { testFailurePolicy(t, c, "failure-closed", false) })
	t.Run("failure-open", func(t *testing.T) { testFailurePolicy(t, c, "failure-open", true) })
	t.Run("restart", func(t *testing.T) { testRestart(t, c) })
	t.Run("large-snapshot", func(t *testing.T) { testLargeSnapshot(t, c) })
	t.Run("live-config", func(t *testing.T) { testLiveConfig(t, c) })
	t.Run("shadow", func(t *testing.T) { testShadow(t, c) })
	t.Run("compare-churn", func(t *testing.T) { testCompareChurn(t, c) })
	t.Run("sharded", func(t *testing.T) { testSharded(t, c) })
	t.Run("stale-view-proxy-cut", func(t *testing.T) { testStaleViewProxyCut(t, c) })
	t.Run("stale-view-caldera-restarted", func(t *testing.T) { testStaleViewCalderaRestarted(t, c) })
	t.Run("stale-view-watch-expired", func(t *testing.T) { testStaleViewWatchExpired(t, c) })
	t.Run("stale-view-miscounted", func(t *testing.T) { testStaleViewMiscounted(t, c) })
	t.Run("manifests", func(t *testing.T) { testManifests(t, c) })
	// Last: it stops the API server every scenario shares.
	t.Run("stale-view-apiserver-stopped", func(t *testing.T) { testStaleViewAPIServerStopped(t, c) })
}

// placement: three equal nodes, one already carrying a 1-CPU pod. MostAllocated scores the
// loaded node highest for every pod of an 8-pod job, so all eight land on it. The scheduler conf
// has no node-scoring plugin of Volcano's own (priority, gang and the extender): without
// Caldera's scores the three nodes tie and Volcano picks among them at random, so the eight
// pods would all land on place-b by chance with probability (1/3)^8, about 1 run in 6,561.
func testPlacement(t *testing.T, c *Cluster) {
	s := c.NewScenario(t, "placement", placementConfig, "enqueue, allocate, backfill", false,
		NodeSpec{Name: "place-a", CPU: "16", Memory: "32Gi"},
		NodeSpec{Name: "place-b", CPU: "16", Memory: "32Gi"},
		NodeSpec{Name: "place-c", CPU: "16", Memory: "32Gi"},
	)
	s.CreateBoundPod(t, "ballast", "place-b", Res("1", "1Gi"))
	time.Sleep(2 * time.Second) // the scheduler's cache sees the ballast before the job
	s.CreateJob(t, JobSpec{Name: "pack", Pods: 8, Request: Res("1", "1Gi")})
	got := s.WaitBound(t, "pack", 8, 60*time.Second)
	t.Logf("placement: %v", got)
	for pod, node := range got {
		if node != "place-b" {
			s.Wrong(t, "%s on %s, want place-b (MostAllocated packs the loaded node): %v", pod, node, got)
		}
	}
	s.WaitPodGroupPhase(t, "pack", "Running", 30*time.Second)
	if n := s.Caldera.Answered(t, "prioritize"); n < 8 {
		t.Errorf("Caldera answered %v prioritize calls, want at least one per pod", n)
	}
	if n := s.Caldera.Decisions(t, "resource-strategy-fit", "prioritize", "scored"); n < 8 {
		t.Errorf("resource-strategy-fit scored %v prioritize calls, want at least one per pod", n)
	}
	s.Caldera.CheckListeners(t)
}

// Every hosted plugin that the scenarios exercise, in the embedded default's layout.
const playgroundConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: pdb
    arguments: {source: kubernetes, kubeconfig: "{{KUBECONFIG}}"}
  - name: min-runtime
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
  - name: resourcequota
  - name: resource-strategy-fit
    arguments:
      resources:
        cpu: {type: MostAllocated, weight: 1}
        memory: {type: MostAllocated, weight: 1}
`

// playground keeps a cluster with 20 nodes, Caldera and vc-scheduler up until Ctrl-C.
func playground(t *testing.T, c *Cluster) {
	var nodes []NodeSpec
	for i := 1; i <= 20; i++ {
		nodes = append(nodes, NodeSpec{Name: fmt.Sprintf("node-%02d", i), CPU: "8", Memory: "32Gi"})
	}
	c.EnsurePriorityClass(t, "low", 10)
	c.EnsurePriorityClass(t, "high", 1000)
	s := c.NewScenario(t, "playground", playgroundConfig, "enqueue, allocate, preempt, backfill", false, nodes...)
	ns, _ := c.Kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, n := range ns.Items {
		names = append(names, n.Name)
	}
	fmt.Printf("\nCaldera e2e playground is up (Ctrl-C stops everything).\n"+
		"  kubectl --kubeconfig %s get nodes,pods,podgroups.scheduling.volcano.sh -A\n"+
		"  API server:          %s (token in the kubeconfig)\n"+
		"  Caldera:             %s (config %s)\n"+
		"  volcano-scheduler:   %s\n"+
		"  logs:                %s\n"+
		"  namespaces:          %s\n"+
		"  Pods need schedulerName: volcano and the annotation scheduling.k8s.io/group-name: <PodGroup>;\n"+
		"  PriorityClasses low and high exist; the PodGroup's queue is \"default\".\n",
		c.Kubeconfig, c.Server, s.Caldera.URL, s.Caldera.Config,
		filepath.Join(c.Dir, "playground-volcano-scheduler.conf"), filepath.Join(c.Dir, "logs"), strings.Join(names, ", "))
	select {}
}
