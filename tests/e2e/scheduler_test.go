package e2e

// Per scenario: Caldera (`caldera serve`) with the scenario's configuration, and vc-scheduler with
// a volcano-scheduler.conf whose extender entry is what `caldera volcano-config` prints for that
// same configuration, spliced in verbatim.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	vcsched "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// calderaBin is the console script of the repository's uv environment (or CALDERA_BIN).
func calderaBin(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("CALDERA_BIN"); b != "" {
		return b
	}
	b, err := filepath.Abs(filepath.Join(e2eDir(), "..", "..", ".venv", "bin", "caldera"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("caldera console script not found at %s (run `uv sync --all-groups` or set CALDERA_BIN): %v", b, err)
	}
	return b
}

// Caldera is one `caldera serve` process.
type Caldera struct {
	URL       string
	HealthURL string // the health listener: /healthz, /readyz, /metrics only
	Config    string
	Args      []string // more `caldera serve` arguments (a scenario's --shadow FILE)
	port      int
	health    int
	container string   // the docker container's name when Caldera runs from CALDERA_E2E_IMAGE
	env       []string // KEY=VALUE added to the environment of serve (inside the container too)
	proc      *proc
	c         *Cluster
	name      string
	n         int
}

// EmbeddedConfig as a scenario's Caldera configuration runs `caldera serve` with no --config:
// the embedded default configuration an operator following the README gets.
const EmbeddedConfig = ""

// calderaCommand is `caldera ARGS` on this machine with env (KEY=VALUE) added to its environment.
func calderaCommand(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(calderaBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// writeCalderaConfig writes a Caldera configuration; {{KUBECONFIG}} becomes the cluster's
// kubeconfig. It is checked with `caldera check-config`, run with env (KEY=VALUE: a PYTHONPATH
// for plugins installed beside Caldera) added to its environment.
func (c *Cluster) writeCalderaConfig(t testing.TB, name, config string, env ...string) string {
	t.Helper()
	if config == EmbeddedConfig {
		return EmbeddedConfig
	}
	path := filepath.Join(c.Dir, name+"-caldera.yaml")
	config = strings.ReplaceAll(config, "{{KUBECONFIG}}", c.Kubeconfig)
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := calderaCommand(t, env, "check-config", path).CombinedOutput()
	if err != nil {
		t.Fatalf("caldera check-config %s: %v\n%s", path, err, out)
	}
	return path
}

// StartCaldera runs `caldera serve --config FILE --host 127.0.0.1 --port P ARGS...` and waits for
// /readyz.
func (c *Cluster) StartCaldera(t testing.TB, name, configPath string, args ...string) *Caldera {
	return c.startCaldera(t, name, configPath, nil, args...)
}

// startCaldera is StartCaldera with env (KEY=VALUE) added to the environment it serves with, in a
// container too.
func (c *Cluster) startCaldera(t testing.TB, name, configPath string, env []string, args ...string) *Caldera {
	t.Helper()
	port, health := freePort(t), freePort(t)
	cal := &Caldera{
		URL: fmt.Sprintf("http://127.0.0.1:%d", port), HealthURL: fmt.Sprintf("http://127.0.0.1:%d", health),
		Config: configPath, Args: args, port: port, health: health, c: c, name: name, env: env,
	}
	cal.Start(t)
	return cal
}

// Start (re)starts the process on the same port and waits for /readyz on both listeners.
func (cal *Caldera) Start(t testing.TB) {
	t.Helper()
	cal.launch(t)
	cal.waitReady(t)
}

// launch starts the process on the same ports, without waiting for anything.
func (cal *Caldera) launch(t testing.TB) {
	t.Helper()
	cal.n++
	args := append([]string{"serve"}, cal.configArgs()...)
	args = append(args, "--host", "127.0.0.1", "--port", fmt.Sprint(cal.port),
		"--health-host", "127.0.0.1", "--health-port", fmt.Sprint(cal.health))
	args = append(args, cal.Args...)
	bin := calderaBin(t)
	if image := os.Getenv("CALDERA_E2E_IMAGE"); image != "" {
		bin, args = cal.inContainer(t, image, args)
	}
	cal.proc = cal.c.start(t, fmt.Sprintf("%s-caldera-%d", cal.name, cal.n),
		append([]string{"CALDERA_LOG_FORMAT=text"}, cal.env...), bin, args...)
}

// waitReady waits for /readyz 200 on both listeners.
func (cal *Caldera) waitReady(t testing.TB) {
	t.Helper()
	if err := waitFor(60*time.Second, func() (bool, error) {
		if !cal.proc.running() {
			return false, fmt.Errorf("caldera exited")
		}
		// Both listeners: the health one serves /readyz while the verbs' lifespan still starts
		// (longer with sessionState compare's watches), before the verb port is bound.
		for _, base := range []string{cal.HealthURL, cal.URL} {
			r, err := http.Get(base + "/readyz")
			if err != nil {
				return false, err
			}
			r.Body.Close()
			if r.StatusCode != 200 {
				return false, fmt.Errorf("%s/readyz %d", base, r.StatusCode)
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("caldera: %v\n%s", err, tail(cal.proc.log, 30))
	}
}

// inContainer runs `caldera serve ARGS` from the image as the manifests do (user 10001, a
// read-only root filesystem, no capabilities), on the host's network so it listens on the same
// 127.0.0.1 ports, with the cluster directory mounted read-only at its own path (the config
// file, and the kubeconfig and CA pdb reads). `docker run` forwards SIGTERM to the container;
// a kill goes through `docker kill` (Kill), since killing the client leaves the container.
// The Caldera's env is set in the container: a PYTHONPATH naming a site directory under the
// cluster directory (installPlugins) reaches the same files there through that mount.
func (cal *Caldera) inContainer(t testing.TB, image string, args []string) (string, []string) {
	t.Helper()
	for path, mode := range map[string]os.FileMode{cal.c.Dir: 0o755, cal.c.Kubeconfig: 0o644, cal.c.CAFile: 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatalf("image mode: %v", err)
		}
	}
	cal.container = fmt.Sprintf("caldera-e2e-%s-%d-%d", cal.name, os.Getpid(), cal.n)
	name := cal.container
	if cal.n == 1 {
		// Once per Caldera, removing whichever container is its latest: registered at the first
		// start, it runs after the cleanups its scenario registered later (the quiescence check
		// of compare mode reads /debug/session), where one registered at a restart would run
		// first and remove the container under that check.
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", cal.container).Run() })
	}
	run := []string{"run", "--rm", "--name", name, "--network", "host",
		"--read-only", "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"-e", "CALDERA_LOG_FORMAT=text", "-v", cal.c.Dir + ":" + cal.c.Dir + ":ro"}
	for _, kv := range cal.env {
		run = append(run, "-e", kv)
	}
	return "docker", append(append(run, image), args...)
}

// Kill ends Caldera at once, with no drain (SIGKILL, or `docker kill` for a container).
func (cal *Caldera) Kill() {
	if cal.container != "" {
		_ = exec.Command("docker", "kill", cal.container).Run()
	} else {
		_ = cal.proc.cmd.Process.Kill()
	}
	<-cal.proc.done
}

// configArgs is `--config FILE`, or nothing for the embedded default configuration.
func (cal *Caldera) configArgs() []string {
	if cal.Config == EmbeddedConfig {
		return nil
	}
	return []string{"--config", cal.Config}
}

// Stop stops the process (SIGTERM: Caldera drains and exits).
func (cal *Caldera) Stop() { cal.proc.stop() }

// VolcanoConfig runs `caldera volcano-config` for the Caldera's configuration and the URL the
// scheduler is to call (Caldera's own, or a proxy's in front of it).
func (cal *Caldera) VolcanoConfig(t testing.TB, url string, ignorable bool) string {
	t.Helper()
	return cal.volcanoConfig(t, url, ignorable, "")
}

// volcanoConfig is VolcanoConfig with `--bodies BODIES` when bodies is not "" (identifiers: the
// entry for vc-scheduler built with protocol/volcano-identifiers's patch).
func (cal *Caldera) volcanoConfig(t testing.TB, url string, ignorable bool, bodies string) string {
	t.Helper()
	args := append(append([]string{"volcano-config"}, cal.configArgs()...), "--url", url, "--http-timeout", "1s")
	if ignorable {
		args = append(args, "--ignorable")
	}
	if bodies != "" {
		args = append(args, "--bodies", bodies)
	}
	out, err := calderaCommand(t, cal.env, args...).Output()
	if err != nil {
		t.Fatalf("caldera %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// SchedulerConf is a volcano-scheduler.conf: the actions, Volcano's in-tree plugins that Caldera
// does not host (job order, gang, predicates), and the extender entry printed by Caldera,
// spliced into the first tier as printed (indented to sit in the tier's plugin list).
func SchedulerConf(actions, extenderEntry string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\n", actions)
	b.WriteString("tiers:\n- plugins:\n")
	b.WriteString("  - name: priority\n    enablePreemptable: false\n    enableReclaimable: false\n")
	b.WriteString("  - name: gang\n    enablePreemptable: false\n    enableReclaimable: false\n")
	for _, line := range strings.Split(strings.TrimRight(extenderEntry, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	b.WriteString("- plugins:\n  - name: predicates\n")
	return b.String()
}

// StartScheduler runs vc-scheduler with the given configuration against the cluster; extra
// flags come last (pflag keeps a repeated flag's last value).
func (c *Cluster) StartScheduler(t testing.TB, name, conf string, extra ...string) *proc {
	t.Helper()
	return c.startScheduler(t, name, conf, "vc-scheduler", extra...)
}

// startScheduler is StartScheduler with the binary of BinDir it runs (vc-scheduler, or
// vc-scheduler-identifiers: identifiers_mode_test.go).
func (c *Cluster) startScheduler(t testing.TB, name, conf, binary string, extra ...string) *proc {
	t.Helper()
	path := filepath.Join(c.Dir, name+"-volcano-scheduler.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--kubeconfig", c.Kubeconfig,
		"--scheduler-conf", path,
		"--leader-elect=false",
		"--schedule-period", "1s",
		"--listen-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--healthz-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--cache-dumper=false",
		"-v", "3",
	}
	p := c.start(t, name+"-vc-scheduler", nil, filepath.Join(c.BinDir, binary), append(args, extra...)...)
	time.Sleep(500 * time.Millisecond)
	if !p.running() {
		t.Fatalf("vc-scheduler exited:\n%s", tail(p.log, 30))
	}
	return p
}

// Scenario is one namespace, its nodes, a Caldera and a vc-scheduler; all removed at the end.
type Scenario struct {
	C         *Cluster
	NS        string
	Caldera   *Caldera
	Scheduler *proc
	Proxy     *FaultyProxy // between vc-scheduler and Caldera; forwards everything until told
	nodes     []string
	// bodies: identifiers when vc-scheduler is the patched one calling with identifiers
	// (cluster_mode_test.go, mode "identifiers"); "" otherwise.
	bodies string
	// derivedWrongOnPurpose: the scenario makes Caldera's derived state wrong to see the
	// self-audit catch it (stale-view-miscounted), so the end's self-audit check is left out.
	derivedWrongOnPurpose bool
}

// NewScenario creates the namespace and nodes, starts Caldera with config and vc-scheduler with
// Caldera's printed extender entry. The test's cleanup stops both and deletes what it created.
func (c *Cluster) NewScenario(t *testing.T, name, calderaConfig, actions string, ignorable bool, nodes ...NodeSpec) *Scenario {
	return c.newScenario(t, name, calderaConfig, actions, scenarioOptions{ignorable: ignorable}, nodes...)
}

// NewScenarioWithProxy is NewScenario with a FaultyProxy between vc-scheduler and Caldera.
func (c *Cluster) NewScenarioWithProxy(t *testing.T, name, calderaConfig, actions string, ignorable bool, nodes ...NodeSpec) *Scenario {
	return c.newScenario(t, name, calderaConfig, actions, scenarioOptions{ignorable: ignorable, viaProxy: true}, nodes...)
}

// NewScenarioWithEnv is NewScenario with env (KEY=VALUE) added to the environment of every
// caldera command of the scenario: check-config, serve (in its container too) and
// volcano-config. installPlugins gives the PYTHONPATH of plugins installed beside Caldera.
func (c *Cluster) NewScenarioWithEnv(t *testing.T, name, calderaConfig, actions string, ignorable bool, env []string, nodes ...NodeSpec) *Scenario {
	return c.newScenario(t, name, calderaConfig, actions, scenarioOptions{ignorable: ignorable, env: env}, nodes...)
}

type scenarioOptions struct {
	ignorable bool     // the extender entry's extender.ignorable
	viaProxy  bool     // a FaultyProxy between vc-scheduler and Caldera
	env       []string // added to the environment of the scenario's caldera commands
	args      []string // more `caldera serve` arguments (a scenario's --shadow FILE)
	// more vc-scheduler flags (the sharded scenario's --scheduler-sharding-mode)
	schedulerArgs []string
	// identifiers: vc-scheduler-identifiers (protocol/volcano-identifiers's patch) with the
	// entry of `caldera volcano-config --bodies identifiers` (cluster_mode_test.go)
	bodies string
}

func (c *Cluster) newScenario(t *testing.T, name, calderaConfig, actions string, opts scenarioOptions, nodes ...NodeSpec) *Scenario {
	t.Helper()
	ctx := context.Background()
	s := &Scenario{C: c, NS: name, bodies: opts.bodies}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		s.nodes = append(s.nodes, n.Name)
	}
	t.Cleanup(func() { s.cleanup(t) })
	c.CreateNodes(t, nodes...)
	cfg := c.writeCalderaConfig(t, name, withScenarioSessionState(t, calderaConfig), opts.env...)
	s.Caldera = c.startCaldera(t, name, cfg, opts.env, opts.args...)
	target := s.Caldera.URL
	if opts.viaProxy {
		s.Proxy = StartFaultyProxy(t, s.Caldera.URL)
		target = s.Proxy.URL
	}
	if verb := mutatedVerb(); verb != "" {
		neutral := ""
		if verb == "predicate" {
			path := c.writeCalderaConfig(t, name+"-neutral", "volcanoVersion: \"1.14\"\ntiers: []\n")
			plain := c.StartCaldera(t, name+"-neutral", path)
			t.Cleanup(plain.Stop)
			neutral = plain.URL
		}
		target = startMutator(t, verb, target, neutral)
	}
	conf := SchedulerConf(actions, s.Caldera.volcanoConfig(t, target, opts.ignorable, opts.bodies))
	t.Logf("volcano-scheduler.conf:\n%s", conf)
	binary := "vc-scheduler"
	if opts.bodies == identifiersBodies {
		binary = identifiersScheduler
	}
	s.Scheduler = c.startScheduler(t, name, conf, binary, opts.schedulerArgs...)
	s.checkSessionStateAtEnd(t, calderaConfig)
	s.checkSelfAuditAtEnd(t)
	return s
}

func (s *Scenario) cleanup(t *testing.T) {
	if t.Failed() {
		for _, p := range []*proc{s.Scheduler} {
			if p != nil {
				t.Logf("%s log tail:\n%s", p.name, tail(p.log, 40))
			}
		}
		if s.Caldera != nil && s.Caldera.proc != nil {
			t.Logf("%s log tail:\n%s", s.Caldera.proc.name, tail(s.Caldera.proc.log, 40))
		}
	}
	if s.Scheduler != nil {
		s.Scheduler.stop()
	}
	if s.Caldera != nil && s.Caldera.proc != nil {
		s.Caldera.Stop()
	}
	ctx := context.Background()
	zero := int64(0)
	_ = s.C.Kube.CoreV1().Pods(s.NS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = s.C.VC.SchedulingV1beta1().PodGroups(s.NS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	for _, n := range s.nodes {
		_ = s.C.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}
}

// Res is a CPU/memory request.
func Res(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// JobSpec is a PodGroup and its pods (a "job" for Volcano without vc-controller-manager).
type JobSpec struct {
	Name           string
	Pods           int
	MinMember      int32
	Request        corev1.ResourceList
	PriorityClass  string
	Queue          string
	PodLabels      map[string]string
	PGAnnotations  map[string]string
	PodAnnotations map[string]string
	MinResources   corev1.ResourceList // default: Request × MinMember
	Node           string              // optional: a nodeSelector on kubernetes.io/hostname
}

// CreateJob creates the PodGroup, then its pods (named NAME-0 …) with schedulerName volcano.
func (s *Scenario) CreateJob(t testing.TB, j JobSpec) {
	t.Helper()
	if err := createJob(context.Background(), s.C.Kube, s.C.VC, s.NS, j); err != nil {
		t.Fatal(err)
	}
}

// createJob is CreateJob in any namespace, through any clients (the scale benchmark's bulk ones).
func createJob(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, ns string, j JobSpec) error {
	if j.MinMember == 0 {
		j.MinMember = int32(j.Pods)
	}
	if j.Queue == "" {
		j.Queue = "default"
	}
	min := j.MinResources
	if min == nil {
		min = corev1.ResourceList{}
		for k, v := range j.Request {
			q := v.DeepCopy()
			q.Mul(int64(j.MinMember))
			min[k] = q
		}
	}
	pg := &vcsched.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: ns, Annotations: j.PGAnnotations},
		Spec: vcsched.PodGroupSpec{
			MinMember: j.MinMember, Queue: j.Queue, MinResources: &min,
			PriorityClassName: j.PriorityClass,
		},
	}
	if _, err := vc.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("podgroup %s: %w", j.Name, err)
	}
	for i := 0; i < j.Pods; i++ {
		labels := map[string]string{"job": j.Name}
		for k, v := range j.PodLabels {
			labels[k] = v
		}
		annotations := map[string]string{vcsched.KubeGroupNameAnnotationKey: j.Name}
		for k, v := range j.PodAnnotations {
			annotations[k] = v
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", j.Name, i), Namespace: ns, Labels: labels,
				Annotations: annotations,
			},
			Spec: corev1.PodSpec{
				SchedulerName:     "volcano",
				PriorityClassName: j.PriorityClass,
				NodeSelector:      nodeSelector(j.Node),
				Containers: []corev1.Container{{
					Name: "main", Image: "registry.invalid/none:0",
					Resources: corev1.ResourceRequirements{Requests: j.Request, Limits: j.Request},
				}},
			},
		}
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// CreateBoundPod creates a pod already on a node (not Volcano's: it only occupies resources).
func (s *Scenario) CreateBoundPod(t testing.TB, name, node string, req corev1.ResourceList) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.NS},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.invalid/none:0",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: req},
			}},
		},
	}
	if _, err := s.C.Kube.CoreV1().Pods(s.NS).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
}

// Placement returns pod name → node name for the job's pods ("" when unbound).
func (s *Scenario) Placement(t testing.TB, job string) map[string]string {
	t.Helper()
	pods, err := s.C.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "job=" + job})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// WaitBound waits until the job's pods are all bound (and reported Running by the fake kubelet).
func (s *Scenario) WaitBound(t testing.TB, job string, n int, timeout time.Duration) map[string]string {
	t.Helper()
	got, err := s.tryBound(job, n, timeout)
	if err != nil {
		t.Fatalf("job %s: %v", job, err)
	}
	return got
}

// WaitAdmittedBound is WaitBound for a job whose admission is the scenario's decision: when its
// pods do not run in time and its PodGroup is still Pending, enqueue never admitted it, a wrong
// decision (Wrong), told apart from a slow cluster (any other phase: a plain failure).
func (s *Scenario) WaitAdmittedBound(t testing.TB, job string, n int, timeout time.Duration) map[string]string {
	t.Helper()
	got, err := s.tryBound(job, n, timeout)
	if err == nil {
		return got
	}
	if ph := s.PodGroupPhase(t, job); ph == vcsched.PodGroupPending {
		s.Wrong(t, "job %s was never admitted (PodGroup still Pending after %s): %v", job, timeout, err)
		t.FailNow()
	}
	t.Fatalf("job %s: %v", job, err)
	return nil
}

// Wrong fails the scenario for a decision that Caldera's answers decide (who is placed where,
// evicted, admitted), with the scenario's marker: the end-to-end mutations (mutations_test.go)
// count a broken verb as caught only by its scenario's marker, never by a timeout or a harness
// error.
func (s *Scenario) Wrong(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: "+format, append([]any{decisionMarker(s.NS)}, args...)...)
}

// decisionMarker is what Wrong prints for the scenario named scenario.
func decisionMarker(scenario string) string { return "WRONG DECISION (" + scenario + ")" }

func (s *Scenario) tryBound(job string, n int, timeout time.Duration) (map[string]string, error) {
	var got map[string]string
	err := waitFor(timeout, func() (bool, error) {
		pods, err := s.C.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "job=" + job})
		if err != nil {
			return false, err
		}
		got = map[string]string{}
		running := 0
		for _, p := range pods.Items {
			got[p.Name] = p.Spec.NodeName
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, fmt.Errorf("%d of %d running: %v", running, n, got)
	})
	return got, err
}

// PodGroupPhase reads a PodGroup's status phase.
func (s *Scenario) PodGroupPhase(t testing.TB, name string) vcsched.PodGroupPhase {
	t.Helper()
	pg, err := s.C.VC.SchedulingV1beta1().PodGroups(s.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Status.Phase
}

// EnsurePriorityClass creates a PriorityClass if missing.
func (c *Cluster) EnsurePriorityClass(t testing.TB, name string, value int32) {
	t.Helper()
	_, err := c.Kube.SchedulingV1().PriorityClasses().Create(context.Background(), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// Answered returns how many calls of a verb Caldera answered with 200, from its /metrics.
func (cal *Caldera) Answered(t testing.TB, verb string) float64 {
	t.Helper()
	return cal.metric(t, "caldera_responses_total", `verb="`+verb+`"`, `code="200"`)
}

// Decisions returns how often a hosted plugin answered a verb with an outcome ("fail",
// "pass", "victims", ...), from caldera_plugin_decisions_total.
func (cal *Caldera) Decisions(t testing.TB, plugin, verb, outcome string) float64 {
	t.Helper()
	return cal.metric(t, "caldera_plugin_decisions_total", `plugin="`+plugin+`"`, `verb="`+verb+`"`, `outcome="`+outcome+`"`)
}

// Explain runs `caldera explain KEY --url URL ARGS...` against this Caldera's verb listener, as
// an operator would (inside the container when Caldera runs from CALDERA_E2E_IMAGE), and returns
// its standard output, its standard error and its exit code.
func (cal *Caldera) Explain(t testing.TB, key string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return cal.CLI(t, append([]string{"explain", key, "--url", cal.URL}, args...)...)
}

// CLI runs `caldera ARGS...` as an operator would: inside the serving container when Caldera
// runs from CALDERA_E2E_IMAGE, else the repository's console script.
func (cal *Caldera) CLI(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, argv := calderaBin(t), args
	if cal.container != "" {
		// From the image: the image's own CLI, run inside the serving container as an operator
		// runs `kubectl exec ... -c caldera -- caldera explain` (issue 34: it crashed there).
		bin, argv = "docker", append([]string{"exec", cal.container, "caldera"}, argv...)
	}
	cmd := exec.Command(bin, argv...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("caldera %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// CheckListeners checks what the shipped sidecar relies on: the probes and the scrape answered
// on the health listener, which refuses the verbs and /debug, while vc-scheduler is served on
// the verb listener.
func (cal *Caldera) CheckListeners(t testing.TB) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := http.Get(cal.HealthURL + path)
		if err != nil {
			t.Fatalf("health listener %s: %v", path, err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("health listener %s: %d", path, r.StatusCode)
		}
	}
	r, err := http.Post(cal.HealthURL+"/onSessionOpen", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("health listener POST /onSessionOpen: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != 404 {
		t.Errorf("health listener answered a verb: %d, want 404", r.StatusCode)
	}
	r, err = http.Get(cal.HealthURL + "/debug/session")
	if err != nil {
		t.Fatalf("health listener /debug/session: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != 404 {
		t.Errorf("health listener served /debug/session: %d, want 404", r.StatusCode)
	}
	if n := cal.Answered(t, "onSessionOpen"); n < 1 {
		t.Errorf("the verb listener answered no onSessionOpen")
	}
}

// Readyz is Caldera's /readyz answer (whatever its status code).
func (cal *Caldera) Readyz(t testing.TB) map[string]any {
	t.Helper()
	r, err := http.Get(cal.URL + "/readyz")
	if err != nil {
		t.Fatalf("caldera /readyz: %v", err)
	}
	defer r.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		t.Fatalf("caldera /readyz: %v", err)
	}
	return body
}

// metric sums the samples of a counter whose labels contain every one of labels.
func (cal *Caldera) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	samples, err := scrape(cal.URL + "/metrics")
	if err != nil {
		t.Fatalf("caldera /metrics: %v", err)
	}
	total := 0.0
	for key, v := range samples {
		if !strings.HasPrefix(key, name+"{") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(key, l)
		}
		if matches {
			total += v
		}
	}
	return total
}

// scrape reads a Prometheus text page into "name{labels}" -> value (labels as printed).
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// WaitPodGroupPhase waits for a PodGroup phase.
func (s *Scenario) WaitPodGroupPhase(t testing.TB, name string, want vcsched.PodGroupPhase, timeout time.Duration) {
	t.Helper()
	var got vcsched.PodGroupPhase
	if err := waitFor(timeout, func() (bool, error) {
		got = s.PodGroupPhase(t, name)
		return got == want, nil
	}); err != nil {
		t.Fatalf("PodGroup %s phase %q, want %q: %v", name, got, want, err)
	}
}

// EventReasons returns the reasons of the events recorded for an object of the scenario's
// namespace (core/v1 events, as Volcano's recorder writes them).
func (s *Scenario) EventReasons(t testing.TB, kind, name string) map[string]bool {
	t.Helper()
	evs, err := s.C.Kube.CoreV1().Events(s.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out[e.Reason] = true
		}
	}
	return out
}

// podGroupEvents: the events on PodGroup NAME of the scenario's namespace, by reason (the latest
// of each).
func (s *Scenario) podGroupEvents(t testing.TB, name string) map[string]*corev1.Event {
	t.Helper()
	evs, err := s.C.Kube.CoreV1().Events(s.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Event{}
	for i, e := range evs.Items {
		if e.InvolvedObject.Kind == "PodGroup" && e.InvolvedObject.Name == name {
			out[e.Reason] = &evs.Items[i]
		}
	}
	return out
}

func nodeSelector(node string) map[string]string {
	if node == "" {
		return nil
	}
	return map[string]string{"kubernetes.io/hostname": node}
}

// FaultyProxy sits between vc-scheduler and Caldera on loopback: it forwards every call, except
// that it answers 503 to the verbs it is told to fail. It stands for a Caldera that answered
// onSessionOpen and then fails (a timeout, a 5xx), the case extender.ignorable is about.
// It also records every call it forwards (Calls): what the identifiers mode checks was on the
// wire.
type FaultyProxy struct {
	URL   string
	mu    sync.Mutex
	fail  map[string]bool
	calls map[string]*ProxiedCalls
	srv   *http.Server
}

// ProxiedCalls counts the calls of one "METHOD /path" the proxy forwarded: how many, how many
// of their bodies were identifiers-mode ones (a JSON object with a "session" key,
// docs/proposals/extender-identifiers.md), and how many were answered other than 200 (by
// status code; 0 when the proxy itself failed to reach Caldera).
type ProxiedCalls struct {
	Calls       int
	Identifiers int
	NotOK       map[int]int
}

// Calls is a copy of what the proxy forwarded so far, by "METHOD /path".
func (fp *FaultyProxy) Calls() map[string]ProxiedCalls {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	out := map[string]ProxiedCalls{}
	for k, v := range fp.calls {
		c := *v
		c.NotOK = map[int]int{}
		for code, n := range v.NotOK {
			c.NotOK[code] = n
		}
		out[k] = c
	}
	return out
}

// statusRecorder keeps the status code a handler writes.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (the reverse proxy's flushes) reach the writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// StartFaultyProxy starts a proxy to target; it is closed when the test ends.
func StartFaultyProxy(t testing.TB, target string) *FaultyProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp := &FaultyProxy{URL: "http://" + l.Addr().String(), fail: map[string]bool{}, calls: map[string]*ProxiedCalls{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Caldera stopped: answer 502 without logging each call. For vc-scheduler this is the same
	// failed send as a refused connection (its extender only looks at err != nil).
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	fp.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := strings.Trim(r.URL.Path, "/")
		fp.mu.Lock()
		fail := fp.fail[verb]
		fp.mu.Unlock()
		identifiers := false
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() { fp.record(r.Method+" "+r.URL.Path, identifiers, rec.code) }()
		if fail {
			http.Error(rec, "injected failure", http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rec, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) == nil {
			_, identifiers = fields["session"]
		}
		rp.ServeHTTP(rec, r)
	})}
	go func() { _ = fp.srv.Serve(l) }()
	t.Cleanup(func() { _ = fp.srv.Close() })
	return fp
}

// record counts one call of key ("METHOD /path") answered code.
func (fp *FaultyProxy) record(key string, identifiers bool, code int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	calls := fp.calls[key]
	if calls == nil {
		calls = &ProxiedCalls{NotOK: map[int]int{}}
		fp.calls[key] = calls
	}
	calls.Calls++
	if identifiers {
		calls.Identifiers++
	}
	if code != http.StatusOK {
		calls.NotOK[code]++
	}
}

// Fail makes the proxy answer 503 to a verb (or forward it again).
func (fp *FaultyProxy) Fail(verb string, fail bool) {
	fp.mu.Lock()
	fp.fail[verb] = fail
	fp.mu.Unlock()
}
