package suite

// The operator's own conf, merged (issue 29): a whole volcano-scheduler.conf in which several
// plugins that Caldera hosts sit among in-tree ones Caldera does not (gang, drf, proportion) is
// turned by `caldera volcano-config --merge` into the conf Volcano runs with Caldera, and that
// conf, parsed as vc-scheduler parses it (gopkg.in/yaml.v2 into conf.SchedulerConfiguration),
// must decide exactly as the original conf does with the plugins in-tree. Each scenario also
// runs the merged conf against a Caldera that hosts nothing: that run must differ, so the
// agreement is Caldera's answer through the merged entry, not the in-tree plugins left beside it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	vcapisv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"gopkg.in/yaml.v2"
)

type mergedScenario struct {
	Name    string
	Cluster func() Cluster
	// Actions is the conf's actions line; NewActions builds the same actions for the session.
	Actions    string
	NewActions func() []framework.Action
	Tiers      []conf.Tier
	// Hosted are the plugins Caldera's own configuration holds (in the tiers they have in
	// Tiers): the ones --merge replaces with the extender entry.
	Hosted []string
	Expect func(t *testing.T, o Outcome)
}

func testMergedConf(t *testing.T) {
	noEvict := func(name string) conf.PluginOption {
		return conf.PluginOption{Name: name, EnabledPreemptable: &no, EnabledReclaimable: &no}
	}
	for _, s := range []mergedScenario{
		{
			// "a job of equal priority is not a victim" (plugins.go) inside a full conf:
			// priority and conformance hosted, gang and drf in-tree with their victim votes
			// off, proportion in-tree. Volcano's own victim order would evict pg-peer first.
			Name:    "evict plugins hosted beside gang, drf and proportion",
			Actions: "preempt", NewActions: preemptActions,
			Tiers: []conf.Tier{
				tier(priorityNoJobOrder, noEvict("gang"), conf.PluginOption{Name: "conformance"}),
				tier(noEvict("drf"), conf.PluginOption{Name: "proportion"}),
			},
			Hosted: []string{"priority", "conformance"},
			Cluster: func() Cluster {
				return Cluster{
					PriClasses: classes(),
					PodGroups: []*vcapisv1.PodGroup{
						createdAgo(pgPrio("pg-old", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "low-priority"), time.Hour),
						createdAgo(pgPrio("pg-peer", "ns1", "q1", 1, vcapisv1.PodGroupRunning, "high-priority"), 2*time.Minute),
						createdAgo(pgPrio("pg-hi", "ns2", "q1", 1, vcapisv1.PodGroupInqueue, "high-priority"), time.Minute),
					},
					Pods: []*v1.Pod{
						running("ns1", "old", "node1", "2", "2G", "pg-old", preemptable()),
						running("ns1", "peer", "node1", "2", "2G", "pg-peer", preemptable()),
						pending("ns2", "preemptor", "2", "2G", "pg-hi"),
					},
					Nodes:  []*v1.Node{node("node1", "4", "4G")},
					Queues: []*vcapisv1.Queue{queue("q1", "", "")},
				}
			},
			Expect: expectEvicts("ns1/old"),
		},
		{
			// "sla Permit in tier 1 hides proportion Reject in tier 2" (plugins.go) with
			// priority's orders and gang in tier 1 and drf, proportion in tier 2: sla and
			// priority hosted.
			Name:    "sla hosted in the first tier, proportion's Reject in the second",
			Actions: "enqueue", NewActions: enqueueActions,
			Tiers: []conf.Tier{
				tier(priorityOrderOnly, gangOrder, slaEnq("3m")),
				tier(drfEnq, proportionEnq),
			},
			Hosted: []string{"priority", "sla"},
			Cluster: func() Cluster {
				return Cluster{
					PodGroups: []*vcapisv1.PodGroup{
						pgMin("old", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending),
						createdAgo(pgMin("new", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), time.Minute),
						createdAgo(pgMin("late", "c1", "c1", 1, rl("8", "8G"), vcapisv1.PodGroupPending), 10*time.Minute),
					},
					Queues: []*vcapisv1.Queue{queue("c1", "1", "1G")},
				}
			},
			Expect: expectPhases(map[string]string{"c1/old": "Inqueue", "c1/new": "Pending", "c1/late": "Inqueue"}),
		},
	} {
		t.Run(s.Name, func(t *testing.T) { compareMerged(t, s) })
	}
}

func compareMerged(t *testing.T, s mergedScenario) {
	t.Helper()
	dir := t.TempDir()
	text := schedulerConfYAML(s.Actions, s.Tiers)
	original := filepath.Join(dir, "volcano-scheduler.conf")
	if err := os.WriteFile(original, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	inTree := runSession(t, s.Cluster(), parseSchedulerConf(t, []byte(text)), s.NewActions())
	t.Logf("in-tree : %s", inTree)
	if s.Expect != nil {
		s.Expect(t, inTree)
	}
	cfg := CalderaConfig{Tiers: hostedTiers(s.Tiers, s.Hosted)}
	c := startCaldera(t, cfg)
	rec := startRecorder(t, c.URL)
	tiers := mergedTiers(t, dir, original, cfg, rec.URL)
	entry := extenderEntry(tiers)
	if entry.Name == "" {
		t.Fatalf("the merged conf has no extender entry:\n%s", schedulerConfYAML(s.Actions, tiers))
	}
	ext := runSession(t, s.Cluster(), tiers, s.NewActions())
	t.Logf("merged  : %s (Caldera answered %s)", ext, rec)
	if rec.Answered()["onSessionOpen"] == 0 {
		t.Errorf("Caldera never answered onSessionOpen through the merged conf: %s", rec)
	}
	if d := diff(inTree, ext); d != "" {
		t.Errorf("the merged conf through Caldera decides differently from the in-tree conf:\n%s", d)
	}
	// The control: the same merged conf, its extender entry at a Caldera hosting nothing.
	neutral := mergedTiers(t, dir, original, cfg, neutralCaldera(t, nil))
	if d := diff(runSession(t, s.Cluster(), neutral, s.NewActions()), inTree); d == "" {
		t.Errorf("with a Caldera hosting no plugin the merged conf decides the same: the scenario" +
			" does not show that Caldera's answer decides it")
	}
}

// mergedTiers runs `caldera volcano-config --merge` on the original conf (Caldera's
// configuration cfg, the extender entry pointing at url) and parses its output as vc-scheduler
// does.
func mergedTiers(t *testing.T, dir, original string, cfg CalderaConfig, url string) []conf.Tier {
	t.Helper()
	data, err := cfg.yaml()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "caldera.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err := calderaCommand("volcano-config", "--config", path, "--url", url, "--merge", original)
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("caldera volcano-config --merge: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("--merge warns about a layout that changes a decision:\n%s", stderr.String())
	}
	return parseSchedulerConf(t, out)
}

// parseSchedulerConf reads a volcano-scheduler.conf as vc-scheduler does
// (scheduler.UnmarshalSchedulerConf): gopkg.in/yaml.v2, then every absent flag of every plugin
// entry turned on as plugins.ApplyPluginConfDefaults does.
func parseSchedulerConf(t *testing.T, text []byte) []conf.Tier {
	t.Helper()
	var sc conf.SchedulerConfiguration
	if err := yaml.Unmarshal(text, &sc); err != nil {
		t.Fatalf("the conf does not parse as vc-scheduler parses it: %v\n%s", err, text)
	}
	for i := range sc.Tiers {
		for j := range sc.Tiers[i].Plugins {
			applyPluginConfDefaults(&sc.Tiers[i].Plugins[j])
		}
	}
	return sc.Tiers
}

// applyPluginConfDefaults is pkg/scheduler/plugins/defaults.go's ApplyPluginConfDefaults
// (v1.8.2 to v1.15.1): every flag absent from the entry is on, except enableHierarchy and
// EnabledClusterOrder, which it leaves alone. (Importing that package would pull every in-tree
// plugin's dependencies into each release module.)
func applyPluginConfDefaults(p *conf.PluginOption) {
	typ, v := reflect.TypeOf(*p), reflect.ValueOf(p).Elem()
	for i := 0; i < typ.NumField(); i++ {
		f := v.Field(i)
		name := typ.Field(i).Name
		if f.Kind() != reflect.Ptr || f.Type().Elem().Kind() != reflect.Bool || !f.IsNil() ||
			name == "EnabledHierarchy" || name == "EnabledClusterOrder" {
			continue
		}
		on := true
		f.Set(reflect.ValueOf(&on))
	}
}

// hostedTiers is Caldera's configuration of the hosted plugins: each in the tier it has in the
// operator's conf, with its flags and arguments.
func hostedTiers(tiers []conf.Tier, hosted []string) [][]CalderaPlugin {
	var out [][]CalderaPlugin
	for _, tr := range tiers {
		var plugins []CalderaPlugin
		for _, p := range tr.Plugins {
			if contains(hosted, p.Name) {
				plugins = append(plugins, calderaPluginAsSet(p))
			}
		}
		if len(plugins) > 0 {
			out = append(out, plugins)
		}
	}
	return out
}

// calderaPluginAsSet is the entry as the operator wrote it: the flags that are set, an absent
// one left absent (on, in Volcano and in Caldera), unlike calderaPluginFrom's explicit flags
// for the single-plugin scenarios.
func calderaPluginAsSet(p conf.PluginOption) CalderaPlugin {
	cp := CalderaPlugin{Name: p.Name, Flags: map[string]bool{}, Arguments: p.Arguments}
	typ, v := reflect.TypeOf(p), reflect.ValueOf(p)
	for i := 0; i < typ.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Ptr && !f.IsNil() && f.Elem().Kind() == reflect.Bool {
			cp.Flags[typ.Field(i).Tag.Get("yaml")] = f.Elem().Bool()
		}
	}
	return cp
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// schedulerConfYAML writes a volcano-scheduler.conf: each PluginOption's flags by their yaml
// tags (only the ones set), arguments as JSON (a YAML flow mapping).
func schedulerConfYAML(actions string, tiers []conf.Tier) string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\ntiers:\n", actions)
	typ := reflect.TypeOf(conf.PluginOption{})
	for _, tr := range tiers {
		b.WriteString("- plugins:\n")
		for _, p := range tr.Plugins {
			fmt.Fprintf(&b, "  - name: %s\n", p.Name)
			v := reflect.ValueOf(p)
			var flags []string
			for i := 0; i < typ.NumField(); i++ {
				f := v.Field(i)
				if f.Kind() != reflect.Ptr || f.IsNil() || f.Elem().Kind() != reflect.Bool {
					continue
				}
				flags = append(flags, fmt.Sprintf("    %s: %v\n", typ.Field(i).Tag.Get("yaml"), f.Elem().Bool()))
			}
			sort.Strings(flags)
			b.WriteString(strings.Join(flags, ""))
			if len(p.Arguments) > 0 {
				args, err := json.Marshal(jsonable(p.Arguments))
				if err != nil {
					panic(err)
				}
				fmt.Fprintf(&b, "    arguments: %s\n", args)
			}
		}
	}
	return b.String()
}
