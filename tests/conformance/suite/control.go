package suite

// Proof that can fail: every compared scenario checks that Caldera answered (a recording proxy
// between Volcano's extender and Caldera) and that its answer decided the outcome (a control
// run with the same state and the same extender entry, served by a Caldera that hosts no
// plugin, so every verb gets the neutral answer, and whose victim verbs grant every evictee:
// the plugin removed, protection included). A scenario whose outcome
// equals its control proves nothing about Caldera; it must be reworked, or marked Abstain with
// the reason.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"volcano.sh/volcano/pkg/scheduler/conf"
)

// recorder is a reverse proxy in front of one Caldera that counts the verbs Caldera answered
// with 200.
type recorder struct {
	URL      string
	target   string // the Caldera (or the proxy before it) the calls go to
	mu       sync.Mutex
	answered map[string]int
	// Calls posted, by verb, whose body named its objects by identifiers or carried Volcano's
	// objects (identifierBody).
	identifierBodies, objectBodies map[string]int
}

func startRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{answered: map[string]int{}, identifierBodies: map[string]int{}, objectBodies: map[string]int{},
		target: target}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			r.mu.Lock()
			r.answered[strings.TrimPrefix(resp.Request.URL.Path, "/")]++
			r.mu.Unlock()
		}
		return nil
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			verb := strings.TrimPrefix(req.URL.Path, "/")
			r.mu.Lock()
			if identifierBody(body) {
				r.identifierBodies[verb]++
			} else {
				r.objectBodies[verb]++
			}
			r.mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
		_, _ = io.Copy(io.Discard, req.Body)
	}))
	t.Cleanup(server.Close)
	r.URL = server.URL
	return r
}

// Answered is verb -> calls Caldera answered with 200.
func (r *recorder) Answered() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.answered))
	for k, v := range r.answered {
		out[k] = v
	}
	return out
}

func (r *recorder) String() string {
	counts := map[string]string{}
	for verb, n := range r.Answered() {
		counts[verb] = strconv.Itoa(n)
	}
	return sortedMap(counts)
}

// neutralCalderas are the controls' Calderas hosting no plugin, one per managedResources list,
// started once per test binary (a start costs about a second) and stopped when Run ends.
var (
	neutralMu       sync.Mutex
	neutralCalderas = map[string]*Caldera{}
	runT            *testing.T
)

func neutralCaldera(t *testing.T, managed []string) string {
	t.Helper()
	neutralMu.Lock()
	defer neutralMu.Unlock()
	key := strings.Join(managed, ",")
	if c, ok := neutralCalderas[key]; ok {
		return c.URL
	}
	owner := runT
	if owner == nil {
		owner = t
	}
	c := startCaldera(owner, CalderaConfig{ManagedResources: managed})
	neutralCalderas[key] = c
	return c.URL
}

func forgetNeutralCalderas() {
	neutralMu.Lock()
	defer neutralMu.Unlock()
	neutralCalderas = map[string]*Caldera{}
}

// startPermissive is the control's extender: every evictee of a preemptable or reclaimable
// call is granted (Permit, victims echoed as received: the protection plugins removed), every
// other verb forwarded to a Caldera that hosts no plugin (its neutral answer in the release's
// dialect).
func startPermissive(t *testing.T, neutral string) string {
	t.Helper()
	u, err := url.Parse(neutral)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		verb := strings.TrimPrefix(req.URL.Path, "/")
		if verb != "preemptable" && verb != "reclaimable" {
			proxy.ServeHTTP(w, req)
			return
		}
		var body struct {
			Evictees json.RawMessage `json:"evictees"`
		}
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		victims := body.Evictees
		if len(victims) == 0 {
			victims = json.RawMessage("[]")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(append([]byte(`{"status":1,"victims":`), victims...), '}'))
	}))
	t.Cleanup(server.Close)
	return server.URL
}

// hookVerbs are the verbs that carry a plugin's decision (not the session's lifecycle).
func hookVerbs(answered map[string]int) int {
	n := 0
	for verb, count := range answered {
		if verb != "onSessionOpen" && verb != "onSessionClose" && verb != "capabilities" {
			n += count
		}
	}
	return n
}

// aboutVerbs are the verbs a scenario is about, as alternatives: Caldera must answer at least
// one verb of each entry. They follow from the actions the scenario runs and the decision verbs
// the extender entry enables and sends: jobEnqueueable for enqueue, preemptable for preempt,
// reclaimable for reclaim, predicate or prioritize for allocate and backfill (Volcano skips
// prioritize where one node passes the predicates).
func aboutVerbs(s Scenario, entry conf.PluginOption) [][]string {
	var about [][]string
	on := func(f *bool) bool { return f != nil && *f }
	runs := map[string]bool{}
	for _, a := range s.Actions() {
		runs[a.Name()] = true
	}
	sent := func(enabled bool, key string) []string {
		if verb, sends := entry.Arguments[key].(string); enabled && sends {
			return []string{verb}
		}
		return nil
	}
	for _, x := range []struct {
		actions []string
		verbs   []string
	}{
		{[]string{"enqueue"}, sent(on(entry.EnabledJobEnqueued), verbJobEnqueueable)},
		{[]string{"preempt"}, sent(on(entry.EnabledPreemptable), verbPreemptable)},
		{[]string{"reclaim"}, sent(on(entry.EnabledReclaimable), verbReclaimable)},
		{[]string{"allocate", "backfill"}, append(append(sent(on(entry.EnabledPredicate), verbPredicate),
			sent(on(entry.EnabledPredicate), argBatchPredicateVerb)...), sent(on(entry.EnabledNodeOrder), verbPrioritize)...)},
	} {
		for _, a := range x.actions {
			if runs[a] && len(x.verbs) > 0 {
				about = append(about, x.verbs)
				break
			}
		}
	}
	return about
}

// checkAnswered: onSessionOpen (when the extender entry sends it) and the verbs the scenario
// is about (aboutVerbs; without any, at least one decision verb) reached Caldera and came back
// 200.
func checkAnswered(t *testing.T, s Scenario, r *recorder, entry conf.PluginOption) {
	t.Helper()
	a := r.Answered()
	if _, sends := entry.Arguments[verbOnSessionOpen]; sends && a["onSessionOpen"] == 0 {
		t.Errorf("Caldera answered no onSessionOpen (answered: %s)", r)
	}
	about := aboutVerbs(s, entry)
	for _, alternatives := range about {
		n := 0
		for _, verb := range alternatives {
			n += a[verb]
		}
		if n == 0 {
			t.Errorf("Caldera answered no %s, which the scenario is about (answered: %s)",
				strings.Join(alternatives, " or "), r)
		}
	}
	if len(about) == 0 && hookVerbs(a) == 0 {
		t.Errorf("Caldera answered no decision verb (answered: %s): the scenario does not ask it", r)
	}
}

// controlRuns bounds the control runs of one scenario. Without Caldera's scores Volcano picks
// at random among tied nodes, so a control can match the Caldera run by chance (1 in 2 for one
// pod on two nodes); a scenario equals its control only when every run does ((1/2)^6 = 1 in 64
// for that worst case, 1 in 262,144 for three pods on two nodes).
const controlRuns = 6

// checkControl compares the Caldera run with two controls — Caldera hosting no plugin (every
// verb's neutral answer: victim verbs abstain) and the same with every evictee granted as a
// victim (the protection removed) — each run until it differs. A scenario proves something
// about Caldera when it differs from both: its answer was neither "nothing" nor "everything".
// One that equals a control is reworked, or marked Abstain saying why it is kept.
func checkControl(t *testing.T, s Scenario, ext Outcome, cmp func(a, b Outcome) string, controls map[string]func() Outcome) {
	t.Helper()
	names := make([]string, 0, len(controls))
	for name := range controls {
		names = append(names, name)
	}
	sort.Strings(names)
	var equal []string
	for _, name := range names {
		differs := false
		for i := 0; i < controlRuns && !differs; i++ {
			o := controls[name]()
			t.Logf("control (%s): %s", name, o)
			differs = cmp(ext, o) != ""
		}
		if !differs {
			equal = append(equal, name)
		}
	}
	// One "CONTROLS:" line per scenario, for counting (tests/conformance/README.md).
	var unnamed []string // controls the outcome equals that no Abstain mark names
	for _, name := range equal {
		if s.Abstain == nil || s.Abstain.Equals != name {
			unnamed = append(unnamed, name)
		}
	}
	switch {
	case s.Abstain != nil && controls[s.Abstain.Equals] == nil:
		t.Errorf("CONTROLS: the Abstain mark names the control %q, which this scenario does not run (controls: %s)",
			s.Abstain.Equals, strings.Join(names, "; "))
	case len(unnamed) > 0:
		t.Errorf("CONTROLS: the outcome equals its control (%s) in %d runs: the scenario does not show that"+
			" Caldera's %s decided it; rework it, or mark it Abstain naming the one control it may equal, with the reason",
			strings.Join(unnamed, "; "), controlRuns, s.Plugin)
	case s.Abstain == nil:
		t.Logf("CONTROLS: differs from every control")
	case len(equal) > 0:
		t.Logf("CONTROLS: ABSTAIN (equals %s; differs from %s): %s", s.Abstain.Equals,
			others(names, s.Abstain.Equals), s.Abstain.Why)
	case s.Abstain.ByChance:
		t.Logf("CONTROLS: ABSTAIN BY CHANCE, this run differs from every control (it may equal %s: %s)",
			s.Abstain.Equals, s.Abstain.Why)
	default:
		t.Errorf("CONTROLS: marked Abstain %s (%s), yet it differs from every control in %d runs: the mark is"+
			" stale; remove it (or, where Volcano's own randomness decides, mark it abstainByChance)",
			s.Abstain.Equals, s.Abstain.Why, controlRuns)
	}
}

// others is names without skip, or "no other control".
func others(names []string, skip string) string {
	var out []string
	for _, n := range names {
		if n != skip {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "no other control"
	}
	return strings.Join(out, "; ")
}
