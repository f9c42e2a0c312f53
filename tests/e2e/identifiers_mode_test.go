package e2e

// The identifiers mode (issue 51, docs/proposals/extender-identifiers.md): a cluster-mode
// scenario run again with vc-scheduler built from protocol/volcano-identifiers's patch
// (vc-scheduler-identifiers, built once into the e2e binaries' directory), Caldera in
// `sessionState: cluster`, and the extender entry `caldera volcano-config --bodies identifiers`
// prints. The scenario asserts the same decisions as in its other modes; checkIdentifiers proves
// the identifiers protocol was the one used. TestE2EIdentifiers (identifiers_e2e_test.go, build
// tag identifiers) runs the mode.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	identifiersMode      = "identifiers"              // the scenario mode (scenarioName, withSessionState)
	identifiersBodies    = "identifiers"              // caldera volcano-config --bodies
	identifiersScheduler = "vc-scheduler-identifiers" // the patched binary in BinDir
)

// BuildIdentifiersScheduler builds vc-scheduler v1.14.1 with protocol/volcano-identifiers's
// patch into binDir/vc-scheduler-identifiers (protocol/volcano-identifiers/build.sh: the
// published module copied once into that directory's .build, the same pins and replace
// directives as tests/e2e's go.mod; Go's build cache makes a warm rebuild a link step). An
// exclusive lock on binDir/.vc-scheduler-identifiers.lock keeps two runs from rewriting the
// patched copy under each other.
func BuildIdentifiersScheduler(t testing.TB, binDir string) {
	t.Helper()
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(binDir, "."+identifiersScheduler+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	start := time.Now()
	script := filepath.Join(e2eDir(), "..", "..", "protocol", "volcano-identifiers", "build.sh")
	out, err := exec.Command("bash", script, filepath.Join(binDir, identifiersScheduler)).CombinedOutput()
	if err != nil {
		t.Fatalf("protocol/volcano-identifiers/build.sh (vc-scheduler with the identifiers patch): %v\n%s", err, out)
	}
	t.Logf("built %s in %s", identifiersScheduler, time.Since(start).Round(time.Second))
}

// identifiersDebug is /debug/session's identifiers section (app/identifiers.py).
type identifiersDebug struct {
	Calls   int     `json:"calls"`
	Session *string `json:"session"`
	Events  int     `json:"events"`
}

func (cal *Caldera) identifiersDebug(t testing.TB) identifiersDebug {
	t.Helper()
	r, err := http.Get(cal.URL + "/debug/session")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var view struct {
		Identifiers *identifiersDebug `json:"identifiers"`
	}
	if err := json.NewDecoder(r.Body).Decode(&view); err != nil {
		t.Fatal(err)
	}
	if view.Identifiers == nil {
		t.Fatalf("/debug/session has no identifiers section (Caldera not in cluster mode?)")
	}
	return *view.Identifiers
}

// fallbackMarkers are what the patched plugin logs when it does not use the identifiers protocol
// (protocol/volcano-identifiers/patched/capabilities.go: "... calling it with objects and
// per-node predicates", "... calling it with identifiers false, batched predicate false"), and
// when an extender call failed ("Predicate failed with error", "BatchPredicate failed ...").
var fallbackMarkers = []string{"calling it with", "failed with error"}

// checkIdentifiers, at the end of a scenario of the identifiers mode, with vc-scheduler stopped
// first so that the counts compared stop moving:
//
//   - the entry: extender.bodies identifiers, onSessionOpenVerb (the session's roster), and
//     batchPredicateVerb exactly when the entry has a predicateVerb;
//   - on the wire (the harness's proxy between vc-scheduler and Caldera): GET /capabilities was
//     asked, every POST body was an identifiers-mode one (a "session" key), every call answered
//     200; where the scenario's plugins answer the predicate, /batchPredicate was called and
//     /predicate never (per-node predicates would call it once per task and node);
//   - Caldera: /debug/session's identifiers.calls > 0 and equal to the verb calls it answered
//     (caldera_responses_total{code="200"} summed over the verbs) and to the POSTs the proxy
//     forwarded; no other response code, no refused body, no unknown object; the self-audit,
//     which compares the objects Volcano's calls carry, compared none (identifiers carry none);
//   - vc-scheduler's log: no fallback warning and no failed extender call.
func checkIdentifiers(t *testing.T, s *Scenario) {
	t.Helper()
	cal := s.Caldera
	if s.bodies != identifiersBodies || s.Proxy == nil {
		t.Fatalf("identifiers mode: the scenario was not started with modeOptions(%q)", identifiersMode)
	}
	entry := cal.volcanoConfig(t, s.Proxy.URL, false, identifiersBodies)
	predicate := strings.Contains(entry, "extender.predicateVerb:")
	if !strings.Contains(entry, "extender.bodies: identifiers") || !strings.Contains(entry, "extender.onSessionOpenVerb:") ||
		predicate != strings.Contains(entry, "extender.batchPredicateVerb: batchPredicate") {
		t.Errorf("caldera volcano-config --bodies identifiers printed:\n%s\nwant bodies identifiers, onSessionOpenVerb,"+
			" and batchPredicateVerb with the predicateVerb", entry)
	}
	s.Scheduler.stop()
	wire := s.Proxy.Calls()
	ids := cal.identifiersDebug(t)
	samples, err := scrape(cal.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	answered, other := map[string]float64{}, map[string]float64{}
	var ok float64
	for key, v := range samples {
		rest, found := strings.CutPrefix(key, "caldera_responses_total{")
		if !found {
			continue
		}
		if strings.Contains(rest, `code="200"`) {
			ok += v
			answered[rest] += v
		} else if v != 0 {
			other[rest] += v
		}
	}
	sum := func(prefix string) float64 {
		total := 0.0
		for key, v := range samples {
			if strings.HasPrefix(key, prefix+"{") {
				total += v
			}
		}
		return total
	}

	posts, objects, keys := 0, 0, make([]string, 0, len(wire))
	for key, calls := range wire {
		keys = append(keys, key)
		if len(calls.NotOK) != 0 {
			t.Errorf("identifiers mode: %s answered %v (status: count), want 200 only", key, calls.NotOK)
		}
		if strings.HasPrefix(key, "POST ") {
			posts += calls.Calls
			objects += calls.Calls - calls.Identifiers
		}
	}
	sort.Strings(keys)
	var seen strings.Builder
	for _, key := range keys {
		fmt.Fprintf(&seen, " %s×%d", key, wire[key].Calls)
	}
	if wire["GET /capabilities"].Calls < 1 {
		t.Errorf("identifiers mode: vc-scheduler never asked GET /capabilities (calls:%s): is it the patched build?", seen.String())
	}
	if objects != 0 {
		t.Errorf("identifiers mode: %d of %d calls carried object bodies, want identifiers only (calls:%s)", objects, posts, seen.String())
	}
	batched, perNode := wire["POST /batchPredicate"].Calls, wire["POST /predicate"].Calls
	if predicate && (batched < 1 || perNode != 0) {
		t.Errorf("identifiers mode: %d batched and %d per-node predicate calls, want batched ones only (calls:%s)",
			batched, perNode, seen.String())
	}
	if !predicate && batched+perNode != 0 {
		t.Errorf("identifiers mode: %d predicate calls, but the entry has no predicateVerb", batched+perNode)
	}
	if ids.Calls < 1 || float64(ids.Calls) != ok || ids.Calls != posts {
		t.Errorf("identifiers mode: Caldera answered %d identifiers calls (/debug/session), %v verb calls with 200"+
			" (caldera_responses_total: %v), the proxy forwarded %d POSTs: want all three equal and > 0",
			ids.Calls, ok, answered, posts)
	}
	if len(other) != 0 {
		t.Errorf("identifiers mode: Caldera answered other than 200: %v", other)
	}
	if n := sum("caldera_bodies_refused_total"); n != 0 {
		t.Errorf("identifiers mode: Caldera refused %v bodies (caldera_bodies_refused_total)%s", n,
			cal.logLines("refused", 10))
	}
	if n := sum("caldera_identifiers_unknown_objects_total"); n != 0 {
		t.Errorf("identifiers mode: %v objects named that Caldera's session does not hold", n)
	}
	if view, err := cal.sessionStateDebug(); err != nil {
		t.Error(err)
	} else if view.SelfAudit.ObjectsAudited != 0 {
		t.Errorf("identifiers mode: the self-audit compared %d objects Volcano sent, want none (identifiers carry none)",
			view.SelfAudit.ObjectsAudited)
	}
	text, err := os.ReadFile(s.Scheduler.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		for _, marker := range fallbackMarkers {
			if strings.Contains(line, marker) {
				t.Errorf("identifiers mode: vc-scheduler logged %q:\n  %s", marker, line)
			}
		}
	}
	t.Logf("identifiers mode: %d identifiers calls answered, on the wire:%s; roster differences %v",
		ids.Calls, seen.String(), sum("caldera_identifiers_roster_differences_total"))
}
