package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// shadowSide is one configuration's answer in a difference of `caldera shadow --json`.
type shadowSide struct{ Answer, Plugin, Reason string }

// shadowDoc is what the scenario reads of `caldera shadow --json` (GET /debug/shadow).
type shadowDoc struct {
	Summary []string
	Shadow  struct {
		Status      string
		Sha256      string
		Failures    map[string]float64
		DataSources map[string]string
	}
	Jobs map[string][]struct {
		Verb, Change string
		Live, Shadow shadowSide
	}
}

// shadowConfig is overcommit at factor, beside pdb watching the cluster's PodDisruptionBudgets:
// an entry the live file and the shadow share, so the shadow reads the live watch's budgets.
func shadowConfig(factor string) string {
	return liveConfig(factor) + `  - name: pdb
    arguments: {source: kubernetes, kubeconfig: "{{KUBECONFIG}}"}
`
}

// shadow: a shadow configuration beside the live one (`caldera serve --shadow FILE`, issue 38).
// The live file admits a job whose PodGroup asks for 20 CPUs on 16 (overcommit at factor 2.0);
// the shadow, at factor 1.0, reports through `caldera shadow --json`, run as an operator would,
// that it would hold that job, with overcommit's reason; the live decision stands (the job runs).
// Then the operator guide's promotion: the shadow file copied over the live one, which the live
// reload applies at the next session boundary; a new job of the same shape now waits, and
// `caldera explain` gives the reason the shadow gave. Both files host pdb with the same
// arguments: the shadow reads the live watch's budgets rather than watching the API server again.
func testShadow(t *testing.T, c *Cluster) {
	shadowFile := c.writeCalderaConfig(t, "shadow-next", shadowConfig("1.0"))
	s := c.NewScenarioWithShadow(t, "shadow", shadowConfig("2.0"), shadowFile, "enqueue, allocate, backfill",
		NodeSpec{Name: "shadow-a", CPU: "8", Memory: "16Gi"},
		NodeSpec{Name: "shadow-b", CPU: "8", Memory: "16Gi"},
	)
	cal := s.Caldera
	wide := s.NS + "/wide"

	s.CreateJob(t, JobSpec{Name: "wide", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	s.WaitAdmittedBound(t, "wide", 1, 60*time.Second) // the live answer went to Volcano
	if n := cal.Decisions(t, "overcommit", "jobEnqueueable", "reject"); n != 0 {
		s.Wrong(t, "the live overcommit (factor 2.0) rejected %v times: the shadow changed a live answer", n)
	}

	var doc shadowDoc
	var out string
	if err := waitFor(60*time.Second, func() (bool, error) {
		stdout, errOut, code := cal.CLI(t, "shadow", "--json", "--url", cal.URL)
		if code != 0 {
			return false, fmt.Errorf("caldera shadow --json exited %d: %s", code, errOut)
		}
		out, doc = stdout, shadowDoc{}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			return false, fmt.Errorf("caldera shadow --json: %v\n%s", err, stdout)
		}
		return len(doc.Jobs[wide]) > 0, fmt.Errorf("no difference about %s yet: %v", wide, doc.Summary)
	}); err != nil {
		s.Wrong(t, "the shadow never reported that it would hold %s: %v", wide, err)
		t.FailNow()
	}
	t.Logf("caldera shadow --json:\n%s", out)
	held := doc.Jobs[wide][0]
	if held.Verb != "jobEnqueueable" || held.Change != "would hold it" || held.Shadow.Answer != "reject" ||
		held.Shadow.Plugin != "overcommit" {
		s.Wrong(t, "the shadow's difference about %s: %+v, want jobEnqueueable, would hold it, reject by overcommit", wide, held)
	}
	if held.Live.Answer != "permit" && held.Live.Answer != "abstain" {
		s.Wrong(t, "the live side of the difference: %+v, want the live admission", held.Live)
	}
	// The shadow's reason, without the numbers that move as jobs run: "needs 20 CPU".
	reason, _, _ := strings.Cut(held.Shadow.Reason, " with ")
	if !strings.HasPrefix(reason, "needs 20 CPU") {
		s.Wrong(t, "the shadow's reason %q does not say what the job needs", held.Shadow.Reason)
	}
	liveSum := fileDigest(t, cal.Config)
	if doc.Shadow.Status != "evaluating" || doc.Shadow.Sha256 != fileDigest(t, shadowFile) {
		t.Errorf("caldera shadow: status %q sha256 %q, want evaluating %s", doc.Shadow.Status, doc.Shadow.Sha256, fileDigest(t, shadowFile))
	}
	if got := doc.Shadow.DataSources["tiers[0].plugins[1]:pdb"]; got != "shared with the live configuration" {
		t.Errorf("the shadow's pdb reads %q, want the live watch shared: %v", got, doc.Shadow.DataSources)
	}
	if failed := doc.Shadow.Failures["load"] + doc.Shadow.Failures["open"] + doc.Shadow.Failures["verb"]; failed != 0 {
		t.Errorf("the shadow failed %v times: %v", failed, doc.Shadow.Failures)
	}
	if ph := s.PodGroupPhase(t, "wide"); ph != vcsched.PodGroupRunning && ph != vcsched.PodGroupInqueue {
		s.Wrong(t, "wide PodGroup %q after the shadow's report, want it admitted (Inqueue or Running)", ph)
	}

	// Promotion, as docs/operator-guide.md says: copy the shadow over the live file (a rename
	// here, as the kubelet swaps a ConfigMap's files); the live reload applies it.
	promoted := promoteShadow(t, shadowFile, cal.Config)
	if promoted == liveSum {
		t.Fatalf("the shadow file is the live one already (%s)", promoted)
	}
	waitConfig(t, cal, func(cfg map[string]any) bool { return cfg["sha256"] == promoted })
	if sh, _ := cal.Readyz(t)["shadow"].(map[string]any); sh == nil || sh["sha256"] != promoted {
		t.Errorf("/readyz shadow %v, want the promoted file's sha256 %s beside the live one", sh, promoted)
	}

	s.CreateJob(t, JobSpec{Name: "wide-2", Pods: 1, Request: Res("1", "1Gi"), MinResources: Res("20", "1Gi")})
	key := s.NS + "/wide-2"
	var explained string
	if err := waitFor(60*time.Second, func() (bool, error) {
		stdout, errOut, code := cal.Explain(t, key)
		explained = stdout + errOut
		lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
		return code == 0 && len(lines) > 1 && strings.HasPrefix(strings.TrimSpace(lines[1]), "overcommit rejects job "+key),
			fmt.Errorf("exit %d", code)
	}); err != nil {
		s.Wrong(t, "after the promotion overcommit never rejected %s: %v\n%s", key, err, explained)
		t.FailNow()
	}
	t.Logf("caldera explain %s:\n%s", key, explained)
	if !strings.Contains(explained, ": "+reason+" with ") {
		s.Wrong(t, "caldera explain %s does not give the shadow's reason %q:\n%s", key, reason, explained)
	}
	time.Sleep(3 * time.Second) // a few more sessions vote on it
	if ph := s.PodGroupPhase(t, "wide-2"); ph != vcsched.PodGroupPending {
		s.Wrong(t, "wide-2 PodGroup %q after the promotion, want Pending", ph)
	}
	if pl := s.Placement(t, "wide-2"); pl["wide-2-0"] != "" {
		s.Wrong(t, "wide-2 pod bound to %s after the promotion", pl["wide-2-0"])
	}
	if ph := s.PodGroupPhase(t, "wide"); ph != vcsched.PodGroupRunning {
		t.Errorf("wide PodGroup %q after the promotion, want it still Running", ph)
	}
}

// NewScenarioWithShadow is NewScenario with `caldera serve --shadow shadowFile` (a file in the
// cluster's directory, which the image mode mounts at its own path).
func (c *Cluster) NewScenarioWithShadow(t *testing.T, name, calderaConfig, shadowFile, actions string, nodes ...NodeSpec) *Scenario {
	return c.newScenario(t, name, calderaConfig, actions, scenarioOptions{args: []string{"--shadow", shadowFile}}, nodes...)
}

// promoteShadow copies the shadow file over the live one, whole (written beside it, then renamed
// over it), and returns the first 16 hex digits of its SHA-256, as /readyz shows them.
func promoteShadow(t *testing.T, shadowFile, liveFile string) string {
	t.Helper()
	text, err := os.ReadFile(shadowFile)
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(filepath.Dir(liveFile), "."+filepath.Base(liveFile)+".promoted")
	if err := os.WriteFile(next, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, liveFile); err != nil {
		t.Fatal(err)
	}
	return fileDigest(t, liveFile)
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:])[:16]
}
