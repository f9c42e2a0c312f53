package suite

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// Release is what one Volcano release module hands the suite: the few
// things whose Go API or availability differs between Volcano releases.
type Release struct {
	// Volcano is the module version under test, e.g. "v1.14.1".
	Volcano string
	// Version is Caldera's volcanoVersion for it, e.g. "1.14".
	Version string
	// Builders are the in-tree plugins this release ships (plus "extender").
	Builders map[string]framework.PluginBuilder
	// Verbs are the extender argument keys this release reads, e.g.
	// "extender.predicateVerb" ("extender.allocateFuncVerb" from 1.13 on).
	Verbs []string
	// ManagedResources: the extender reads extender.managedResources (1.13+).
	ManagedResources bool
	// NewCache builds a mock scheduler cache with fake binder, evictor and
	// status updater, and hands PDBs to it where the release has a pdb plugin.
	NewCache func(t *testing.T, cl Cluster) (*cache.SchedulerCache, Observed)
	// UpdateJobs writes PodGroup status before CloseSession (1.11+ moved the
	// job updater out of CloseSession); nil when CloseSession does it.
	UpdateJobs func(ssn *framework.Session)
}

// Observed is the fake binder/evictor side of one session.
type Observed interface {
	Binds() map[string]string // ns/pod -> node
	Evicts() []string         // ns/pod
	Settle()                  // wait until binds and evictions are quiet
	Stop()                    // release the cache's goroutines
}

// rel is the release this test binary was built against (one per module).
var rel *Release

// AtLeast reports whether the release is major.minor or later ("1.12").
func (r *Release) AtLeast(v string) bool {
	return cmpVersion(r.Version, v) >= 0
}

// Has reports whether the release ships the in-tree plugin.
func (r *Release) Has(plugin string) bool {
	_, ok := r.Builders[plugin]
	return ok
}

func (r *Release) hasVerb(key string) bool {
	for _, k := range r.Verbs {
		if k == key {
			return true
		}
	}
	return false
}

func cmpVersion(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 2; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return 0
}

// group is one set of scenarios, run when the release has what it needs.
type group struct {
	name  string
	needs []string // in-tree plugins
	since string   // first Volcano minor release whose extender can run it
	run   func(t *testing.T)
	// objectsOnly, when set, says why the identifiers mode (identifiers.go) does not run the group.
	objectsOnly string
}

// Why a group runs in the objects mode only (the groups table's last column).
const (
	volcanosOwn = "it proves Volcano's extender plugin (how it reads an answer), not Caldera's answers"
)

var groups = []group{
	{"ConformancePlugin", []string{"conformance", "priority"}, "", testConformancePlugin, ""},
	{"PriorityPlugin", []string{"priority", "conformance"}, "", testPriorityPlugin, ""},
	{"CdpPlugin", []string{"cdp", "priority"}, "", testCdpPlugin, ""},
	{"SlaPlugin", []string{"sla", "drf", "proportion", "gang"}, "", testSlaPlugin, ""},
	{"OvercommitPlugin", []string{"overcommit"}, "", testOvercommitPlugin, ""},
	{"ResourceQuotaPlugin", []string{"resourcequota"}, "", testResourceQuotaPlugin, ""},
	{"PdbPlugin", []string{"pdb", "priority"}, "", testPdbPlugin, ""},
	{"PredicateDialect", nil, "", testPredicateDialect, volcanosOwn},
	{"ManagedResourcesFiltering", nil, "1.13", testManagedResourcesFiltering, volcanosOwn},
	{"Ignorable", []string{"conformance", "priority"}, "", testIgnorable, volcanosOwn},
	{"AllocateDeallocate", []string{"gang", "conformance", "priority"}, "1.13", testAllocateDeallocate, volcanosOwn},
	{"Differences", []string{"sla", "priority", "gang", "conformance"}, "", testDifferences, "it asserts what the objects protocol cannot carry"},
	{"NodeGroupPlugin", []string{"nodegroup", "priority"}, "1.13", testNodeGroupPlugin, ""},
	{"UsagePlugin", []string{"usage", "priority"}, "1.13", testUsagePlugin, "usage reads each node's metrics, which only the snapshot carries: Caldera refuses cluster mode with it"},
	{"ResourceStrategyFitPlugin", []string{"resource-strategy-fit", "binpack"}, "", testResourceStrategyFitPlugin, ""},
	{"TaskTopologyPlugin", []string{"task-topology", "gang", "binpack"}, "1.13", testTaskTopologyPlugin, ""},
	{"CaptureFixtures", []string{"conformance", "priority"}, "", testCaptureFixtures, "it writes the objects mode's fixtures"},
	{"MinRuntime", []string{"priority", "gang", "conformance", "capacity"}, "", testMinRuntime, ""},
	{"MergedConf", []string{"priority", "conformance", "gang", "drf", "proportion", "sla"}, "", testMergedConf, "it compares the entry `caldera volcano-config --merge` prints for stock Volcano"},
}

// Run runs every scenario group the release can run, each as a subtest
// (go test -run 'TestVolcano/SlaPlugin'). Groups the release cannot run (the
// plugin is not in that Volcano release, or its extender lacks the verb) are
// listed in the log, not skipped one by one.
func Run(t *testing.T, r *Release) {
	rel = r
	runT = t
	t.Cleanup(func() { runT = nil; forgetNeutralCalderas() })
	start := time.Now()
	var absent []string
	for _, g := range groups {
		if identifiersMode && g.objectsOnly != "" {
			absent = append(absent, g.name+" (objects mode only: "+g.objectsOnly+")")
			continue
		}
		if why := r.cannot(g); why != "" {
			absent = append(absent, g.name+" ("+why+")")
			continue
		}
		t.Run(g.name, g.run)
	}
	sort.Strings(absent)
	if len(absent) > 0 {
		t.Logf("Volcano %s: not applicable: %s", r.Volcano, strings.Join(absent, "; "))
	}
	t.Logf("Volcano %s (Caldera volcanoVersion %q)%s: done in %s", r.Volcano, r.Version, bodiesNote(), time.Since(start).Round(time.Second))
}

func (r *Release) cannot(g group) string {
	var missing []string
	for _, p := range g.needs {
		if !r.Has(p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no in-tree %s in %s", strings.Join(missing, ", "), r.Volcano)
	}
	if g.since != "" && !r.AtLeast(g.since) {
		return fmt.Sprintf("extender verbs from %s on", g.since)
	}
	return ""
}

// Settle waits until none of the channels has carried anything for 300 ms:
// binds and evictions are asynchronous in Volcano's cache.
func Settle(chs ...chan string) {
	quiet := 0
	for quiet < 3 {
		got := false
		for _, ch := range chs {
			select {
			case <-ch:
				got = true
			default:
			}
		}
		if got {
			quiet = 0
			continue
		}
		time.Sleep(100 * time.Millisecond)
		quiet++
	}
}
