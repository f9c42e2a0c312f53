/*
Copyright 2026 The Volcano Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package extender

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/enqueue"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/uthelper"
	schedulerutil "volcano.sh/volcano/pkg/scheduler/util"
)

// fakeExtender answers capabilities as told and every verb with its answer (default {}),
// keeping the bodies it was posted, per verb, in order.
type fakeExtender struct {
	*httptest.Server

	mu sync.Mutex
	// capabilities is the body of GET /capabilities; capabilitiesCode its code (default 200);
	// capabilitiesDelay how long it takes.
	capabilities      string
	capabilitiesCode  int
	capabilitiesDelay time.Duration
	capabilitiesGets  int
	answers           map[string]string
	codes             map[string]int
	bodies            map[string][]map[string]interface{}
}

func newFakeExtender(t *testing.T, capabilities string) *fakeExtender {
	fe := &fakeExtender{
		capabilities: capabilities,
		answers:      map[string]string{},
		codes:        map[string]int{},
		bodies:       map[string][]map[string]interface{}{},
	}
	fe.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := strings.TrimPrefix(r.URL.Path, "/")
		if verb == capabilitiesPath {
			if r.Method != http.MethodGet {
				t.Errorf("capabilities asked with %s", r.Method)
			}
			fe.mu.Lock()
			fe.capabilitiesGets++
			body, code, delay := fe.capabilities, fe.capabilitiesCode, fe.capabilitiesDelay
			fe.mu.Unlock()
			time.Sleep(delay)
			if code != 0 {
				w.WriteHeader(code)
			}
			w.Write([]byte(body))
			return
		}
		body := map[string]interface{}{}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("%s: body is not a JSON object: %v", verb, err)
		}
		fe.mu.Lock()
		fe.bodies[verb] = append(fe.bodies[verb], body)
		answer, code := fe.answers[verb], fe.codes[verb]
		fe.mu.Unlock()
		if code != 0 {
			w.WriteHeader(code)
		}
		if answer == "" {
			answer = "{}"
		}
		w.Write([]byte(answer))
	}))
	t.Cleanup(fe.Close)
	t.Cleanup(func() { forgetCapabilities(fe.URL) })
	return fe
}

func (fe *fakeExtender) posted(verb string) []map[string]interface{} {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return append([]map[string]interface{}(nil), fe.bodies[verb]...)
}

func (fe *fakeExtender) gets() int {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return fe.capabilitiesGets
}

const bothCapabilities = `{"bodies": ["objects", "identifiers"], "batchPredicate": true}`

// identifierArguments configures every verb, with identifier bodies and the batched predicate.
func identifierArguments(url string) framework.Arguments {
	return framework.Arguments{
		ExtenderURLPrefix:          url,
		ExtenderHTTPTimeout:        "500ms",
		ExtenderOnSessionOpenVerb:  "onSessionOpen",
		ExtenderOnSessionCloseVerb: "onSessionClose",
		ExtenderPredicateVerb:      "predicate",
		ExtenderPrioritizeVerb:     "prioritize",
		ExtenderPreemptableVerb:    "preemptable",
		ExtenderReclaimableVerb:    "reclaimable",
		ExtenderQueueOverusedVerb:  "queueOverused",
		ExtenderJobEnqueueableVerb: "jobEnqueueable",
		ExtenderJobReadyVerb:       "jobReady",
		ExtenderAllocateFuncVerb:   "allocateFunc",
		ExtenderDeallocateFuncVerb: "deallocateFunc",
		ExtenderBodies:             BodiesIdentifiers,
		ExtenderBatchPredicateVerb: "batchPredicate",
		ExtenderIgnorable:          false,
	}
}

func TestNegotiation(t *testing.T) {
	tests := []struct {
		name string
		// capabilities answer
		body  string
		code  int
		delay time.Duration
		// configuration
		bodies      string
		batchVerb   string
		noEventVerb bool
		// expected
		identifiers, batch bool
		asked              int
	}{
		{name: "both asked and answered", body: bothCapabilities, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", identifiers: true, batch: true, asked: 1},
		{name: "identifiers only asked", body: bothCapabilities, bodies: BodiesIdentifiers, identifiers: true, asked: 1},
		{name: "batch only asked", body: bothCapabilities, batchVerb: "batchPredicate", batch: true, asked: 1},
		{name: "extender lists objects only", body: `{"bodies": ["objects"]}`, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", asked: 1},
		{name: "extender lists identifiers without batch", body: `{"bodies": ["identifiers"], "batchPredicate": false}`, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", identifiers: true, asked: 1},
		{name: "404", body: `404 page not found`, code: http.StatusNotFound, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", asked: 1},
		{name: "500", body: `{}`, code: http.StatusInternalServerError, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", asked: 1},
		{name: "timeout", body: bothCapabilities, delay: time.Second, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", asked: 1},
		{name: "unreadable body", body: `{"bodies": "identifiers"`, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", asked: 1},
		{name: "not opted in: never asked", body: bothCapabilities, bodies: "", asked: 0},
		{name: "objects configured: never asked", body: bothCapabilities, bodies: BodiesObjects, asked: 0},
		{name: "refused without event verbs: never asked", body: bothCapabilities, bodies: BodiesIdentifiers, batchVerb: "batchPredicate", noEventVerb: true, asked: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := newFakeExtender(t, tc.body)
			fe.capabilitiesCode, fe.capabilitiesDelay = tc.code, tc.delay
			arguments := framework.Arguments{
				ExtenderURLPrefix:          fe.URL,
				ExtenderHTTPTimeout:        "200ms",
				ExtenderPredicateVerb:      "predicate",
				ExtenderAllocateFuncVerb:   "allocateFunc",
				ExtenderDeallocateFuncVerb: "deallocateFunc",
				ExtenderBodies:             tc.bodies,
				ExtenderBatchPredicateVerb: tc.batchVerb,
			}
			if tc.noEventVerb {
				delete(arguments, ExtenderAllocateFuncVerb)
			}
			// Two sessions: the answer is asked once per process.
			for session := 0; session < 2; session++ {
				ep := New(arguments).(*extenderPlugin)
				ep.negotiate()
				if ep.identifiers != tc.identifiers || ep.batchPredicate != tc.batch {
					t.Errorf("session %d: identifiers %v, batch %v; want %v, %v", session, ep.identifiers, ep.batchPredicate, tc.identifiers, tc.batch)
				}
			}
			if got := fe.gets(); got != tc.asked {
				t.Errorf("capabilities asked %d times, want %d", got, tc.asked)
			}
		})
	}
}

// TestNegotiationAskedAgainAfterFailure: an extender that answered 404 and is then upgraded in
// place is found at the first session after a failed call.
func TestNegotiationAskedAgainAfterFailure(t *testing.T) {
	fe := newFakeExtender(t, "404 page not found")
	fe.capabilitiesCode = http.StatusNotFound
	arguments := identifierArguments(fe.URL)

	ep := New(arguments).(*extenderPlugin)
	ep.negotiate()
	if ep.identifiers || ep.batchPredicate {
		t.Fatalf("404: identifiers %v, batch %v; want objects", ep.identifiers, ep.batchPredicate)
	}

	fe.mu.Lock()
	fe.capabilities, fe.capabilitiesCode = bothCapabilities, 0
	fe.codes["jobReady"] = http.StatusServiceUnavailable
	fe.mu.Unlock()
	ep = New(arguments).(*extenderPlugin)
	ep.negotiate()
	if ep.identifiers {
		t.Fatalf("the answer kept was asked again without a failed call")
	}
	if err := ep.send("jobReady", &JobIdentifierRequest{}, &JobReadyResponse{}); err == nil {
		t.Fatalf("jobReady answered 503 without an error")
	}
	ep = New(arguments).(*extenderPlugin)
	ep.negotiate()
	if !ep.identifiers || !ep.batchPredicate {
		t.Errorf("after a failed call: identifiers %v, batch %v; want both", ep.identifiers, ep.batchPredicate)
	}
	if got := fe.gets(); got != 2 {
		t.Errorf("capabilities asked %d times, want 2", got)
	}
}

var trueValue = true

func extenderTiers(arguments framework.Arguments) []conf.Tier {
	return []conf.Tier{{Plugins: []conf.PluginOption{{
		Name:               PluginName,
		EnabledPredicate:   &trueValue,
		EnabledNodeOrder:   &trueValue,
		EnabledPreemptable: &trueValue,
		EnabledReclaimable: &trueValue,
		EnabledJobEnqueued: &trueValue,
		EnabledJobReady:    &trueValue,
		EnabledOverused:    &trueValue,
		Arguments:          arguments,
	}}}}
}

func nodeResources() v1.ResourceList {
	return api.BuildResourceList("2", "4Gi", []api.ScalarResource{{Name: "pods", Value: "10"}}...)
}

// clusterTest: three nodes, a running pod of job pg-running on n1, and a pending pod of job pg-pending
// (Pending, with minResources so that enqueue asks jobEnqueueable).
func clusterTest(name string) *uthelper.TestCommonStruct {
	res := nodeResources()
	pending := schedulerutil.BuildPodGroup("pg-pending", "ns1", "q1", 1, nil, schedulingv1beta1.PodGroupPending)
	minResources := api.BuildResourceList("1", "1Gi")
	pending.Spec.MinResources = &minResources
	return &uthelper.TestCommonStruct{
		Name:    name,
		Plugins: map[string]framework.PluginBuilder{PluginName: New},
		Nodes: []*v1.Node{
			schedulerutil.BuildNode("n1", res, nil),
			schedulerutil.BuildNode("n2", res, nil),
			schedulerutil.BuildNode("n3", res, nil),
		},
		Pods: []*v1.Pod{
			schedulerutil.BuildPod("ns1", "running", "n1", v1.PodRunning, api.BuildResourceList("1", "1Gi"), "pg-running", nil, nil),
			schedulerutil.BuildPod("ns1", "pending", "", v1.PodPending, api.BuildResourceList("1", "1Gi"), "pg-pending", nil, nil),
		},
		PodGroups: []*schedulingv1beta1.PodGroup{
			schedulerutil.BuildPodGroup("pg-running", "ns1", "q1", 1, nil, schedulingv1beta1.PodGroupRunning),
			pending,
		},
		Queues: []*schedulingv1beta1.Queue{schedulerutil.BuildQueue("q1", 1, nil)},
	}
}

// keysOf returns a body's keys, sorted.
func keysOf(body map[string]interface{}) []string {
	keys := make([]string, 0, len(body))
	for key := range body {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func expectBody(t *testing.T, verb string, got, want map[string]interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Errorf("%s body:\n got %s\nwant %s", verb, gotJSON, wantJSON)
	}
}

func only(t *testing.T, fe *fakeExtender, verb string) map[string]interface{} {
	t.Helper()
	bodies := fe.posted(verb)
	if len(bodies) != 1 {
		t.Fatalf("%s posted %d times, want once: %v", verb, len(bodies), bodies)
	}
	return bodies[0]
}

// TestIdentifierBodies runs enqueue and allocate with every verb configured in identifiers
// mode: each body names the session and its objects, and the batched predicate's failed node
// is not chosen.
func TestIdentifierBodies(t *testing.T) {
	fe := newFakeExtender(t, bothCapabilities)
	fe.answers["jobEnqueueable"] = `{"status": 1}`
	fe.answers["jobReady"] = `{"status": true}`
	fe.answers["batchPredicate"] = `{"failedNodes": {"n1": {"code": 2, "reason": "n1 is full"}}}`
	fe.answers["prioritize"] = `{"nodeScore": {"n2": 10}}`

	test := clusterTest("identifiers")
	// n1 fails the batched predicate, n2 scores higher than n3.
	test.ExpectBindMap = map[string]string{"ns1/pending": "n2"}
	test.ExpectBindsNum = 1
	ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), nil)
	session := string(ssn.UID)
	test.Run([]framework.Action{enqueue.New(), allocate.New()})
	if err := test.CheckBind(0); err != nil {
		t.Error(err)
	}
	test.Close()

	open := only(t, fe, "onSessionOpen")
	queues := make([]string, 0, len(ssn.Queues))
	for _, queue := range ssn.Queues {
		queues = append(queues, queue.Name)
	}
	sort.Strings(queues)
	wantQueues := make([]interface{}, 0, len(queues))
	for _, queue := range queues {
		wantQueues = append(wantQueues, queue)
	}
	expectBody(t, "onSessionOpen", open, map[string]interface{}{
		"session":        session,
		"jobs":           []interface{}{"ns1/pg-pending", "ns1/pg-running"},
		"nodes":          []interface{}{"n1", "n2", "n3"},
		"queues":         wantQueues,
		"revocableNodes": []interface{}{},
	})
	expectBody(t, "jobEnqueueable", only(t, fe, "jobEnqueueable"), map[string]interface{}{
		"session": session, "job": "ns1/pg-pending",
	})
	expectBody(t, "queueOverused", fe.posted("queueOverused")[0], map[string]interface{}{
		"session": session, "queue": "q1",
	})
	// One batched predicate for the task's pass, none per node.
	expectBody(t, "batchPredicate", only(t, fe, "batchPredicate"), map[string]interface{}{
		"session": session, "task": "ns1-pending", "job": "ns1/pg-pending", "nodes": []interface{}{"n1", "n2", "n3"},
	})
	if bodies := fe.posted("predicate"); len(bodies) != 0 {
		t.Errorf("per-node predicate posted %d times with the batched predicate", len(bodies))
	}
	// The nodes that passed, in the order the predicate's workers found them.
	prioritize := only(t, fe, "prioritize")
	if nodes, _ := prioritize["nodes"].([]interface{}); len(nodes) == 2 && nodes[0] == "n3" {
		nodes[0], nodes[1] = nodes[1], nodes[0]
	}
	expectBody(t, "prioritize", prioritize, map[string]interface{}{
		"session": session, "task": "ns1-pending", "job": "ns1/pg-pending", "nodes": []interface{}{"n2", "n3"},
	})
	expectBody(t, "allocateFunc", only(t, fe, "allocateFunc"), map[string]interface{}{
		"session": session, "task": "ns1-pending", "job": "ns1/pg-pending", "node": "n2", "status": "Allocated",
	})
	for _, body := range fe.posted("jobReady") {
		if keys := keysOf(body); !reflect.DeepEqual(keys, []string{"job", "session"}) || body["session"] != session {
			t.Errorf("jobReady body %v, want session and job", body)
		}
	}
	expectBody(t, "onSessionClose", only(t, fe, "onSessionClose"), map[string]interface{}{"session": session})
}

// TestObjectBodiesFallback: the same configuration against an extender that does not answer
// capabilities (404) posts today's bodies and per-node predicates.
func TestObjectBodiesFallback(t *testing.T) {
	fe := newFakeExtender(t, "404 page not found")
	fe.capabilitiesCode = http.StatusNotFound
	fe.answers["jobEnqueueable"] = `{"status": 1}`
	fe.answers["jobReady"] = `{"status": true}`
	fe.answers["prioritize"] = `{"nodeScore": {"n2": 10}}`

	test := clusterTest("objects")
	ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), nil)
	nodes := len(ssn.Nodes)
	test.Run([]framework.Action{enqueue.New(), allocate.New()})
	test.Close()

	if open := only(t, fe, "onSessionOpen"); open["session"] != nil || open["Jobs"] == nil || open["Nodes"] == nil {
		t.Errorf("onSessionOpen body has keys %v, want today's snapshot", keysOf(open))
	}
	if bodies := fe.posted("batchPredicate"); len(bodies) != 0 {
		t.Errorf("batchPredicate posted %d times to an extender that did not declare it", len(bodies))
	}
	predicates := fe.posted("predicate")
	if len(predicates) != nodes {
		t.Errorf("per-node predicate posted %d times, want %d", len(predicates), nodes)
	}
	for _, body := range predicates {
		if _, object := body["task"].(map[string]interface{}); !object {
			t.Errorf("predicate task is %T, want a TaskInfo object", body["task"])
		}
	}
	allocated := only(t, fe, "allocateFunc")
	if _, object := allocated["task"].(map[string]interface{}); !object {
		t.Errorf("allocateFunc task is %T, want a TaskInfo object", allocated["task"])
	}
	if body := only(t, fe, "onSessionClose"); len(body) != 0 {
		t.Errorf("onSessionClose body %v, want {}", body)
	}
}

func sessionTask(t *testing.T, ssn *framework.Session, uid string) *api.TaskInfo {
	t.Helper()
	for _, job := range ssn.Jobs {
		if task, found := job.Tasks[api.TaskID(uid)]; found {
			return task
		}
	}
	t.Fatalf("task %s not in the session", uid)
	return nil
}

func fitStatus(t *testing.T, err error) *api.Status {
	t.Helper()
	fitErr, ok := err.(*api.FitError)
	if !ok || len(fitErr.Status) != 1 {
		t.Fatalf("predicate error %#v, want a FitError with one status", err)
	}
	return fitErr.Status[0]
}

// TestBatchPredicate: one call per task pass, kept for the pass and mapped to each node's fit
// error; asked again for a task without a current answer (no pass, or an allocation since).
func TestBatchPredicate(t *testing.T) {
	fe := newFakeExtender(t, bothCapabilities)
	fe.answers["batchPredicate"] = `{"failedNodes": {
		"n1": {"code": 2, "reason": "n1 is full"},
		"n2": {"code": 3, "reason": "n2 never fits"},
		"n3": {"reason": "no code"}}}`

	test := clusterTest("batch")
	test.Nodes = append(test.Nodes, schedulerutil.BuildNode("n4", nodeResources(), nil))
	ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), nil)
	defer test.Close()
	task := sessionTask(t, ssn, "ns1-pending")

	if err := ssn.PrePredicateFn(task); err != nil {
		t.Fatalf("PrePredicateFn: %v", err)
	}
	want := map[string]*api.Status{
		"n1": {Code: api.Unschedulable, Reason: "n1 is full", Plugin: PluginName},
		"n2": {Code: api.UnschedulableAndUnresolvable, Reason: "n2 never fits", Plugin: PluginName},
		"n3": {Code: api.Error, Reason: "no code", Plugin: PluginName},
		"n4": nil,
	}
	for round := 0; round < 2; round++ {
		for name, status := range want {
			err := ssn.PredicateFn(task, ssn.Nodes[name])
			if status == nil {
				if err != nil {
					t.Errorf("%s: %v, want it to pass", name, err)
				}
				continue
			}
			if got := fitStatus(t, err); !reflect.DeepEqual(got, status) {
				t.Errorf("%s: status %+v, want %+v", name, got, status)
			}
		}
	}
	bodies := fe.posted("batchPredicate")
	if len(bodies) != 1 {
		t.Fatalf("batchPredicate posted %d times for one pass, want once", len(bodies))
	}
	if nodes := bodies[0]["nodes"]; !reflect.DeepEqual(nodes, []interface{}{"n1", "n2", "n3", "n4"}) {
		t.Errorf("batchPredicate nodes %v, want the session's nodes", nodes)
	}

	// An allocation changes the session's nodes: the next predicate of the task asks again,
	// for that node alone.
	if err := ssn.Allocate(task, ssn.Nodes["n4"]); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if err := ssn.PredicateFn(task, ssn.Nodes["n1"]); fitStatus(t, err).Code != api.Unschedulable {
		t.Errorf("n1 after an allocation: %v", err)
	}
	bodies = fe.posted("batchPredicate")
	if len(bodies) != 2 || !reflect.DeepEqual(bodies[1]["nodes"], []interface{}{"n1"}) {
		t.Errorf("after an allocation, batchPredicate bodies %v, want a second one for n1", bodies)
	}

	// A task never pre-predicated (preempt's check of the nominated node) is asked on its node.
	running := sessionTask(t, ssn, "ns1-running")
	if err := ssn.PredicateFn(running, ssn.Nodes["n4"]); err != nil {
		t.Errorf("n4 for a task without a pass: %v", err)
	}
	bodies = fe.posted("batchPredicate")
	if len(bodies) != 3 || bodies[2]["task"] != "ns1-running" || !reflect.DeepEqual(bodies[2]["nodes"], []interface{}{"n4"}) {
		t.Errorf("batchPredicate bodies %v, want a third one for ns1-running on n4", bodies)
	}
}

// TestBatchPredicateTaskGroup: a task's batch leaves out the nodes a task of its group (job and
// task role) failed on this session, which allocate's predicate helper answers from its error
// cache without asking (pkg/scheduler/util/predicate_helper.go); predicates on such nodes (an
// action whose own cache does not know them) ask once for all of them. Not where the cache is
// off: a task without a role, or allocate's predicateErrorCacheEnable false.
func TestBatchPredicateTaskGroup(t *testing.T) {
	const taskSpec = "volcano.sh/task-spec" // batch.TaskSpecKey, a label as the job controller sets it
	worker := map[string]string{taskSpec: "worker"}
	all := []interface{}{"n1", "n2", "n3"}
	for _, tc := range []struct {
		name           string
		configurations []conf.Configuration
		// second is the nodes the second worker's batch names; leftOut the one call its
		// predicates on the other nodes make (nil: none).
		second, leftOut []interface{}
	}{
		{
			name:    "error cache on (allocate's default)",
			second:  []interface{}{"n1"},
			leftOut: []interface{}{"n2", "n3"},
		},
		{
			name: "allocate's predicateErrorCacheEnable false",
			configurations: []conf.Configuration{{
				Name:      "allocate",
				Arguments: map[string]interface{}{conf.EnablePredicateErrCacheKey: false},
			}},
			second: all,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := newFakeExtender(t, bothCapabilities)
			fe.answers["batchPredicate"] = `{"failedNodes": {
				"n2": {"code": 2, "reason": "n2 is full"},
				"n3": {"code": 2, "reason": "n3 is full"}}}`
			test := clusterTest("task-group")
			for _, name := range []string{"w1", "w2"} {
				test.Pods = append(test.Pods, schedulerutil.BuildPod("ns1", name, "", v1.PodPending,
					api.BuildResourceList("1", "1Gi"), "pg-pending", worker, nil))
			}
			ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), tc.configurations)
			defer test.Close()

			for _, uid := range []string{"ns1-w1", "ns1-w2", "ns1-pending"} {
				if err := ssn.PrePredicateFn(sessionTask(t, ssn, uid)); err != nil {
					t.Fatalf("PrePredicateFn %s: %v", uid, err)
				}
			}
			bodies := fe.posted("batchPredicate")
			if len(bodies) != 3 {
				t.Fatalf("batchPredicate posted %d times for three passes, want 3", len(bodies))
			}
			for i, want := range [][]interface{}{all, tc.second, all} {
				if got := bodies[i]["nodes"]; !reflect.DeepEqual(got, want) {
					t.Errorf("pass %d (task %v): nodes %v, want %v", i+1, bodies[i]["task"], got, want)
				}
			}

			// The second worker on every node, twice: the nodes its batch left out answered as
			// the extender answers, from one more call; n1 from the batch.
			w2 := sessionTask(t, ssn, "ns1-w2")
			for round := 0; round < 2; round++ {
				for _, name := range []string{"n2", "n3"} {
					if got := fitStatus(t, ssn.PredicateFn(w2, ssn.Nodes[name])); got.Code != api.Unschedulable {
						t.Errorf("w2 on %s: %+v, want Unschedulable", name, got)
					}
				}
				if err := ssn.PredicateFn(w2, ssn.Nodes["n1"]); err != nil {
					t.Errorf("w2 on n1: %v, want it to pass", err)
				}
			}
			bodies = fe.posted("batchPredicate")
			wantCalls := 3
			if tc.leftOut != nil {
				wantCalls = 4
			}
			if len(bodies) != wantCalls {
				t.Fatalf("batchPredicate posted %d times, want %d", len(bodies), wantCalls)
			}
			if got := bodies[wantCalls-1]["nodes"]; tc.leftOut != nil && !reflect.DeepEqual(got, tc.leftOut) {
				t.Errorf("the nodes left out asked as %v, want %v in one call", got, tc.leftOut)
			}
		})
	}
}

// TestBatchPredicateIgnorable: a failed batched predicate fails every node with an Error, or
// passes every node when the extender is ignorable; one call either way.
func TestBatchPredicateIgnorable(t *testing.T) {
	for _, ignorable := range []bool{false, true} {
		fe := newFakeExtender(t, bothCapabilities)
		fe.codes["batchPredicate"] = http.StatusInternalServerError
		arguments := identifierArguments(fe.URL)
		arguments[ExtenderIgnorable] = ignorable

		test := clusterTest("ignorable")
		ssn := test.RegisterSession(extenderTiers(arguments), nil)
		task := sessionTask(t, ssn, "ns1-pending")
		if err := ssn.PrePredicateFn(task); err != nil {
			t.Errorf("ignorable %v: PrePredicateFn %v, want the failure kept for the nodes", ignorable, err)
		}
		for _, node := range ssn.NodeList {
			err := ssn.PredicateFn(task, node)
			if ignorable && err != nil {
				t.Errorf("ignorable: %s failed: %v", node.Name, err)
			}
			if !ignorable && fitStatus(t, err).Code != api.Error {
				t.Errorf("not ignorable: %s: %v, want an Error", node.Name, err)
			}
		}
		if n := len(fe.posted("batchPredicate")); n != 1 {
			t.Errorf("ignorable %v: batchPredicate posted %d times, want once", ignorable, n)
		}
		test.Close()
	}
}

// TestVictims: preemptable and reclaimable post the evictor and evictees as UIDs and jobs, and
// the victims answered as UIDs are the session's evictees (the same objects); a UID that is not
// an evictee is ignored.
func TestVictims(t *testing.T) {
	fe := newFakeExtender(t, bothCapabilities)
	answer := `{"status": 1, "victims": ["ns1-running", "ns1-unknown"]}`
	fe.answers["preemptable"], fe.answers["reclaimable"] = answer, answer

	test := clusterTest("victims")
	ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), nil)
	defer test.Close()
	evictor := sessionTask(t, ssn, "ns1-pending")
	evictee := sessionTask(t, ssn, "ns1-running")

	for verb, victimsFn := range map[string]func(*api.TaskInfo, []*api.TaskInfo) []*api.TaskInfo{
		"preemptable": ssn.Preemptable,
		"reclaimable": ssn.Reclaimable,
	} {
		victims := victimsFn(evictor, []*api.TaskInfo{evictee})
		if len(victims) != 1 || victims[0] != evictee {
			t.Errorf("%s victims %v, want the evictee ns1-running itself", verb, victims)
		}
		expectBody(t, verb, only(t, fe, verb), map[string]interface{}{
			"session":  string(ssn.UID),
			"evictor":  map[string]interface{}{"uid": "ns1-pending", "job": "ns1/pg-pending"},
			"evictees": []interface{}{map[string]interface{}{"uid": "ns1-running", "job": "ns1/pg-running"}},
		})
	}
}

// TestVictimsFailure: a failed call rejects, or permits with no victim when ignorable.
func TestVictimsFailure(t *testing.T) {
	fe := newFakeExtender(t, bothCapabilities)
	fe.codes["preemptable"] = http.StatusInternalServerError
	ep := New(identifierArguments(fe.URL)).(*extenderPlugin)
	ep.negotiate()
	evictor := &api.TaskInfo{UID: "a", Job: "ns/a"}
	if victims, _, err := ep.victims("preemptable", evictor, []*api.TaskInfo{{UID: "b", Job: "ns/b"}}); err == nil || victims != nil {
		t.Errorf("victims %v, error %v; want none and the error", victims, err)
	}
}

// TestEventBodies: each event names the task's node and its status after the event, which is
// what an extender needs to replay it: an allocation and its discard (Allocated, then Pending on
// the node it leaves), an eviction and its discard (Releasing, then Running again).
func TestEventBodies(t *testing.T) {
	fe := newFakeExtender(t, bothCapabilities)
	test := clusterTest("events")
	ssn := test.RegisterSession(extenderTiers(identifierArguments(fe.URL)), nil)
	defer test.Close()
	pending := sessionTask(t, ssn, "ns1-pending")
	running := sessionTask(t, ssn, "ns1-running")

	stmt := framework.NewStatement(ssn)
	if err := stmt.Allocate(pending, ssn.Nodes["n2"]); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if err := stmt.Evict(running, "test"); err != nil {
		t.Fatalf("Evict: %v", err)
	}
	stmt.Discard()

	session := string(ssn.UID)
	event := func(task, job, node, status string) map[string]interface{} {
		return map[string]interface{}{"session": session, "task": task, "job": job, "node": node, "status": status}
	}
	allocated, deallocated := fe.posted("allocateFunc"), fe.posted("deallocateFunc")
	if len(allocated) != 2 || len(deallocated) != 2 {
		t.Fatalf("allocateFunc %v, deallocateFunc %v: want two of each", allocated, deallocated)
	}
	expectBody(t, "allocateFunc", allocated[0], event("ns1-pending", "ns1/pg-pending", "n2", "Allocated"))
	expectBody(t, "deallocateFunc", deallocated[0], event("ns1-running", "ns1/pg-running", "n1", "Releasing"))
	// Discarded in reverse order.
	expectBody(t, "allocateFunc", allocated[1], event("ns1-running", "ns1/pg-running", "n1", "Running"))
	expectBody(t, "deallocateFunc", deallocated[1], event("ns1-pending", "ns1/pg-pending", "n2", "Pending"))
}
