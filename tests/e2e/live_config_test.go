package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// overcommit alone, at a factor given per step: the two nodes hold 16 CPUs.
func liveConfig(factor string) string {
	return `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: ` + factor + `}
`
}

// live configuration (app/server/config_watch.py): Caldera's file is edited while vc-scheduler
// runs. At factor 1.0 overcommit keeps a job whose PodGroup asks for 20 CPUs Pending (16 CPUs in
// the cluster); a file that does not validate is rejected and changes nothing; the file rewritten
// at factor 2.0 (32 CPUs) takes over at a session boundary and the job is admitted and bound,
// without restarting Caldera or vc-scheduler.
func testLiveConfig(t *testing.T, c *Cluster) {
	s := c.NewScenario(t, "live-config", liveConfig("1.0"), "enqueue, allocate, backfill", false,
		NodeSpec{Name: "live-a", CPU: "8", Memory: "16Gi"},
		NodeSpec{Name: "live-b", CPU: "8", Memory: "16Gi"},
	)
	cal := s.Caldera
	started := cal.Readyz(t)["config"].(map[string]any)
	s.CreateJob(t, JobSpec{Name: "wide", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	waitDecisions(t, cal, "reject", 2)

	// The kubelet's ConfigMap update: the new content appears at once (a rename here).
	write := func(text string) string {
		t.Helper()
		next := cal.Config + ".next"
		if err := os.WriteFile(next, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, cal.Config); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		return hex.EncodeToString(sum[:])[:16]
	}

	broken := write(strings.Replace(liveConfig("1.0"), "overcommit", "overcomit", 1))
	rejected := waitConfig(t, cal, func(cfg map[string]any) bool {
		r, _ := cfg["rejected"].(map[string]any)
		return r != nil && r["sha256"] == broken
	})
	if rejected["sha256"] != started["sha256"] {
		t.Fatalf("a rejected file changed the served configuration: %v", rejected)
	}
	before := cal.Decisions(t, "overcommit", "jobEnqueueable", "reject")
	waitDecisions(t, cal, "reject", before+2) // still rejecting: the running configuration stays
	if ph := s.PodGroupPhase(t, "wide"); ph != vcsched.PodGroupPending {
		t.Fatalf("wide PodGroup %q, want Pending at factor 1.0", ph)
	}

	changed := write(liveConfig("2.0"))
	served := waitConfig(t, cal, func(cfg map[string]any) bool { return cfg["sha256"] == changed })
	if _, still := served["rejected"]; still {
		t.Errorf("the valid file left the rejection in /readyz: %v", served)
	}
	got := s.WaitBound(t, "wide", 1, 60*time.Second)
	t.Logf("wide admitted and bound after the change: %v", got)
	if n := cal.Decisions(t, "overcommit", "jobEnqueueable", "permit"); n < 1 {
		t.Errorf("overcommit permitted nothing after the change (%v)", n)
	}
	if n := cal.metric(t, "caldera_config_reloads_total", `outcome="applied"`); n != 1 {
		t.Errorf("caldera_config_reloads_total{outcome=applied} = %v, want 1", n)
	}
	if n := cal.metric(t, "caldera_config_reloads_total", `outcome="rejected"`); n != 1 {
		t.Errorf("caldera_config_reloads_total{outcome=rejected} = %v, want 1", n)
	}
	log, err := os.ReadFile(cal.proc.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "configuration sha256 "+changed+" applied from "+filepath.Clean(cal.Config)) {
		t.Errorf("Caldera's log does not say the change was applied:\n%s", tail(cal.proc.log, 20))
	}
}

func waitDecisions(t *testing.T, cal *Caldera, outcome string, atLeast float64) {
	t.Helper()
	if err := waitFor(60*time.Second, func() (bool, error) {
		return cal.Decisions(t, "overcommit", "jobEnqueueable", outcome) >= atLeast, nil
	}); err != nil {
		t.Fatalf("overcommit did not %s %v times: %v", outcome, atLeast, err)
	}
}

func waitConfig(t *testing.T, cal *Caldera, until func(map[string]any) bool) map[string]any {
	t.Helper()
	var cfg map[string]any
	if err := waitFor(30*time.Second, func() (bool, error) {
		cfg, _ = cal.Readyz(t)["config"].(map[string]any)
		return cfg != nil && until(cfg), nil
	}); err != nil {
		t.Fatalf("/readyz config never got there: %v (%v)", cfg, err)
	}
	return cfg
}
