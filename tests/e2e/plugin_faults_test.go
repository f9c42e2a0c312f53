package e2e

// A faulty plugin beside pdb, end to end (issue 35): the preemption scenario with one more
// plugin of the operator's own, installed as a distribution beside Caldera, that raises.
// onError: abstain must leave every decision of the others as it is without it; onError: fail
// must make Volcano do what docs/plugin-author-guide.md ("What Volcano does when Caldera errs")
// says it does.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// misbehavingModule is tests/service/misbehaving_plugins.py as the installed module names it.
const misbehavingModule = "caldera_misbehaving"

// installPlugins installs tests/service/misbehaving_plugins.py as the service tests do
// (tests/service/test_misbehaving_plugins.py): a site directory holding the module and a
// dist-info whose entry_points.txt registers the plugins in the caldera.plugins group, what
// `pip install` of a wheel leaves. The directory is under the cluster's, which the image mode
// mounts into Caldera's container at the same path; the result is the environment naming it.
func (c *Cluster) installPlugins(t testing.TB, name string, plugins map[string]string) []string {
	t.Helper()
	site := filepath.Join(c.Dir, name+"-site")
	info := filepath.Join(site, misbehavingModule+"-0.1.dist-info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		t.Fatal(err)
	}
	source, err := os.ReadFile(filepath.Join(e2eDir(), "..", "service", "misbehaving_plugins.py"))
	if err != nil {
		t.Fatal(err)
	}
	var entries strings.Builder
	entries.WriteString("[caldera.plugins]\n")
	for plugin, class := range plugins {
		fmt.Fprintf(&entries, "%s = %s:%s\n", plugin, misbehavingModule, class)
	}
	files := map[string]string{
		filepath.Join(site, misbehavingModule+".py"): string(source),
		filepath.Join(info, "METADATA"):              "Metadata-Version: 2.1\nName: " + misbehavingModule + "\nVersion: 0.1\n",
		filepath.Join(info, "entry_points.txt"):      entries.String(),
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Readable by the container's user 10001 whatever the umask.
	for _, dir := range []string{site, info} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PYTHONPATH=" + site}
}

// faultyPreemptionConfig is preemptionConfig with misbehave-raise (tests/service/
// misbehaving_plugins.py) last in the tier, after pdb, where a plugin that answered would start
// the victim list afresh: an answer dropped must take no part at all. extra is the rest of its
// entry (onError, arguments), indented under it.
func faultyPreemptionConfig(extra string) string {
	return preemptionConfig + "  - name: misbehave-raise\n" + extra
}

// faultyErrors is caldera_plugin_errors_total of misbehave-raise in verb, kind raised.
func faultyErrors(t testing.TB, cal *Caldera, verb string) float64 {
	t.Helper()
	return cal.metric(t, "caldera_plugin_errors_total", `plugin="misbehave-raise"`, `verb="`+verb+`"`, `kind="raised"`)
}

// preemption-faulty-abstain: the preemption scenario with misbehave-raise, raising in every hook
// it has (predicate, prioritize, preemptable, jobEnqueueable, jobReady, allocate, ...), under
// onError: abstain. Each of its answers is dropped, so every decision is the preemption
// scenario's, checked by the same code: the two old pods evicted, the PDB-protected and the
// fresh pod kept, and the protected pod taken once its PDB allows a disruption. Its faults are
// counted per verb and /readyz stays ready, naming it.
func testFaultyAbstain(t *testing.T, c *Cluster) {
	name := "preemption-faulty-abstain"
	env := c.installPlugins(t, name, map[string]string{"misbehave-raise": "Raises"})
	s := preemptionSetup(t, c, preemptionRun{
		name: name, queue: "e2e-" + name, nodes: [2]string{"pfa-a", "pfa-b"},
		config: faultyPreemptionConfig("    onError: abstain\n"), env: env,
	})
	checkPreempted(t, s)
	for _, verb := range []string{"predicate", "preemptable", "jobEnqueueable", "jobReady", "allocate"} {
		if n := faultyErrors(t, s.Caldera, verb); n < 1 {
			t.Errorf("caldera_plugin_errors_total of misbehave-raise in %s is %v, want at least 1", verb, n)
		}
	}
	if n := s.Caldera.metric(t, "caldera_responses_total", `code="500"`); n != 0 {
		t.Errorf("Caldera answered %v calls with 500 under onError: abstain", n)
	}
	checkDisruptionAllowed(t, c, s)

	r, err := http.Get(s.Caldera.HealthURL + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	defer r.Body.Close()
	var ready struct {
		PluginErrors map[string]struct {
			Count float64
			Last  map[string]any
		} `json:"pluginErrors"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ready); err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	faulty := ready.PluginErrors["misbehave-raise"]
	if r.StatusCode != 200 || faulty.Count < 5 || faulty.Last["onError"] != "abstain" {
		t.Errorf("/readyz %d with misbehave-raise's faults %+v: want 200, its faults counted, onError abstain", r.StatusCode, faulty)
	}
}

// preemption-faulty-fail: misbehave-raise under onError: fail, raising in preemptable only (its
// hooks argument: the set-up's placements go through Caldera untouched), with extender.ignorable
// false. The guide: a failed verb leaves Volcano with no answer from any plugin Caldera hosts;
// for preemptable Volcano takes (nil, Reject), the extender's tier ends with no victims and the
// next tier decides (protocol reference §1.4). The next tier of this conf (predicates) has no
// victim voter, so nothing is evicted: the high job stays unplaced while every preemptable
// call fails, and no low pod is evicted, the protected ones included.
func testFaultyFail(t *testing.T, c *Cluster) {
	name := "preemption-faulty-fail"
	env := c.installPlugins(t, name, map[string]string{"misbehave-raise": "Raises"})
	s := preemptionSetup(t, c, preemptionRun{
		name: name, queue: "e2e-" + name, nodes: [2]string{"pff-a", "pff-b"},
		config: faultyPreemptionConfig("    onError: fail\n    arguments: {hooks: preemptable}\n"),
		env:    env,
	})
	// Volcano asks preemptable for each candidate node of each preemptor in every session:
	// wait for enough failed calls that the sessions which would have evicted have run (or for
	// an eviction, which is the wrong decision checked below).
	const failedCalls = 6
	failed := 0.0
	evicted := func() bool {
		for _, low := range []string{"low-old1-0", "low-old2-0", "low-pdb-0", "low-fresh-0"} {
			if c.Deleted(s.NS, low) {
				return true
			}
		}
		return false
	}
	if err := waitFor(90*time.Second, func() (bool, error) {
		failed = s.Caldera.metric(t, "caldera_responses_total", `verb="preemptable"`, `code="500"`)
		return failed >= failedCalls || evicted(), fmt.Errorf("%v preemptable calls answered 500", failed)
	}); err != nil {
		t.Fatalf("misbehave-raise never failed preemptable %d times: %v", failedCalls, err)
	}
	for pod, node := range s.Placement(t, "high") {
		if node != "" {
			s.Wrong(t, "%s was placed on %s while every preemptable call failed", pod, node)
		}
	}
	for _, low := range []string{"low-old1-0", "low-old2-0", "low-pdb-0", "low-fresh-0"} {
		if c.Deleted(s.NS, low) || s.EventReasons(t, "Pod", low)["Evict"] {
			s.Wrong(t, "%s was evicted while every preemptable call failed (ignorable: false)", low)
		}
	}
	if n := faultyErrors(t, s.Caldera, "preemptable"); n < failed {
		t.Errorf("caldera_plugin_errors_total of misbehave-raise in preemptable is %v, want at least the %v calls answered 500", n, failed)
	}
	if n := s.Caldera.metric(t, "caldera_plugin_errors_total", `plugin="misbehave-raise"`, `verb="predicate"`); n != 0 {
		t.Errorf("misbehave-raise took part in predicate (%v faults): its hooks argument names preemptable only", n)
	}
}
