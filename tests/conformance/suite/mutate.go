package suite

// Mutations: proof that the suite fails when one verb of one plugin answers wrongly.
//
// CALDERA_CONFORMANCE_MUTATE=<mutant> (a name from mutants, as "pdb/preemptable") breaks one
// thing in the Caldera of every scenario about the mutant's plugin (Scenario.Plugin;
// "min-runtime" for the MinRuntime cases). A verb mutant puts a fault-injecting proxy between
// Volcano's extender and Caldera that rewrites that one verb's answer and passes every other
// verb through:
//
//   - preemptable, reclaimable: every evictee granted as a victim (the protection removed);
//   - jobEnqueueable: the vote flipped (Permit <-> Reject; Abstain stays);
//   - predicate: the neutral pass of a Caldera hosting no plugin (the filter removed);
//   - prioritize: every score negated (the ranking reversed);
//   - allocate: answered by a Caldera hosting no plugin, never reaching the plugin (the
//     session's allocations go unrecorded).
//
// An argument mutant starts Caldera with one plugin argument changed (a threshold off by one)
// or dropped (an argument ignored), as a plugin that misreads it would behave.
//
// In that mode the controls are not run, and a scenario whose outcome then differs from the
// in-tree run (or misses its expectation) fails with "MUTATION CAUGHT (<mutant>)".
// RunMutations (go test -tags mutations -run TestMutations, in a release module) runs the
// module's own test binary once per mutant, on the one scenario the mutant names (no two
// mutants share one), and requires that scenario to fail with the mutant's marker: each
// mutant is caught by a scenario of its own, and a run costs one scenario per mutant.
//
// The verb mutants follow the verbs each plugin answers, as this checkout's Caldera says
// (plugin_verbs.py: the hooks each plugin overrides, on the verbs the release sends, less what
// the plugin withdraws on that release): checkMutantCoverage fails when a plugin answers a verb
// no mutant breaks, when a verb mutant breaks a verb its plugin does not answer, and when a
// mutant's since mark skips a release on which its plugin does answer the verb (a stale mark
// fails; it is not logged as "not applicable").

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const mutateEnv = "CALDERA_CONFORMANCE_MUTATE"

// mutation is the mutant active in this test binary ("" = none).
func mutation() string { return os.Getenv(mutateEnv) }

// activeMutant is the mutant named by CALDERA_CONFORMANCE_MUTATE, or nil.
func activeMutant() *mutant {
	name := mutation()
	for i := range mutants {
		if mutants[i].name == name {
			return &mutants[i]
		}
	}
	return nil
}

// mutating reports whether plugin is broken in this test binary.
func mutating(plugin string) bool {
	m := activeMutant()
	return plugin != "" && m != nil && m.plugin == plugin
}

// mutatedArguments is args as the active argument mutant of plugin gives them to Caldera (a
// deep copy: the in-tree entry keeps its own), or args unchanged.
func mutatedArguments(plugin string, args map[string]interface{}) map[string]interface{} {
	m := activeMutant()
	if m == nil || m.plugin != plugin || m.arguments == nil {
		return args
	}
	out, _ := jsonable(args).(map[string]interface{})
	if out == nil {
		out = map[string]interface{}{}
	}
	m.arguments(out)
	return out
}

// startMutator is the fault-injecting proxy in front of caldera for the active verb mutant
// (caldera itself for an argument mutant); predicate and allocate calls are answered by
// neutral (a Caldera hosting no plugin: its answers in the release's dialect).
func startMutator(t *testing.T, caldera, neutral string) string {
	t.Helper()
	m := activeMutant()
	if m == nil || m.verb == "" {
		return caldera
	}
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
		verb := strings.TrimPrefix(req.URL.Path, "/")
		upstream := caldera
		if verb == m.verb && verb == "allocate" {
			upstream = neutral // the plugin never hears of the allocation
		}
		code, answer, err := post(upstream, req.URL.Path, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if code == http.StatusOK && verb == m.verb {
			switch verb {
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

// caughtMarker is what a scenario reports when the active mutant changed its outcome.
func caughtMarker(name string) string { return "MUTATION CAUGHT (" + name + ")" }

// mutant is one fault: a verb's answer rewritten (verb) or one plugin argument changed
// (arguments), and the one scenario of group that must fail with it.
type mutant struct {
	name      string // plugin/verb, or plugin/what the argument mutant does
	plugin    string // Scenario.Plugin of the scenarios it breaks
	verb      string // the verb whose answer is rewritten ("" for an argument mutant)
	arguments func(args map[string]interface{})
	group     string
	scenario  string // t.Run name of the scenario (first level below the group) that must fail
	since     string // first "major.minor" release where the mutant applies ("" = every one)
	why       string // why it does not apply before since
	// older replaces scenario on releases before olderBefore (where scenario cannot catch it).
	older, olderBefore string
}

// scenarioOn is the scenario m must fail on release r.
func (m mutant) scenarioOn(r *Release) string {
	if m.older != "" && !r.AtLeast(m.olderBefore) {
		return m.older
	}
	return m.scenario
}

// setArg sets args[path[0]][path[1]]... to f(old value); a missing section is created.
func setArg(args map[string]interface{}, f func(interface{}) interface{}, path ...string) {
	for _, key := range path[:len(path)-1] {
		next, ok := args[key].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			args[key] = next
		}
		args = next
	}
	args[path[len(path)-1]] = f(args[path[len(path)-1]])
}

// minusOne is a numeric argument off by one (down).
func minusOne(v interface{}) interface{} {
	switch x := v.(type) {
	case int:
		return x - 1
	case float64:
		return x - 1
	}
	return v
}

// mutants: one per verb each plugin implements (on the releases where it does), and argument
// mutants (a threshold off by one, an argument ignored). Each names the scenario that must
// fail; no two mutants share one.
var mutants = []mutant{
	{name: "conformance/preemptable", plugin: "conformance", verb: "preemptable", group: "ConformancePlugin",
		scenario: "preempt skips kube-system victim"},
	{name: "conformance/reclaimable", plugin: "conformance", verb: "reclaimable", group: "ConformancePlugin",
		scenario: "reclaim skips kube-system victim", older: "reclaim spares a lone kube-system victim", olderBefore: "1.9"},
	{name: "priority/preemptable", plugin: "priority", verb: "preemptable", group: "PriorityPlugin",
		scenario: "a job of equal priority is not a victim"},
	{name: "cdp/preemptable", plugin: "cdp", verb: "preemptable", group: "CdpPlugin", scenario: "preempt respects cooldown"},
	{name: "cdp/reclaimable", plugin: "cdp", verb: "reclaimable", group: "CdpPlugin", scenario: "reclaim respects cooldown",
		since: "1.12", why: "cdp registers no ReclaimableFn before v1.12: Caldera's cdp implements no reclaimable there"},
	{name: "sla/jobEnqueueable", plugin: "sla", verb: "jobEnqueueable", group: "SlaPlugin",
		scenario: "sla Permit in tier 1 hides proportion Reject in tier 2"},
	{name: "overcommit/jobEnqueueable", plugin: "overcommit", verb: "jobEnqueueable", group: "OvercommitPlugin",
		scenario: "required resources too large"},
	{name: "overcommit/overcommit-factor ignored", plugin: "overcommit", group: "OvercommitPlugin", scenario: "integer factor",
		arguments: func(a map[string]interface{}) { delete(a, "overcommit-factor") }},
	{name: "resourcequota/jobEnqueueable", plugin: "resourcequota", verb: "jobEnqueueable", group: "ResourceQuotaPlugin",
		scenario: "upstream: capacity can't match"},
	{name: "pdb/preemptable", plugin: "pdb", verb: "preemptable", group: "PdbPlugin",
		scenario: "preempt with pdb allowing 0, an unprotected pod beside"},
	{name: "pdb/reclaimable", plugin: "pdb", verb: "reclaimable", group: "PdbPlugin",
		scenario: "reclaim with pdb allowing 0, an unprotected pod beside"},
	{name: "nodegroup/predicate", plugin: "nodegroup", verb: "predicate", group: "NodeGroupPlugin",
		scenario: "preempt skips a node the queue may not use (code 3)"},
	{name: "nodegroup/prioritize", plugin: "nodegroup", verb: "prioritize", group: "NodeGroupPlugin",
		scenario: "scores required 100, preferred 50, anti-preferred -1"},
	{name: "nodegroup/strict ignored", plugin: "nodegroup", group: "NodeGroupPlugin",
		scenario:  "strict false: a queue without affinity may use unlabelled nodes",
		arguments: func(a map[string]interface{}) { delete(a, "strict") }},
	{name: "usage/predicate", plugin: "usage", verb: "predicate", group: "UsagePlugin",
		scenario: "preempt skips an overloaded node (code 3)"},
	{name: "usage/prioritize", plugin: "usage", verb: "prioritize", group: "UsagePlugin",
		scenario: "cpu.weight 3 prefers the idle CPU"},
	{name: "usage/thresholds.cpu off by one", plugin: "usage", group: "UsagePlugin",
		scenario:  "thresholds cpu 90 mem 85 admit u1 and u5 (usage at the threshold passes)",
		arguments: func(a map[string]interface{}) { setArg(a, minusOne, "thresholds", "cpu") }},
	{name: "resource-strategy-fit/predicate", plugin: "resource-strategy-fit", verb: "predicate", group: "ResourceStrategyFitPlugin",
		scenario: "preempt skips a node whose idle GPU reserves its CPU (code 3)"},
	{name: "resource-strategy-fit/prioritize", plugin: "resource-strategy-fit", verb: "prioritize", group: "ResourceStrategyFitPlugin",
		scenario: "wildcard nvidia.com/* MostAllocated packs GPUs"},
	{name: "resource-strategy-fit/resourceStrategyFitWeight ignored", plugin: "resource-strategy-fit", group: "ResourceStrategyFitPlugin",
		scenario:  "LeastAllocated cpu, weight 20, outweighs binpack weight 15",
		arguments: func(a map[string]interface{}) { delete(a, "resourceStrategyFitWeight") }},
	{name: "task-topology/prioritize", plugin: "task-topology", verb: "prioritize", group: "TaskTopologyPlugin",
		scenario: "task order annotation builds one bucket"},
	{name: "task-topology/task-topology.weight ignored", plugin: "task-topology", group: "TaskTopologyPlugin",
		scenario:  "self-affine workers, ps anti-affine to workers, weight 3, beside binpack",
		arguments: func(a map[string]interface{}) { delete(a, "task-topology.weight") }},
	{name: "task-topology/allocate", plugin: "task-topology", verb: "allocate", group: "TaskTopologyPlugin",
		scenario: "affinity ps,worker with anti-affinity ps"},
	{name: "min-runtime/preemptable", plugin: "min-runtime", verb: "preemptable", group: "MinRuntime",
		scenario: "preempt: queue preempt-min-runtime protects a young victim (KAI preemptFilterFn)"},
	{name: "min-runtime/reclaimable", plugin: "min-runtime", verb: "reclaimable", group: "MinRuntime",
		scenario: "reclaim lca: leaf1 from leaf3 resolves D's 60s (design doc)"},
	{name: "min-runtime/reclaimResolveMethod ignored", plugin: "min-runtime", group: "MinRuntime",
		scenario:  "reclaim queue: dev-team1 from prod-team2 resolves prod-team2's 35 (KAI reclaimResolveMethod queue)",
		arguments: func(a map[string]interface{}) { delete(a, "reclaimResolveMethod") }},
}

// testName is name as the testing package rewrites a subtest's name (spaces to underscores),
// which is what -test.run matches and --- lines print.
func testName(name string) string { return strings.ReplaceAll(name, " ", "_") }

// RunMutations runs, for each mutant, the one scenario it names in a child process of this test
// binary with CALDERA_CONFORMANCE_MUTATE set, and requires that scenario to fail with the
// mutant's marker. A mutant whose group the release cannot run, or that does not apply before
// its since release, is logged as not applicable, as Run does (CheckMutantCoverage has failed
// the test first if its plugin answers the verb there all the same).
func RunMutations(t *testing.T, r *Release) {
	rel = r
	CheckMutantCoverage(t, r)
	byName := map[string]group{}
	for _, g := range groups {
		byName[g.name] = g
	}
	owner := map[string]string{} // group/scenario -> mutant: each mutant needs a scenario of its own
	for _, m := range mutants {
		key := m.group + "/" + m.scenarioOn(r)
		if other, taken := owner[key]; taken {
			t.Errorf("mutants %s and %s name the same scenario %s: each needs one of its own", other, m.name, key)
		}
		owner[key] = m.name
		if (m.verb == "") == (m.arguments == nil) {
			t.Errorf("mutant %s: set exactly one of verb and arguments", m.name)
		}
	}
	var absent, caught []string
	start := time.Now()
	for _, m := range mutants {
		g, ok := byName[m.group]
		if !ok {
			t.Errorf("mutant %s: no scenario group %s", m.name, m.group)
			continue
		}
		if why := r.cannot(g); why != "" {
			absent = append(absent, m.name+" ("+why+")")
			continue
		}
		if m.since != "" && !r.AtLeast(m.since) {
			absent = append(absent, m.name+" ("+m.why+")")
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			began := time.Now()
			scenario := m.scenarioOn(r)
			path := "TestVolcano/" + m.group + "/" + testName(scenario)
			cmd := exec.Command(os.Args[0], "-test.run",
				"^TestVolcano$/^"+m.group+"$/^"+regexp.QuoteMeta(testName(scenario))+"$",
				"-test.v", "-test.count=1", "-test.timeout=10m")
			cmd.Env = append(os.Environ(), mutateEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			ran := regexp.MustCompile(`--- (PASS|FAIL|SKIP): ` + regexp.QuoteMeta(path) + `( |\n)`).FindSubmatch(out)
			marker := strings.Contains(string(out), caughtMarker(m.name))
			switch {
			case ran == nil:
				t.Errorf("mutant %s: its scenario %s did not run (exit: %v):\n%s", m.name, path, err, tail(out))
			case string(ran[1]) != "FAIL" || !marker:
				t.Errorf("mutant %s NOT caught: %s ended %s (marker %q shown: %v):\n%s",
					m.name, path, ran[1], caughtMarker(m.name), marker, tail(out))
			default:
				caught = append(caught, m.name)
				t.Logf("%s caught by %s in %s", m.name, path, time.Since(began).Round(time.Second))
			}
		})
	}
	t.Logf("mutants on Volcano %s: %d caught (%s)", r.Volcano, len(caught), strings.Join(caught, ", "))
	if len(absent) > 0 {
		t.Logf("Volcano %s: mutants not applicable: %s", r.Volcano, strings.Join(absent, "; "))
	}
	t.Logf("mutations on Volcano %s: %s", r.Volcano, time.Since(start).Round(time.Second))
}

// ---- the mutants against the verbs each plugin answers -------------------------------------

//go:embed plugin_verbs.py
var pluginVerbsScript string

// pluginVerbs is, per built-in plugin, the verbs it answers on release r, as this checkout's
// Caldera says: plugin_verbs.py run by the interpreter of the caldera the suite runs.
func pluginVerbs(r *Release) (map[string][]string, error) {
	cmd, err := calderaCommand()
	if err != nil {
		return nil, err
	}
	if err := checkThisCheckout(cmd.Path); err != nil {
		return nil, err
	}
	python, err := interpreterOf(cmd.Path)
	if err != nil {
		return nil, err
	}
	probe := exec.Command(python[0], append(python[1:], "-c", pluginVerbsScript, strings.TrimPrefix(r.Volcano, "v"))...)
	probe.Dir = os.TempDir()
	var stderr bytes.Buffer
	probe.Stderr = &stderr
	out, err := probe.Output()
	if err != nil {
		return nil, fmt.Errorf("plugin_verbs.py %s: %v\n%s", r.Volcano, err, tail(stderr.Bytes()))
	}
	verbs := map[string][]string{}
	if err := json.Unmarshal(out, &verbs); err != nil {
		return nil, fmt.Errorf("plugin_verbs.py %s: %v: %q", r.Volcano, err, out)
	}
	return verbs, nil
}

// mutantCoverage holds list (the mutants) against answered (per plugin, the verbs it answers on
// release r): the problems, each a failure, and the pairs no scenario can run on r (their
// group's in-tree plugins are not in r: nothing to compare with), each logged. runnable is ""
// for a group r can run, else why not.
//
// A problem is: a (plugin, verb) pair answered on r that no verb mutant breaks; one whose
// mutants all carry a since mark that skips r (a stale mark: the plugin answers the verb here);
// a verb mutant that applies on r while its plugin does not answer its verb there.
func mutantCoverage(r *Release, list []mutant, answered map[string][]string, runnable func(group string) string) (problems, absent []string) {
	answers := func(plugin, verb string) bool {
		for _, v := range answered[plugin] {
			if v == verb {
				return true
			}
		}
		return false
	}
	for _, p := range sortedKeys(answered) {
		for _, verb := range answered[p] {
			var mine []mutant
			for _, m := range list {
				if m.plugin == p && m.verb == verb {
					mine = append(mine, m)
				}
			}
			if len(mine) == 0 {
				problems = append(problems, fmt.Sprintf("%s answers %s on Volcano %s and no mutant breaks it: add a"+
					" %s/%s mutant to mutants (suite/mutate.go), naming a scenario of its own that catches it",
					p, verb, r.Volcano, p, verb))
				continue
			}
			var applying *mutant
			for i := range mine {
				if mine[i].since == "" || r.AtLeast(mine[i].since) {
					applying = &mine[i]
					break
				}
			}
			if applying == nil {
				problems = append(problems, fmt.Sprintf("mutant %s is marked not applicable before %s (%s), yet %s answers"+
					" %s on Volcano %s: the mark is stale, move its since", mine[0].name, mine[0].since, mine[0].why, p, verb, r.Volcano))
				continue
			}
			if why := runnable(applying.group); why != "" {
				absent = append(absent, fmt.Sprintf("%s/%s (%s: %s)", p, verb, applying.group, why))
			}
		}
	}
	for _, m := range list {
		if m.verb == "" || (m.since != "" && !r.AtLeast(m.since)) || runnable(m.group) != "" {
			continue
		}
		if !answers(m.plugin, m.verb) {
			problems = append(problems, fmt.Sprintf("mutant %s breaks %s, which %s does not answer on Volcano %s"+
				" (it answers: %s): remove the mutant, or mark the release it applies from (since)",
				m.name, m.verb, m.plugin, r.Volcano, strings.Join(answered[m.plugin], ", ")))
		}
	}
	return problems, absent
}

// CheckMutantCoverage fails t unless every verb each plugin answers on release r (pluginVerbs)
// has a mutant that applies on r, and every verb mutant that applies on r breaks a verb its
// plugin answers (mutantCoverage). Cheap (one Python process, no scenario): every release
// module runs it in its plain go test (TestMutantCoverage), and RunMutations first.
func CheckMutantCoverage(t *testing.T, r *Release) {
	t.Helper()
	answered, err := pluginVerbs(r)
	if err != nil {
		if strict() {
			t.Fatalf("the verbs each plugin answers: %v", err)
		}
		t.Skipf("the verbs each plugin answers: %v", err)
	}
	byName := map[string]group{}
	for _, g := range groups {
		byName[g.name] = g
	}
	runnable := func(name string) string {
		g, ok := byName[name]
		if !ok {
			return "no scenario group " + name
		}
		return r.cannot(g)
	}
	problems, absent := mutantCoverage(r, mutants, answered, runnable)
	for _, p := range problems {
		t.Error(p)
	}
	var pairs []string
	for _, p := range sortedKeys(answered) {
		for _, v := range answered[p] {
			pairs = append(pairs, p+"/"+v)
		}
	}
	t.Logf("Volcano %s: Caldera's plugins answer %d (plugin, verb) pairs: %s", r.Volcano, len(pairs), strings.Join(pairs, ", "))
	if len(absent) > 0 {
		t.Logf("Volcano %s: answered, but no scenario can run them (no in-tree plugin to compare with): %s",
			r.Volcano, strings.Join(absent, "; "))
	}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MutantCoverageRules checks mutantCoverage's rules on made-up plugins, on release r: each
// problem it must report, the pairs it must only log, and a covered table it must pass.
func MutantCoverageRules(t *testing.T, r *Release) {
	t.Helper()
	later := "99.0" // a release after r: a since mark that skips r
	verbMutant := func(plugin, verb, since string) mutant {
		return mutant{name: plugin + "/" + verb, plugin: plugin, verb: verb, group: "G", scenario: "s " + verb, since: since, why: "why"}
	}
	runs := func(string) string { return "" }
	for _, c := range []struct {
		name     string
		list     []mutant
		answered map[string][]string
		runnable func(string) string
		problem  string // "" = none
		absent   int
	}{
		{"covered", []mutant{verbMutant("x", "predicate", ""), verbMutant("x", "prioritize", "")},
			map[string][]string{"x": {"predicate", "prioritize"}}, runs, "", 0},
		{"a verb without a mutant", []mutant{verbMutant("x", "predicate", "")},
			map[string][]string{"x": {"predicate", "prioritize"}}, runs, "x answers prioritize on Volcano " + r.Volcano + " and no mutant breaks it", 0},
		{"a new plugin without a mutant", nil, map[string][]string{"y": {"jobReady"}}, runs, "y answers jobReady", 0},
		{"a stale since mark", []mutant{verbMutant("x", "reclaimable", later)},
			map[string][]string{"x": {"reclaimable"}}, runs, "mutant x/reclaimable is marked not applicable before " + later, 0},
		{"a since mark that holds", []mutant{verbMutant("x", "reclaimable", later)},
			map[string][]string{"x": {}}, runs, "", 0},
		{"a mutant of a verb the plugin does not answer", []mutant{verbMutant("x", "allocate", "")},
			map[string][]string{"x": {}}, runs, "mutant x/allocate breaks allocate, which x does not answer", 0},
		{"an argument mutant is not a verb", []mutant{{name: "x/arg ignored", plugin: "x", group: "G", arguments: func(map[string]interface{}) {}}},
			map[string][]string{"x": {}}, runs, "", 0},
		{"a group the release cannot run", []mutant{verbMutant("x", "predicate", "")},
			map[string][]string{"x": {"predicate"}}, func(string) string { return "no in-tree x" }, "", 1},
	} {
		problems, absent := mutantCoverage(r, c.list, c.answered, c.runnable)
		joined := strings.Join(problems, "\n")
		switch {
		case c.problem == "" && len(problems) > 0:
			t.Errorf("%s: want no problem, got:\n%s", c.name, joined)
		case c.problem != "" && (len(problems) != 1 || !strings.Contains(joined, c.problem)):
			t.Errorf("%s: want one problem containing %q, got:\n%s", c.name, c.problem, joined)
		case len(absent) != c.absent:
			t.Errorf("%s: want %d pairs logged as not runnable, got %v", c.name, c.absent, absent)
		}
	}
}
