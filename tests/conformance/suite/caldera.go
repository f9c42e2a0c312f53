package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"volcano.sh/volcano/pkg/scheduler/conf"
)

// ---- locating and running `caldera` ------------------------------------------

// repoRoot is the Caldera repository root: the test runs in
// tests/conformance/volcano-<release>, three levels below it.
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", "..", ".."))
}

// calderaCommand is this checkout's caldera: $CALDERA_BIN when it is set, else the console
// script of the repository's uv environment (`uv sync` makes it). Never a `caldera` found on
// PATH: the suite proves this checkout, not whatever else is installed.
func calderaCommand(args ...string) (*exec.Cmd, error) {
	if bin := os.Getenv("CALDERA_BIN"); bin != "" {
		parts := strings.Fields(bin)
		return exec.Command(parts[0], append(parts[1:], args...)...), nil
	}
	script := filepath.Join(repoRoot(), ".venv", "bin", "caldera")
	if _, err := os.Stat(script); err == nil {
		return exec.Command(script, args...), nil
	}
	return nil, fmt.Errorf("this checkout's caldera is not at %s: run `uv sync` at the repository root, or set CALDERA_BIN", script)
}

// checkThisCheckout: the caldera console script at path runs this checkout's code, i.e. its
// interpreter (the script's #! line) imports the `app` package from this repository's app/
// (`uv sync` installs the project editable). A CALDERA_BIN left pointing at another checkout
// or another installation would otherwise prove that one instead.
func checkThisCheckout(path string) error {
	fields, err := interpreterOf(path)
	if err != nil {
		return err
	}
	probe := exec.Command(fields[0], append(fields[1:], "-c",
		"import app, os; print(os.path.realpath(os.path.dirname(app.__file__)))")...)
	probe.Dir = os.TempDir()
	out, err := probe.Output()
	if err != nil {
		return fmt.Errorf("%s: cannot import its app package: %v", path, err)
	}
	want, err := filepath.EvalSymlinks(filepath.Join(repoRoot(), "app"))
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(out)); got != want {
		return fmt.Errorf("%s runs the caldera in %s, not this checkout's %s: set CALDERA_BIN to this"+
			" repository's .venv/bin/caldera (uv sync)", path, got, want)
	}
	return nil
}

// interpreterOf is the command line of the Python interpreter that runs the console script at
// path (its #! line, without a leading env).
func interpreterOf(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return nil, fmt.Errorf("%s is not a Python console script: cannot tell whether it runs this checkout's caldera"+
			" (set CALDERA_BIN to the repository's .venv/bin/caldera)", path)
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		fields = fields[1:]
	}
	return fields, nil
}

// strict: a Caldera that cannot be run fails the suite; it never skips (a check that skips on
// a fresh machine proves nothing). CALDERA_CONFORMANCE_STRICT=0 is the one way to get skips,
// for a run on a machine without the Python side at all.
func strict() bool { return os.Getenv("CALDERA_CONFORMANCE_STRICT") != "0" }

// CalderaPlugin is one entry of a Caldera tier: Volcano's tier shape.
type CalderaPlugin struct {
	Name      string
	Flags     map[string]bool
	Arguments map[string]interface{}
}

// CalderaConfig is the YAML given to `caldera serve --config`.
type CalderaConfig struct {
	ManagedResources []string
	Tiers            [][]CalderaPlugin
	// VolcanoVersion overrides the release's volcanoVersion (negative controls).
	VolcanoVersion string
	// SessionState and SessionStateKubeconfig: Caldera's sessionState ("" is the default, the
	// snapshot) and the API server it lists and watches in cluster mode (identifiers.go).
	SessionState, SessionStateKubeconfig string
}

func (c CalderaConfig) yaml() ([]byte, error) {
	tiers := []interface{}{}
	for _, tier := range c.Tiers {
		plugins := []interface{}{}
		for _, p := range tier {
			m := map[string]interface{}{"name": p.Name}
			for k, v := range p.Flags {
				m[k] = v
			}
			if len(p.Arguments) > 0 {
				m["arguments"] = jsonable(p.Arguments)
			}
			plugins = append(plugins, m)
		}
		tiers = append(tiers, map[string]interface{}{"plugins": plugins})
	}
	version := c.VolcanoVersion
	if version == "" {
		// The exact patch release under test ("1.14.1"): Volcano changed a few answers in
		// patch releases (overcommit's GPU units in v1.14.3/v1.15.1), and Caldera follows a
		// named patch where it matters.
		version = strings.TrimPrefix(rel.Volcano, "v")
	}
	mr := c.ManagedResources
	if mr == nil {
		mr = []string{}
	}
	doc := map[string]interface{}{
		"volcanoVersion":   version,
		"managedResources": mr,
		"maxRequestBytes":  104857600,
		"tiers":            tiers,
	}
	if c.SessionState != "" {
		doc["sessionState"], doc["sessionStateKubeconfig"] = c.SessionState, c.SessionStateKubeconfig
	}
	return yaml.Marshal(doc)
}

// Caldera is a running `caldera serve`.
type Caldera struct {
	URL      string
	cmd      *exec.Cmd
	logs     *bytes.Buffer
	once     sync.Once
	waitExit chan error
}

var (
	calderaCheckOnce sync.Once
	calderaCheckErr  error
)

// startCaldera writes the config, validates it with `caldera check-config`
// (exit 2 + "unknown plugin" => t.Skip: the plugin has not landed yet),
// starts `caldera serve` on a free port and waits for /healthz.
func startCaldera(t *testing.T, cfg CalderaConfig) *Caldera {
	t.Helper()
	skipOrFail := func(format string, args ...interface{}) {
		t.Helper()
		if strict() {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "caldera.yaml")
	data, err := cfg.yaml()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// Is caldera runnable at all? (checked once per test binary)
	calderaCheckOnce.Do(func() {
		cmd, err := calderaCommand("--help")
		if err != nil {
			calderaCheckErr = err
			return
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			calderaCheckErr = fmt.Errorf("`%s` failed: %v\n%s", strings.Join(cmd.Args, " "), err, tail(out))
			return
		}
		calderaCheckErr = checkThisCheckout(cmd.Path)
	})
	if calderaCheckErr != nil {
		skipOrFail("caldera unavailable: %v", calderaCheckErr)
	}

	check, _ := calderaCommand("check-config", path)
	out, err := check.CombinedOutput()
	if err != nil {
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code == 2 && strings.Contains(strings.ToLower(string(out)), "unknown plugin") {
			skipOrFail("Caldera does not provide this plugin yet: %s", strings.TrimSpace(tail(out)))
		}
		if code == 2 && strings.Contains(string(out), "No such command") {
			skipOrFail("caldera has no check-config command yet: %s", strings.TrimSpace(tail(out)))
		}
		t.Fatalf("caldera check-config failed (exit %d):\n%s\nconfig:\n%s", code, out, data)
	}

	port := freePort(t)
	cmd, _ := calderaCommand("serve", "--config", path, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	logs := &bytes.Buffer{}
	cmd.Stdout = logs
	cmd.Stderr = logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start caldera: %v", err)
	}
	c := &Caldera{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, logs: logs}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("caldera config:\n%s\ncaldera output:\n%s", data, tail(logs.Bytes()))
		}
	})

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c.waitExit = exited
	// A start that never comes is what this catches, not a slow one: under a load average
	// of 15 on 2 cores Python's imports alone took over 20 s (two scenarios failed so).
	const startWithin = 60 * time.Second
	deadline := time.Now().Add(startWithin)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("caldera serve exited early: %v\n%s", err, tail(logs.Bytes()))
		default:
		}
		resp, err := client.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("caldera did not become healthy within %s\n%s", startWithin, tail(logs.Bytes()))
	return nil
}

// Stop sends SIGTERM to caldera's process group (only the processes this
// test started) and waits for it, SIGKILL after 5 s.
func (c *Caldera) Stop() {
	c.once.Do(func() {
		if c.cmd.Process == nil {
			return
		}
		pgid := c.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-c.waitExit:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-c.waitExit
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}

// ---- extender plugin options ---------------------------------------------------

// The extender plugin's argument keys (stable strings since Volcano 1.x; the
// Go constants for the newer ones do not exist in older releases).
const (
	argURLPrefix        = "extender.urlPrefix"
	argHTTPTimeout      = "extender.httpTimeout"
	argIgnorable        = "extender.ignorable"
	argManagedResources = "extender.managedResources"

	verbOnSessionOpen  = "extender.onSessionOpenVerb"
	verbOnSessionClose = "extender.onSessionCloseVerb"
	verbPredicate      = "extender.predicateVerb"
	verbPrioritize     = "extender.prioritizeVerb"
	verbPreemptable    = "extender.preemptableVerb"
	verbReclaimable    = "extender.reclaimableVerb"
	verbQueueOverused  = "extender.queueOverusedVerb"
	verbJobEnqueueable = "extender.jobEnqueueableVerb"
	verbJobReady       = "extender.jobReadyVerb"
	verbAllocateFunc   = "extender.allocateFuncVerb"
	verbDeallocateFunc = "extender.deallocateFuncVerb"
)

// calderaVerbs maps the extender's argument keys to Caldera's endpoint names.
// jobEnqueued does not exist before Volcano 1.16.
var calderaVerbs = map[string]string{
	verbOnSessionOpen:  "onSessionOpen",
	verbOnSessionClose: "onSessionClose",
	verbPredicate:      "predicate",
	verbPrioritize:     "prioritize",
	verbPreemptable:    "preemptable",
	verbReclaimable:    "reclaimable",
	verbQueueOverused:  "queueOverused",
	verbJobEnqueueable: "jobEnqueueable",
	verbJobReady:       "jobReady",
	verbAllocateFunc:   "allocate",
	verbDeallocateFunc: "deallocate",
}

// allVerbs is every verb the release under test reads, mapped to Caldera's
// endpoint names.
func allVerbs() map[string]string { return releaseVerbs(calderaVerbs) }

// releaseVerbs is verbs (extender argument key -> name) less the keys the
// release under test does not read.
func releaseVerbs(verbs map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range verbs {
		if rel.hasVerb(k) {
			m[k] = v
		}
	}
	return m
}

// ExtOpts configures the extender plugin entry.
type ExtOpts struct {
	Ignorable        bool
	ManagedResources []string
	Timeout          string            // default "5s" (Caldera cold paths)
	Verbs            map[string]string // default allVerbs
}

// extenderOption builds the `extender` plugin entry with the reachable flags
// copied from the in-tree plugin option it replaces.
func extenderOption(url string, flagsFrom conf.PluginOption, o ExtOpts) conf.PluginOption {
	verbs := o.Verbs
	if verbs == nil {
		verbs = allVerbs()
	}
	args := map[string]interface{}{argURLPrefix: url}
	for k, v := range verbs {
		args[k] = v
	}
	timeout := o.Timeout
	if timeout == "" {
		timeout = "5s"
	}
	args[argHTTPTimeout] = timeout
	args[argIgnorable] = o.Ignorable
	if len(o.ManagedResources) > 0 {
		args[argManagedResources] = o.ManagedResources
	}
	return conf.PluginOption{
		Name:               "extender",
		EnabledPredicate:   flagsFrom.EnabledPredicate,
		EnabledNodeOrder:   flagsFrom.EnabledNodeOrder,
		EnabledPreemptable: flagsFrom.EnabledPreemptable,
		EnabledReclaimable: flagsFrom.EnabledReclaimable,
		EnabledJobEnqueued: flagsFrom.EnabledJobEnqueued,
		EnabledOverused:    flagsFrom.EnabledOverused,
		EnabledJobReady:    flagsFrom.EnabledJobReady,
		Arguments:          args,
	}
}

// residualOption is the in-tree plugin with every extender-reachable flag
// switched off: what is left (JobOrder, TaskOrder, JobStarving, JobPipelined)
// cannot be carried by the extender protocol.
func residualOption(p conf.PluginOption) conf.PluginOption {
	r := p
	r.EnabledPredicate, r.EnabledNodeOrder = &no, &no
	r.EnabledPreemptable, r.EnabledReclaimable = &no, &no
	r.EnabledJobEnqueued, r.EnabledOverused, r.EnabledJobReady = &no, &no, &no
	r.EnabledVictim = &no
	return r
}

func hasUnreachable(p conf.PluginOption) bool {
	for _, f := range []*bool{p.EnabledJobOrder, p.EnabledTaskOrder, p.EnabledJobPipelined, p.EnabledJobStarving,
		p.EnabledQueueOrder, p.EnabledAllocatable, p.EnabledBestNode, p.EnabledVictim} {
		if f != nil && *f {
			return true
		}
	}
	return false
}

// calderaPluginFrom turns an in-tree option into a Caldera tier entry with
// the reachable flags spelled out (nil => false, as in Volcano unit tests).
func calderaPluginFrom(p conf.PluginOption) CalderaPlugin {
	f := func(v *bool) bool { return v != nil && *v }
	cp := CalderaPlugin{
		Name: p.Name,
		Flags: map[string]bool{
			"enablePredicate":   f(p.EnabledPredicate),
			"enableNodeOrder":   f(p.EnabledNodeOrder),
			"enablePreemptable": f(p.EnabledPreemptable),
			"enableReclaimable": f(p.EnabledReclaimable),
			"enableJobEnqueued": f(p.EnabledJobEnqueued),
			"enabledOverused":   f(p.EnabledOverused),
			"enableJobReady":    f(p.EnabledJobReady),
		},
		Arguments: p.Arguments,
	}
	// enableHierarchy is a plugin option Volcano does not send the extender
	// (nodegroup's queue-affinity inheritance reads it): set only when on.
	if f(p.EnabledHierarchy) {
		cp.Flags["enableHierarchy"] = true
	}
	return cp
}

// jsonable turns the map[interface{}]interface{} sections that Volcano's
// YAML loader (gopkg.in/yaml.v2) produces into string-keyed maps, so that the
// same arguments the in-tree plugin received can be written to Caldera's YAML.
func jsonable(v interface{}) interface{} {
	switch x := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case map[string]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, e := range x {
			m[k] = jsonable(e)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(x))
		for i, e := range x {
			l[i] = jsonable(e)
		}
		return l
	}
	return v
}

func mustJSON(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}
