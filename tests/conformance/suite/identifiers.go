package suite

// The identifiers mode of the differential suite (issue 51, docs/proposals/extender-identifiers.md):
// the scenarios compared again with Volcano's extender plugin patched by
// protocol/volcano-identifiers, calling Caldera with identifiers instead of objects. Caldera runs
// in `sessionState: cluster` over a stand-in API server that serves the scenario's objects
// (cluster_api.go), so it answers from the state it derives itself plus the session's roster and
// placements, as it would beside the patched vc-scheduler; the extender entry is the one `caldera
// volcano-config --bodies identifiers` prints (extender.bodies, the batched predicate, the
// session's lifecycle verbs). Each scenario must decide as the in-tree plugin does, with every
// call Caldera answered carrying identifiers.
//
// The test binary must be built against the patched module (tests/conformance/identifiers.sh;
// build tag identifiers): built against the published one, the plugin ignores extender.bodies,
// posts objects, and checkIdentifierBodies fails every scenario.
//
// What the mode leaves to the objects mode, by group, is the groups table's identifiers column
// (release.go): what reads what only the snapshot carries (usage's node metrics), what proves
// Volcano's own extender plugin rather than Caldera's answer (predicate dialect, ignorable,
// managedResources, allocate errors), and the controls and mutants (the same state and the same
// answers as the objects mode's, which runs them).

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// identifiersMode: this test binary compares with identifier bodies (RunIdentifiers).
var identifiersMode bool

// The patched plugin's arguments (protocol/volcano-identifiers/patched/extender.go) and
// Caldera's endpoint for the batched predicate.
const (
	argBodies              = "extender.bodies"
	argBatchPredicateVerb  = "extender.batchPredicateVerb"
	bodiesIdentifiers      = "identifiers"
	batchPredicateEndpoint = "batchPredicate"
)

// RunIdentifiers runs every group the identifiers mode can run (release.go, groups), as Run does.
func RunIdentifiers(t *testing.T, r *Release) {
	if m := mutation(); m != "" {
		t.Fatalf("%s=%s: the mutants run in the objects mode (TestMutations), not in the identifiers mode", mutateEnv, m)
	}
	identifiersMode = true
	defer func() { identifiersMode = false }()
	Run(t, r)
}

// identifiersCaldera starts Caldera configured as cfg in cluster mode over a stand-in API server
// serving cl, waits until it has listed every collection, and returns the recorder before it.
func identifiersCaldera(t *testing.T, cfg CalderaConfig, cl Cluster) *recorder {
	t.Helper()
	cfg.clusterMode(startClusterAPI(t, cl).kubeconfig(t))
	c := startCaldera(t, cfg)
	c.waitReady(t)
	return startRecorder(t, c.URL)
}

// bodiesNote marks the extender run's log lines in the identifiers mode.
func bodiesNote() string {
	if identifiersMode {
		return " (identifiers)"
	}
	return ""
}

// withIdentifiers turns entry (the extender plugin's, in place) into the identifiers mode's: the
// bodies, the batched predicate where the entry sends the predicate, and the verbs the patched
// plugin requires for the mode (allocate and deallocate) or Caldera's cluster mode reads (the
// session's open, with its roster, and close).
func withIdentifiers(entry map[string]interface{}) {
	entry[argBodies] = bodiesIdentifiers
	if _, sends := entry[verbPredicate]; sends {
		entry[argBatchPredicateVerb] = batchPredicateEndpoint
	}
	for _, key := range []string{verbOnSessionOpen, verbOnSessionClose, verbAllocateFunc, verbDeallocateFunc} {
		entry[key] = calderaVerbs[key]
	}
}

// checkIdentifierBodies: every call Caldera answered carried identifiers (a fallback to objects,
// which the patched plugin takes when the capabilities do not match, posts objects that
// cluster-mode Caldera would answer too). Whether GET /capabilities was asked is not a proof:
// the plugin keeps the answer per urlPrefix for the process, and a recorder can listen on a port
// an earlier scenario's had (two min-runtime runs did so).
func checkIdentifierBodies(t *testing.T, r *recorder) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.objectBodies) > 0 {
		t.Errorf("identifiers: calls with Volcano's objects reached Caldera: %s; is the test binary built with "+
			"protocol/volcano-identifiers's patch (tests/conformance/identifiers.sh)?", sortedCounts(r.objectBodies))
	}
	if len(r.identifierBodies) == 0 {
		t.Errorf("identifiers: no call with identifiers reached Caldera")
	}
	// What Caldera derived from the API server held exactly Volcano's roster (the jobs, nodes
	// and queues of its snapshot), and no call named an object Caldera's session lacked.
	if miss := nonZeroSamples(t, r.target+"/metrics", "caldera_identifiers_roster_differences_total",
		"caldera_identifiers_unknown_objects_total"); len(miss) > 0 {
		t.Errorf("identifiers: Caldera's derived state differs from Volcano's session:\n%s", strings.Join(miss, "\n"))
	}
}

// nonZeroSamples are the samples of the named counters at url (Prometheus's text format) whose
// value is not 0.
func nonZeroSamples(t *testing.T, url string, names ...string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range names {
			fields := strings.Fields(line)
			if strings.HasPrefix(line, name) && len(fields) == 2 && fields[1] != "0.0" && fields[1] != "0" {
				out = append(out, line)
			}
		}
	}
	return out
}

func sortedCounts(m map[string]int) string {
	s := map[string]string{}
	for k, v := range m {
		s[k] = fmt.Sprint(v)
	}
	return sortedMap(s)
}

// clusterMode configures Caldera's `sessionState: cluster` over the API server of kubeconfig.
func (c *CalderaConfig) clusterMode(kubeconfig string) {
	c.SessionState, c.SessionStateKubeconfig = "cluster", kubeconfig
}

// waitReady waits until /readyz answers 200: in cluster mode, once every collection is listed.
func (c *Caldera) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		resp, err := client.Get(c.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("caldera (sessionState: cluster) not ready within 30 s (last: %s)\n%s", last, tail(c.logs.Bytes()))
}

// identifierBody: a POSTed body whose first field is the session (the patched plugin's request
// types all start with it, protocol/volcano-identifiers/patched/argument.go; Volcano's object
// bodies never have one).
func identifierBody(body []byte) bool {
	return strings.HasPrefix(strings.TrimLeft(string(body), " \t\r\n"), `{"session"`)
}
