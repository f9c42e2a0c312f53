package suite

// Proof that can fail: every compared scenario checks that Caldera answered (a recording proxy
// between Volcano's extender and Caldera) and that its answer decided the outcome (a control
// run with the same state and the same extender entry, served by a Caldera that hosts no
// plugin, so every verb gets the neutral answer: the plugin removed). A scenario whose outcome
// equals its control proves nothing about Caldera; it must be reworked, or marked Abstain with
// the reason.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
)

// recorder is a reverse proxy in front of one Caldera that counts the verbs Caldera answered
// with 200.
type recorder struct {
	URL      string
	mu       sync.Mutex
	answered map[string]int
}

func startRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{answered: map[string]int{}}
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
	a := r.Answered()
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+itoa(a[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	digits := ""
	for ; n > 0; n /= 10 {
		digits = string(rune('0'+n%10)) + digits
	}
	return digits
}

// hookVerbs are the verbs that carry a plugin's decision (not the session's lifecycle).
func hookVerbs(answered map[string]int) int {
	n := 0
	for verb, count := range answered {
		if verb != "onSessionOpen" && verb != "onSessionClose" {
			n += count
		}
	}
	return n
}

// checkAnswered: onSessionOpen (when the extender entry sends it) and at least one decision
// verb reached Caldera and came back 200.
func checkAnswered(t *testing.T, s Scenario, r *recorder, entry map[string]interface{}) {
	t.Helper()
	a := r.Answered()
	if _, sends := entry[verbOnSessionOpen]; sends && a["onSessionOpen"] == 0 {
		t.Errorf("Caldera answered no onSessionOpen (answered: %s)", r)
	}
	if s.Abstain == "" && hookVerbs(a) == 0 {
		t.Errorf("Caldera answered no decision verb (answered: %s): the scenario does not ask it", r)
	}
}

// checkControl compares the Caldera run with its control run (no plugin hosted).
func checkControl(t *testing.T, s Scenario, ext, control Outcome, cmp func(a, b Outcome) string) {
	t.Helper()
	t.Logf("control : %s", control)
	same := cmp(ext, control) == ""
	switch {
	case same && s.Abstain == "":
		t.Errorf("the outcome equals its control (Caldera hosting no plugin): the scenario proves"+
			" nothing about Caldera's %s; rework it or mark it Abstain with the reason", s.Plugin)
	case !same && s.Abstain != "":
		t.Errorf("marked Abstain (%s) but the outcome differs from its control: remove the mark", s.Abstain)
	case same:
		t.Logf("ABSTAIN: %s", s.Abstain)
	}
}
