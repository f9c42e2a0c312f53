//go:build scale

package e2e

// The neutral server's answers (startNeutral), without a cluster:
// go test -tags scale -run TestNeutral ./tests/e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func neutralPost(t *testing.T, ns *neutralServer, verb, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(ns.url+"/"+verb, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestNeutralIdentifiers: neutral-names' server answers the patched plugin's identifiers bodies
// (protocol/volcano-identifiers/patched/argument.go) and counts them.
func TestNeutralIdentifiers(t *testing.T) {
	ns := startNeutral(t, "", "scale-job-neutral-names-9", true)
	if _, _, _, err := ns.identifiersCounts(); err == nil {
		t.Error("no capabilities asked yet, want an error")
	}
	resp, err := http.Get(ns.url + "/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	caps, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := string(caps); got != `{"bodies":["identifiers"],"batchPredicate":true}` {
		t.Errorf("capabilities: %s", got)
	}
	s := `{"session":"s1",`
	for _, c := range []struct{ verb, body, want string }{
		{"onSessionOpen", s + `"jobs":["a/b"],"nodes":["n1"],"queues":["default"],"revocableNodes":[]}`, `{}`},
		{"batchPredicate", s + `"task":"t1","job":"a/b","nodes":["n1","n2"]}`, `{"failedNodes":{}}`},
		{"predicate", s + `"task":"t1","job":"a/b","node":"n1"}`, `{"status":"","code":0}`},
		{"prioritize", s + `"task":"t1","job":"a/b","nodes":["n1"]}`, `{"nodeScore":{},"errorMessage":""}`},
		{"jobEnqueueable", s + `"job":"scale-job-neutral-names-1/job-00001"}`, `{"status":0}`},
		{"jobEnqueueable", s + `"job":"scale-job-neutral-names-9/job-00009"}`, `{"status":-1}`},
		// another namespace whose name starts with the held one's is not held
		{"jobEnqueueable", s + `"job":"scale-job-neutral-names-90/job-00009"}`, `{"status":0}`},
		{"jobReady", s + `"job":"a/b"}`, `{"status":true}`},
		{"queueOverused", s + `"queue":"default"}`, `{"overused":false}`},
		{"preemptable", s + `"evictor":{"uid":"e","job":"a/b"},"evictees":[{"uid":"v1","job":"a/c"},{"uid":"v2","job":"a/d"}]}`,
			`{"status":1,"victims":["v1","v2"]}`},
		{"reclaimable", s + `"evictor":{"uid":"e","job":"a/b"},"evictees":[]}`, `{"status":1,"victims":[]}`},
		{"allocate", s + `"task":"t1","job":"a/b","node":"n1","status":"Allocated"}`, `{"errorMessage":""}`},
		{"onSessionClose", `{"session":"s1"}`, `{}`},
	} {
		code, got := neutralPost(t, ns, c.verb, c.body)
		if code != http.StatusOK || got != c.want {
			t.Errorf("%s %s: %d %s, want %s", c.verb, c.body, code, got, c.want)
		}
	}
	if got := ns.rejected.Load(); got != 1 {
		t.Errorf("rejected %d, want 1", got)
	}
	// A body of objects is answered but not counted as an identifiers call.
	if code, _ := neutralPost(t, ns, "jobReady", `{"job":{"UID":"a/b"}}`); code != http.StatusOK {
		t.Errorf("jobReady of objects: %d", code)
	}
	calls, answered, verbs, err := ns.identifiersCounts()
	if err != nil || calls != 13 || answered != 14 || verbs["batchPredicate"] != 1 || verbs["jobEnqueueable"] != 3 {
		t.Errorf("counts: calls %d answered %d verbs %v err %v; want 13, 14", calls, answered, verbs, err)
	}
	if ns.opens.Load() != 1 || ns.bytes.Load() == 0 {
		t.Errorf("onSessionOpen: %d bodies, %d bytes", ns.opens.Load(), ns.bytes.Load())
	}
}

// TestNeutralObjects: without identifiers, the server is today's (neutral, neutral-cluster): no
// capabilities (a 404, so a patched vc-scheduler would fall back), evictees echoed, the held
// namespace found by the job's "Namespace" field, nothing counted.
func TestNeutralObjects(t *testing.T) {
	ns := startNeutral(t, "", "scale-job-neutral-9", false)
	if ns.identifiers != nil {
		t.Error("identifiers counts in objects mode")
	}
	resp, err := http.Get(ns.url + "/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("capabilities: %d, want 404", resp.StatusCode)
	}
	for _, c := range []struct{ verb, body, want string }{
		{"preemptable", `{"evictor":{},"evictees":[{"UID":"v1"}]}`, `{"status":1,"victims":[{"UID":"v1"}]}`},
		{"jobEnqueueable", `{"job":{"Namespace":"scale-job-neutral-9","Name":"j"}}`, `{"status":-1}`},
		{"jobEnqueueable", `{"job":{"Namespace":"scale-job-neutral-1","Name":"j"}}`, `{"status":0}`},
		{"onSessionOpen", `{"Jobs":{}}`, `{}`},
	} {
		code, got := neutralPost(t, ns, c.verb, c.body)
		if code != http.StatusOK || got != c.want {
			t.Errorf("%s %s: %d %s, want %s", c.verb, c.body, code, got, c.want)
		}
	}
	if code, _ := neutralPost(t, ns, "batchPredicate", `{}`); code != http.StatusNotFound {
		t.Errorf("batchPredicate in objects mode: %d, want 404", code)
	}
}
