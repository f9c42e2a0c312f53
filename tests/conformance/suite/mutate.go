package suite

// Mutations: proof that the suite fails when one plugin's answer is broken.
//
// CALDERA_CONFORMANCE_MUTATE=<plugin> puts a fault-injecting proxy between Volcano's extender
// and the Caldera of every scenario about <plugin> (Scenario.Plugin; "min-runtime" for the
// MinRuntime cases). Caldera still receives every call (its state follows the session as
// usual); the proxy rewrites what it answers for the decision verbs:
//
//   - preemptable, reclaimable: every evictee granted as a victim (the protection removed);
//   - jobEnqueueable: the vote flipped (Permit <-> Reject; Abstain stays);
//   - predicate: the neutral pass of a Caldera hosting no plugin (the filter removed);
//   - prioritize: every score negated (the ranking reversed).
//
// In that mode the controls are not run, and a scenario whose outcome then differs from the
// in-tree run fails with "MUTATION CAUGHT (<plugin>)". RunMutations (go test -tags mutations
// -run TestMutations, in a release module) runs the module's own test binary once per
// mutation, on the plugin's group with -test.failfast, and requires such a failure.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const mutateEnv = "CALDERA_CONFORMANCE_MUTATE"

// mutation is the plugin whose answers are broken in this test binary ("" = none).
func mutation() string { return os.Getenv(mutateEnv) }

// mutating reports whether plugin's answers are broken in this test binary.
func mutating(plugin string) bool { return plugin != "" && mutation() == plugin }

// startMutator is the fault-injecting proxy in front of caldera; predicate calls are answered
// by neutral (a Caldera hosting no plugin: its pass in the release's dialect).
func startMutator(t *testing.T, caldera, neutral string) string {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(base, path string, body []byte) (int, []byte, error) {
		resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		return resp.StatusCode, out, err
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		code, answer, err := post(caldera, req.URL.Path, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if code == http.StatusOK {
			switch verb := strings.TrimPrefix(req.URL.Path, "/"); verb {
			case "preemptable", "reclaimable":
				answer, err = grantEvery(body)
			case "jobEnqueueable":
				answer, err = flipVote(answer)
			case "predicate":
				code, answer, err = post(neutral, req.URL.Path, body)
			case "prioritize":
				answer, err = negateScores(answer)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(server.Close)
	return server.URL
}

func grantEvery(request []byte) ([]byte, error) {
	var body struct {
		Evictees json.RawMessage `json:"evictees"`
	}
	if err := json.Unmarshal(request, &body); err != nil {
		return nil, err
	}
	victims := body.Evictees
	if len(victims) == 0 || string(victims) == "null" {
		victims = json.RawMessage("[]")
	}
	return append(append([]byte(`{"status":1,"victims":`), victims...), '}'), nil
}

func flipVote(answer []byte) ([]byte, error) {
	var m map[string]interface{}
	if err := json.Unmarshal(answer, &m); err != nil {
		return nil, err
	}
	if status, ok := m["status"].(float64); ok {
		m["status"] = -status
	}
	return json.Marshal(m)
}

func negateScores(answer []byte) ([]byte, error) {
	var m map[string]interface{}
	if err := json.Unmarshal(answer, &m); err != nil {
		return nil, err
	}
	if scores, ok := m["nodeScore"].(map[string]interface{}); ok {
		for node, s := range scores {
			if f, ok := s.(float64); ok {
				scores[node] = -f
			}
		}
	}
	return json.Marshal(m)
}

// caughtMarker is what a scenario reports when the mutation of its plugin changed its outcome.
func caughtMarker(plugin string) string { return "MUTATION CAUGHT (" + plugin + ")" }

// A mutation: the plugin whose answers are broken, and the scenario group about it.
type mutationCase struct{ plugin, group string }

var mutationCases = []mutationCase{
	{"conformance", "ConformancePlugin"},
	{"priority", "PriorityPlugin"},
	{"cdp", "CdpPlugin"},
	{"sla", "SlaPlugin"},
	{"overcommit", "OvercommitPlugin"},
	{"resourcequota", "ResourceQuotaPlugin"},
	{"pdb", "PdbPlugin"},
	{"nodegroup", "NodeGroupPlugin"},
	{"usage", "UsagePlugin"},
	{"resource-strategy-fit", "ResourceStrategyFitPlugin"},
	{"task-topology", "TaskTopologyPlugin"},
	{"min-runtime", "MinRuntime"},
}

// RunMutations breaks one plugin's answers at a time (CALDERA_CONFORMANCE_MUTATE) and runs
// that plugin's scenario group in a child process of this test binary with -test.failfast:
// each mutation must make at least one scenario fail with the mutation's marker. A group the
// release cannot run is logged as not applicable, as Run does.
func RunMutations(t *testing.T, r *Release) {
	rel = r
	byName := map[string]group{}
	for _, g := range groups {
		byName[g.name] = g
	}
	var absent []string
	start := time.Now()
	for _, m := range mutationCases {
		g, ok := byName[m.group]
		if !ok {
			t.Errorf("mutation %s: no scenario group %s", m.plugin, m.group)
			continue
		}
		if why := r.cannot(g); why != "" {
			absent = append(absent, m.plugin+" ("+why+")")
			continue
		}
		t.Run(m.plugin, func(t *testing.T) {
			began := time.Now()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestVolcano$/^"+m.group+"$", "-test.v",
				"-test.failfast", "-test.count=1", "-test.timeout=15m")
			cmd.Env = append(os.Environ(), mutateEnv+"="+m.plugin)
			out, err := cmd.CombinedOutput()
			caught := regexp.MustCompile(regexp.QuoteMeta(caughtMarker(m.plugin))+`[^\n]*`).FindAllString(string(out), -1)
			ran := map[string]bool{} // scenarios (first level below the group) that finished
			for _, x := range regexp.MustCompile(`--- (?:PASS|FAIL|SKIP): TestVolcano/`+regexp.QuoteMeta(m.group)+`/([^/\s]+)`).FindAllSubmatch(out, -1) {
				ran[string(x[1])] = true
			}
			switch {
			case len(caught) == 0:
				t.Errorf("breaking %s's answers failed none of the %d %s scenarios that ran (exit: %v):\n%s",
					m.plugin, len(ran), m.group, err, tail(out))
			case err == nil:
				t.Errorf("the mutation was caught, yet the child test passed:\n%s", tail(out))
			default:
				t.Logf("%s broken: %s after %d scenario(s), %s", m.plugin, firstFailed(out, m.group),
					len(ran), time.Since(began).Round(time.Second))
			}
		})
	}
	if len(absent) > 0 {
		t.Logf("Volcano %s: mutations not applicable: %s", r.Volcano, strings.Join(absent, "; "))
	}
	t.Logf("mutations on Volcano %s: %s", r.Volcano, time.Since(start).Round(time.Second))
}

// firstFailed names the first scenario of group that failed in a child's output.
func firstFailed(out []byte, group string) string {
	m := regexp.MustCompile(`--- FAIL: (TestVolcano/` + regexp.QuoteMeta(group) + `/\S+)`).FindSubmatch(out)
	if m == nil {
		return "no scenario named as failed"
	}
	return "failed " + string(m[1])
}
