//go:build scale

package e2e

// The cluster-scale benchmark's measurements (scale_test.go): Caldera's figures from its metrics
// and /proc, the bound pods from a watch, the decisions, and the neutral server.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
)

// calderaFigures: Caldera's peak RSS and CPU over the run, and its per-verb time and mean
// snapshot size from its own metrics.
func calderaFigures(r *scaleRun, cal *Caldera, cpu0 float64) {
	r.ServerPeakRSSMiB = peakRSSMiB(cal.proc)
	r.ServerCPUSeconds = procCPUSeconds(cal.proc) - cpu0
	m, err := scrape(cal.HealthURL + "/metrics")
	if err != nil {
		return
	}
	r.CalderaVerbSeconds, r.CalderaVerbCalls = map[string]float64{}, map[string]float64{}
	r.CalderaAfterAnswerSeconds = map[string]float64{}
	for key, v := range m {
		if verb, ok := labelOf(key, "caldera_request_duration_seconds_sum", "verb"); ok {
			r.CalderaVerbSeconds[verb] += v
		}
		// The work after the answer is Caldera's time too: counted in its verb's time, and
		// apart as what Volcano did not wait for.
		if verb, ok := labelOf(key, "caldera_after_answer_seconds_sum", "verb"); ok {
			r.CalderaVerbSeconds[verb] += v
			r.CalderaAfterAnswerSeconds[verb] = v
		}
		if verb, ok := labelOf(key, "caldera_request_duration_seconds_count", "verb"); ok {
			r.CalderaVerbCalls[verb] = v
		}
	}
	if calls := m[`caldera_request_body_bytes_count{verb="onSessionOpen"}`]; calls > 0 {
		r.SnapshotBytes = m[`caldera_request_body_bytes_sum{verb="onSessionOpen"}`] / calls
	}
}

func labelOf(key, name, label string) (string, bool) {
	if !strings.HasPrefix(key, name+"{") {
		return "", false
	}
	i := strings.Index(key, label+`="`)
	if i < 0 {
		return "", false
	}
	rest := key[i+len(label)+2:]
	return rest[:strings.IndexByte(rest, '"')], true
}

// decisions: bound pods per queue, and the jobs with all ten pods bound.
func decisions(t *testing.T, b bulk, w workspace) (map[string]int, []string) {
	ctx := context.Background()
	perQueue := map[string]int{}
	byJob := map[string]int{}
	queueOf := map[string]string{}
	for i := 0; i < scaleNamespaces; i++ {
		ns := w.ns(i)
		pgs, err := b.vc.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, pg := range pgs.Items {
			queueOf[fmt.Sprintf("%d/%s", i, pg.Name)] = pg.Spec.Queue
		}
		pods, err := b.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			job := fmt.Sprintf("%d/%s", i, p.Labels["job"]) // the same in every run's workspace
			byJob[job]++
			perQueue[queueOf[job]]++
		}
	}
	var jobs []string
	for job, n := range byJob {
		if n == 10 {
			jobs = append(jobs, job)
		}
	}
	sort.Strings(jobs)
	return perQueue, jobs
}

// boundCounter counts the scale pods that have a node, from a watch.
type boundCounter struct {
	n    atomic.Int64
	high atomic.Int64 // of those, the evict group's high-priority pods
	stop func()
}

func newBoundCounter(c *Cluster, w workspace) *boundCounter {
	bc := &boundCounter{}
	seen := sync.Map{}
	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactory(c.Kube, 0)
	inf := factory.Core().V1().Pods().Informer()
	mark := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && strings.HasPrefix(p.Namespace, string(w)) {
			if _, loaded := seen.LoadOrStore(string(p.UID), true); !loaded {
				bc.n.Add(1)
				if strings.HasPrefix(p.Name, preemptorPrefix) {
					bc.high.Add(1)
				}
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: mark, UpdateFunc: func(_, obj any) { mark(obj) },
	})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	bc.stop = func() { close(stop) }
	return bc
}

func (bc *boundCounter) count() int { return int(bc.n.Load()) }

func (bc *boundCounter) preemptors() int { return int(bc.high.Load()) }

func quantile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// peakRSSMiB is the process's VmHWM; it must still run.
func peakRSSMiB(p *proc) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// procCPUSeconds is the process's user + system time so far.
func procCPUSeconds(p *proc) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// --- the neutral server ------------------------------------------------------------------------

type neutralServer struct {
	url   string
	bytes atomic.Int64
	opens atomic.Int64
	// hold: the namespace whose jobs jobEnqueueable rejects ("": none); rejected: how many.
	hold     string
	rejected atomic.Int64
	// last: the last onSessionOpen body, kept only when capturing (written once, at cleanup,
	// so that capturing adds no disk write to a cycle).
	last atomic.Pointer[[]byte]
	// identifiers: the server answers the identifiers protocol (neutral-names): its counts.
	identifiers *neutralIdentifiers
}

// neutralIdentifiers counts what the neutral server saw in identifiers mode (neutral-names):
// the GET /capabilities asked, the POSTs whose body is an identifiers one (every identifiers
// request of protocol/volcano-identifiers/patched/argument.go starts with its "session" field),
// the POSTs answered 200, and the calls per verb (the batched predicate's against per-node
// predicates).
type neutralIdentifiers struct {
	capabilities, calls, answered atomic.Int64
	mu                            sync.Mutex
	verbs                         map[string]int
}

// neutralBatchPredicateVerb is where `caldera volcano-config --bodies identifiers` points
// extender.batchPredicateVerb (app/commands/volcano_entry.py); serverFor checks the conf says so.
const neutralBatchPredicateVerb = "batchPredicate"

// startNeutral answers every verb with its neutral value once the body is read, without
// decoding it: jobReady true (ready), prioritize an empty score map (a null one is an error to
// Volcano), preemptable and reclaimable every evictee (echoed back undecoded: a plugin that
// protects nothing), every other answer the zero value of Volcano's response type (pass,
// abstain, not overused, no error). With a capture path, the last onSessionOpen body is written
// there when the server stops.
//
// With a namespace to hold (the job group's, heldNamespace), jobEnqueueable rejects that
// namespace's jobs, found by a byte search for the job's "Namespace" field in the body (Go's
// encoding writes it without spaces), never decoded: the decision in-tree's resourcequota makes
// for them every session. Without it the control would admit the jobs in-tree and Caldera hold,
// and Volcano would do less work through it than through them (no pending jobs to examine, no
// jobEnqueueable call, each cycle), so its cycle would not be the protocol's cost for the same
// decisions.
//
// With identifiers (neutral-names: the patched vc-scheduler, the identifiers conf), the same
// answers to the identifiers bodies, and what that protocol adds: GET /capabilities lists the
// identifiers bodies and the batched predicate, the batched predicate passes every node
// ({"failedNodes":{}}), preemptable and reclaimable answer every evictee's UID as a victim, and
// the held namespace's jobs are found by their job UID, "<namespace>/<podgroup>" (Volcano's job
// id), in the body's "job" field. Each body is read whole, to count the identifiers ones.
func startNeutral(t *testing.T, capture, hold string, identifiers bool) *neutralServer {
	answers := map[string]any{
		"onSessionOpen": extender.OnSessionOpenResponse{}, "onSessionClose": extender.OnSessionCloseResponse{},
		"predicate": extender.PredicateResponse{}, "prioritize": extender.PrioritizeResponse{NodeScore: map[string]float64{}},
		"jobEnqueueable": extender.JobEnqueueableResponse{}, "queueOverused": extender.QueueOverusedResponse{},
		"jobReady": extender.JobReadyResponse{Status: true},
		"allocate": extender.EventHandlerResponse{}, "deallocate": extender.EventHandlerResponse{},
	}
	encoded := map[string][]byte{}
	for verb, v := range answers {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		encoded[verb] = b
	}
	held := []byte(`"Namespace":"` + hold + `"`)
	rejected, err := json.Marshal(extender.JobEnqueueableResponse{Status: -1}) // util.Reject
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ns := &neutralServer{url: "http://" + l.Addr().String(), hold: hold}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := strings.Trim(r.URL.Path, "/")
		if verb == "preemptable" || verb == "reclaimable" {
			// Every evictee a victim (Permit), as a plugin that protects nothing: the evictees
			// are echoed back as they came, not decoded.
			var req struct {
				Evictees json.RawMessage `json:"evictees"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Evictees) == 0 {
				req.Evictees = json.RawMessage("[]")
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"status":1,"victims":%s}`, req.Evictees)
			return
		}
		if verb == "jobEnqueueable" && hold != "" {
			body, _ := io.ReadAll(r.Body)
			answer := encoded[verb]
			if bytes.Contains(body, held) {
				answer = rejected
				ns.rejected.Add(1)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
		var n int64
		if verb == "onSessionOpen" && capture != "" {
			body, _ := io.ReadAll(r.Body)
			n = int64(len(body))
			ns.last.Store(&body)
		} else {
			n, _ = io.Copy(io.Discard, r.Body)
		}
		if verb == "onSessionOpen" {
			ns.bytes.Add(n)
			ns.opens.Add(1)
		}
		answer, ok := encoded[verb]
		if !ok {
			http.Error(w, "unknown verb", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	if identifiers {
		ns.identifiers = &neutralIdentifiers{verbs: map[string]int{}}
		handler = ns.identifiersHandler(t, encoded, rejected)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if body := ns.last.Load(); capture != "" && body != nil {
			if err := os.MkdirAll(filepath.Dir(capture), 0o755); err != nil {
				t.Errorf("capture: %v", err)
			} else if err := os.WriteFile(capture, *body, 0o644); err != nil {
				t.Errorf("capture: %v", err)
			} else {
				t.Logf("captured the last onSessionOpen body (%d bytes) in %s", len(*body), capture)
			}
		}
	})
	return ns
}

// identifiersHandler answers the identifiers protocol neutrally (startNeutral): encoded holds
// the answers shared with objects mode (the response types are the same), rejected the held
// job's jobEnqueueable answer.
func (ns *neutralServer) identifiersHandler(t *testing.T, encoded map[string][]byte, rejected []byte) http.HandlerFunc {
	// The patched plugin's types (protocol/volcano-identifiers/patched/argument.go), which the
	// stock v1.14.1 module this harness builds against does not have.
	capabilities, err := json.Marshal(struct {
		Bodies         []string `json:"bodies"`
		BatchPredicate bool     `json:"batchPredicate"`
	}{Bodies: []string{identifiersBodies}, BatchPredicate: true})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := json.Marshal(struct {
		FailedNodes map[string]struct{} `json:"failedNodes"`
	}{FailedNodes: map[string]struct{}{}})
	if err != nil {
		t.Fatal(err)
	}
	session := []byte(`{"session":`)
	held := []byte(`"job":"` + ns.hold + `/`)
	counts := ns.identifiers
	return func(w http.ResponseWriter, r *http.Request) {
		verb := strings.Trim(r.URL.Path, "/")
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && verb == "capabilities" {
			counts.capabilities.Add(1)
			_, _ = w.Write(capabilities)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.HasPrefix(body, session) {
			counts.calls.Add(1)
		}
		counts.mu.Lock()
		counts.verbs[verb]++
		counts.mu.Unlock()
		var answer []byte
		switch verb {
		case neutralBatchPredicateVerb:
			answer = batch
		case "preemptable", "reclaimable":
			// Every evictee a victim (Permit), as a plugin that protects nothing: the victims
			// are the evictees' UIDs.
			var req struct {
				Evictees []struct {
					UID string `json:"uid"`
				} `json:"evictees"`
			}
			_ = json.Unmarshal(body, &req)
			victims := make([]string, 0, len(req.Evictees))
			for _, evictee := range req.Evictees {
				victims = append(victims, evictee.UID)
			}
			answer, _ = json.Marshal(struct {
				Status  int      `json:"status"`
				Victims []string `json:"victims"`
			}{Status: 1, Victims: victims}) // util.Permit
		case "jobEnqueueable":
			answer = encoded[verb]
			if ns.hold != "" && bytes.Contains(body, held) {
				answer = rejected
				ns.rejected.Add(1)
			}
		default:
			var ok bool
			if answer, ok = encoded[verb]; !ok {
				http.Error(w, "unknown verb", http.StatusNotFound)
				return
			}
		}
		if verb == "onSessionOpen" {
			ns.bytes.Add(int64(len(body)))
			ns.opens.Add(1)
		}
		counts.answered.Add(1)
		_, _ = w.Write(answer)
	}
}

// identifiersCounts: the identifiers calls the neutral server answered and every POST it
// answered 200 (scale_identifiers_test.go's identifiersFigures compares them), and its calls
// per verb; an error when it was not asked its capabilities.
func (ns *neutralServer) identifiersCounts() (calls, answered int, verbs map[string]int, err error) {
	counts := ns.identifiers
	counts.mu.Lock()
	verbs = maps.Clone(counts.verbs)
	counts.mu.Unlock()
	if counts.capabilities.Load() == 0 {
		err = fmt.Errorf("vc-scheduler never asked the neutral server's capabilities")
	}
	return int(counts.calls.Load()), int(counts.answered.Load()), verbs, err
}

func (ns *neutralServer) snapshotBytes() float64 {
	if n := ns.opens.Load(); n > 0 {
		return float64(ns.bytes.Load()) / float64(n)
	}
	return 0
}
