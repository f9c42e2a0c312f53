package e2e

// compare-churn (issue 36): compare mode while pods bind and finish. A fixed workload — waves of
// 4-pod jobs, each pod marked Succeeded a few seconds after it runs and each finished job deleted —
// runs while Caldera compares every session's snapshot with the state it derives from the
// cluster. Differences are expected here (Volcano's snapshot and Caldera's freeze are instants
// apart while objects change), but each must be one compare mode classifies as in flight: one of
// the objects it derives from was seen at another version by each side, or by one side only
// (app/cluster_state/compare.py). A difference not in flight fails the scenario with the
// difference marker; at quiescence afterwards none at all (CheckSessionStateAtQuiescence).
//
// With CALDERA_E2E_CHURN_OUT set the figures are written there as JSON: `python -m bench
// compare-churn` (bench/compare_churn.py) commits them to bench/results/compare-churn.json and
// bench/README's section on compare mode under churn.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const churnOutEnv = "CALDERA_E2E_CHURN_OUT"

// The fixed workload.
const (
	churnWaves       = 40
	churnPodsPerJob  = 4
	churnWaveEvery   = 500 * time.Millisecond
	churnRunFor      = 2 * time.Second // Running, then Succeeded
	churnKeepDoneFor = 1 * time.Second // a finished job's pods and PodGroup, then deleted
)

const churnConfig = `volcanoVersion: "1.14"
tiers:
- plugins:
  - name: priority
  - name: conformance
- plugins:
  - name: resource-strategy-fit
    arguments:
      resources:
        cpu: {type: MostAllocated, weight: 1}
`

// churnKind is one kind's figures over the churn window.
type churnKind struct {
	Differences float64 `json:"differences"`
	InFlight    float64 `json:"inFlight"`
	Sessions    int     `json:"sessions"` // sessions whose comparison found this kind
}

// churnResult is what CALDERA_E2E_CHURN_OUT receives.
type churnResult struct {
	Workload struct {
		Nodes            int     `json:"nodes"`
		Waves            int     `json:"waves"`
		PodsPerJob       int     `json:"podsPerJob"`
		WaveEverySeconds float64 `json:"waveEverySeconds"`
		RunSeconds       float64 `json:"runSeconds"`
		KeepSeconds      float64 `json:"keepSeconds"`
	} `json:"workload"`
	Seconds                 float64              `json:"seconds"`
	Pods                    int                  `json:"pods"`
	Sessions                map[string]float64   `json:"sessions"` // by outcome: compared, busy, not_synced
	SessionsWithDifferences int                  `json:"sessionsWithDifferences"`
	Kinds                   map[string]churnKind `json:"kinds"`
}

func testCompareChurn(t *testing.T, c *Cluster) {
	if scenarioSessionState() != "compare" {
		t.Skipf("%s=%s: compare mode is off", sessionStateEnv, scenarioSessionState())
	}
	nodes := []NodeSpec{
		{Name: "churn-a", CPU: "8", Memory: "32Gi"},
		{Name: "churn-b", CPU: "8", Memory: "32Gi"},
		{Name: "churn-c", CPU: "8", Memory: "32Gi"},
	}
	s := c.NewScenario(t, "compare-churn", churnConfig, "enqueue, allocate, backfill", false, nodes...)
	cal := s.Caldera
	// The window starts at the first comparison: before it the watch was still listing.
	if err := waitFor(60*time.Second, func() (bool, error) {
		return cal.metric(t, "caldera_session_state_sessions_total", `outcome="compared"`) >= 1, nil
	}); err != nil {
		t.Fatalf("no session compared: %v", err)
	}
	before := cal.differencesByKind(t)
	inFlightBefore := cal.inFlightByKind(t)
	firstSession := cal.lastComparedSession(t)
	started := time.Now()

	ctx := context.Background()
	created := map[string]time.Time{}
	finished := map[string]time.Time{} // job -> when its last pod was marked Succeeded
	deleted := map[string]bool{}
	next := 0
	deadline := started.Add(3 * time.Minute)
	for len(deleted) < churnWaves {
		if time.Now().After(deadline) {
			t.Fatalf("churn did not finish in 3 min: %d of %d jobs created, %d finished, %d deleted",
				next, churnWaves, len(finished), len(deleted))
		}
		if next < churnWaves && time.Since(started) >= time.Duration(next)*churnWaveEvery {
			name := fmt.Sprintf("churn-%02d", next)
			s.CreateJob(t, JobSpec{Name: name, Pods: churnPodsPerJob, Request: Res("1", "1Gi")})
			created[name] = time.Now()
			next++
		}
		pods, err := c.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := map[string]int{}
		done := map[string]int{}
		for i := range pods.Items {
			p := &pods.Items[i]
			job := p.Labels["job"]
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil &&
				time.Since(p.Status.StartTime.Time) >= churnRunFor:
				p.Status.Phase = corev1.PodSucceeded
				if _, err := c.Kube.CoreV1().Pods(s.NS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil &&
					!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
					t.Fatalf("pod %s: %v", p.Name, err)
				}
				running[job]++
			case p.Status.Phase == corev1.PodSucceeded:
				done[job]++
			default:
				running[job]++
			}
		}
		for job := range created {
			if _, ok := finished[job]; !ok && done[job] == churnPodsPerJob {
				finished[job] = time.Now()
			}
			if at, ok := finished[job]; ok && !deleted[job] && time.Since(at) >= churnKeepDoneFor {
				// As a job controller cleans up: the pods (the fake kubelet removes them once
				// deleting), then the PodGroup.
				if err := c.Kube.CoreV1().Pods(s.NS).DeleteCollection(ctx, metav1.DeleteOptions{},
					metav1.ListOptions{LabelSelector: "job=" + job}); err != nil {
					t.Fatal(err)
				}
				if err := c.VC.SchedulingV1beta1().PodGroups(s.NS).Delete(ctx, job, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				deleted[job] = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The window ends once the last pod is gone from the API server.
	if err := waitFor(60*time.Second, func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(s.NS).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	}); err != nil {
		t.Fatalf("the churn's pods are not gone: %v", err)
	}
	seconds := time.Since(started).Seconds()
	after := cal.differencesByKind(t)
	inFlightAfter := cal.inFlightByKind(t)
	lastSession := cal.lastComparedSession(t)

	result := churnResult{Seconds: seconds, Pods: churnWaves * churnPodsPerJob,
		Sessions: map[string]float64{}, Kinds: map[string]churnKind{}}
	result.Workload.Nodes, result.Workload.Waves, result.Workload.PodsPerJob = len(nodes), churnWaves, churnPodsPerJob
	result.Workload.WaveEverySeconds = churnWaveEvery.Seconds()
	result.Workload.RunSeconds, result.Workload.KeepSeconds = churnRunFor.Seconds(), churnKeepDoneFor.Seconds()
	for key, v := range after {
		if outcome, ok := strings.CutPrefix(key, "sessions:"); ok {
			result.Sessions[outcome] = v - before[key]
			continue
		}
		if d := v - before[key]; d > 0 {
			result.Kinds[key] = churnKind{Differences: d, InFlight: inFlightAfter[key] - inFlightBefore[key]}
		}
	}
	perSession := cal.kindsPerSession(t, firstSession, lastSession)
	for _, kinds := range perSession {
		for kind := range kinds {
			k := result.Kinds[kind]
			k.Sessions++
			result.Kinds[kind] = k
		}
		if len(kinds) > 0 {
			result.SessionsWithDifferences++
		}
	}
	summary, _ := json.MarshalIndent(result, "", "  ")
	t.Logf("compare mode under churn (sessions %d..%d):\n%s", firstSession+1, lastSession, summary)
	if out := os.Getenv(churnOutEnv); out != "" {
		if err := os.WriteFile(out, append(summary, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if result.Sessions["compared"] < 5 {
		t.Errorf("only %v sessions compared during the churn (%v)", result.Sessions["compared"], result.Sessions)
	}
	kinds := make([]string, 0, len(result.Kinds))
	for kind := range result.Kinds {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		if k := result.Kinds[kind]; k.InFlight != k.Differences {
			s.stateDiffers(t, "%v of %v difference(s) of kind %s during the churn are not in flight (the"+
				" objects they derive from were at the same version on both sides):%s", k.Differences-k.InFlight,
				k.Differences, kind, cal.differenceLines(20))
		}
	}
}

// inFlightByKind is caldera_session_state_differences_in_flight_total per kind.
func (cal *Caldera) inFlightByKind(t testing.TB) map[string]float64 {
	t.Helper()
	samples, err := scrape(cal.URL + "/metrics")
	if err != nil {
		t.Fatalf("caldera /metrics: %v", err)
	}
	out := map[string]float64{}
	for key, v := range samples {
		if rest, ok := strings.CutPrefix(key, "caldera_session_state_differences_in_flight_total{"); ok {
			_, value, _ := strings.Cut(rest, `kind="`)
			value, _, _ = strings.Cut(value, `"`)
			out[value] += v
		}
	}
	return out
}

func (cal *Caldera) lastComparedSession(t testing.TB) int {
	t.Helper()
	view, err := cal.sessionState()
	if err != nil || view.SessionState == nil {
		t.Fatalf("/debug/session: %v %+v", err, view)
	}
	if view.SessionState.Last == nil {
		return 0
	}
	return view.SessionState.Last.Session
}

var differenceLine = regexp.MustCompile(`session (\d+): (\d+) difference\(s\) of kind (\S+) `)

// kindsPerSession reads Caldera's log lines (one per kind and session) for the sessions after
// first up to last: session -> kinds found.
func (cal *Caldera) kindsPerSession(t testing.TB, first, last int) map[int]map[string]bool {
	t.Helper()
	text, err := os.ReadFile(cal.proc.log)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]map[string]bool{}
	for _, m := range differenceLine.FindAllStringSubmatch(string(text), -1) {
		session, _ := strconv.Atoi(m[1])
		if session <= first || session > last {
			continue
		}
		if out[session] == nil {
			out[session] = map[string]bool{}
		}
		out[session][m[3]] = true
	}
	return out
}
