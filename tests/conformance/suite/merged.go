package suite

// The operator's own conf, merged (issue 29): a whole volcano-scheduler.conf in which several
// plugins that Caldera hosts sit among in-tree ones Caldera does not (gang, drf, proportion) is
// turned by `caldera volcano-config --merge` into the conf Volcano runs with Caldera, and that
// conf, parsed as vc-scheduler parses it (gopkg.in/yaml.v2 into conf.SchedulerConfiguration),
// must decide exactly as the original conf does with the plugins in-tree. Each scenario also
// runs the merged conf against a Caldera that hosts nothing: that run must differ, so the
// agreement is Caldera's answer through the merged entry, not the in-tree plugins left beside it.

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

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
			Hosted:  []string{"priority", "conformance"},
			Cluster: equalPriorityPeerCluster,
			Expect:  expectEvicts("ns1/old"),
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
			Hosted:  []string{"priority", "sla"},
			Cluster: slaPastDeadlineCluster,
			Expect:  expectPhases(map[string]string{"c1/old": "Inqueue", "c1/new": "Pending", "c1/late": "Inqueue"}),
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
	// A verb no configured action asks is warned about too (the action to add is named); these
	// scenarios run one action each on purpose, and such a verb changes no decision.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "warning") && !strings.Contains(line, "no action of this conf") {
			t.Errorf("--merge warns about a layout that changes a decision:\n%s", stderr.String())
			break
		}
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
	v := reflect.ValueOf(p).Elem()
	for _, f := range flagFields {
		if field := v.FieldByIndex(f.Index); field.IsNil() && f.Name != "EnabledHierarchy" && f.Name != "EnabledClusterOrder" {
			on := true
			field.Set(reflect.ValueOf(&on))
		}
	}
}

// flagFields are conf.PluginOption's enableXxx flags (its *bool fields).
var flagFields = func() []reflect.StructField {
	var out []reflect.StructField
	typ := reflect.TypeOf(conf.PluginOption{})
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i); f.Type == reflect.TypeOf((*bool)(nil)) {
			out = append(out, f)
		}
	}
	return out
}()

// setFlags are the entry's flags that are set, by their names in the conf (yaml tags).
func setFlags(p conf.PluginOption) map[string]bool {
	out := map[string]bool{}
	v := reflect.ValueOf(p)
	for _, f := range flagFields {
		if field := v.FieldByIndex(f.Index); !field.IsNil() {
			out[f.Tag.Get("yaml")] = field.Elem().Bool()
		}
	}
	return out
}

// hostedTiers is Caldera's configuration of the hosted plugins: each in the tier it has in the
// operator's conf, with its flags and arguments.
func hostedTiers(tiers []conf.Tier, hosted []string) [][]CalderaPlugin {
	var out [][]CalderaPlugin
	for _, tr := range tiers {
		var plugins []CalderaPlugin
		for _, p := range tr.Plugins {
			if slices.Contains(hosted, p.Name) {
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
	return CalderaPlugin{Name: p.Name, Flags: setFlags(p), Arguments: p.Arguments}
}

// schedulerConfYAML writes a volcano-scheduler.conf: each entry's name, the flags that are set
// and its arguments.
func schedulerConfYAML(actions string, tiers []conf.Tier) string {
	var out []map[string]interface{}
	for _, tr := range tiers {
		var plugins []map[string]interface{}
		for _, p := range tr.Plugins {
			entry := map[string]interface{}{"name": p.Name}
			for tag, on := range setFlags(p) {
				entry[tag] = on
			}
			if len(p.Arguments) > 0 {
				entry["arguments"] = jsonable(p.Arguments)
			}
			plugins = append(plugins, entry)
		}
		out = append(out, map[string]interface{}{"plugins": plugins})
	}
	data, err := yaml.Marshal(map[string]interface{}{"actions": actions, "tiers": out})
	if err != nil {
		panic(err)
	}
	return string(data)
}
