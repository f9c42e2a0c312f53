package e2e

// Mutations: proof that the end-to-end scenarios fail when Caldera's answers are broken.
//
// CALDERA_E2E_MUTATE=<verb> puts a mutating proxy between vc-scheduler and the Caldera of every
// scenario. Caldera still receives every call (its session follows as usual); the proxy rewrites
// what it answers for that verb:
//
//   - preemptable: every evictee granted as a victim (pdb's and min-runtime's protection gone);
//   - jobEnqueueable: the vote flipped (Permit <-> Reject; Abstain stays): resourcequota, sla,
//     overcommit;
//   - predicate: the pass of a Caldera hosting no plugin (nodegroup's filter gone);
//   - prioritize: every score negated (resource-strategy-fit's packing reversed).
//
// TestE2EMutations (go test -tags mutations, mutations_test.go) runs this test binary once per
// verb on the scenario about it and requires that scenario to fail. The same rewrites break each
// plugin in the Go differential suite (tests/conformance/suite/mutate.go).

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

const mutateEnv = "CALDERA_E2E_MUTATE"

// mutatedVerb is the verb whose answers this test binary breaks ("" = none).
func mutatedVerb() string { return os.Getenv(mutateEnv) }

// startMutator is the mutating proxy in front of caldera; neutral is a Caldera hosting no
// plugin, which answers the predicate calls.
func startMutator(t testing.TB, verb, caldera, neutral string) string {
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		code, answer, err := post(caldera, req.URL.Path, body)
		if err == nil && code == http.StatusOK && strings.Trim(req.URL.Path, "/") == verb {
			switch verb {
			case "preemptable", "reclaimable":
				answer, err = grantEvery(body)
			case "jobEnqueueable":
				answer, err = rewriteNumbers(answer, "status")
			case "predicate":
				code, answer, err = post(neutral, req.URL.Path, body)
			case "prioritize":
				answer, err = rewriteNumbers(answer, "nodeScore")
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(answer)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Logf("%s=%s: Caldera's %s answers are broken by a proxy", mutateEnv, verb, verb)
	return "http://" + l.Addr().String()
}

// grantEvery answers an evict request with every evictee as a victim.
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

// rewriteNumbers negates the number at key, or every number of the map at key: a vote
// flipped, a ranking reversed.
func rewriteNumbers(answer []byte, key string) ([]byte, error) {
	var m map[string]interface{}
	if err := json.Unmarshal(answer, &m); err != nil {
		return nil, err
	}
	switch v := m[key].(type) {
	case float64:
		m[key] = -v
	case map[string]interface{}:
		for k, s := range v {
			if f, ok := s.(float64); ok {
				v[k] = -f
			}
		}
	}
	return json.Marshal(m)
}
