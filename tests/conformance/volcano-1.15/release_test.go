// Package conformance runs the shared differential suite (../suite) against
// Volcano v1.15.1 (volcano.sh/apis v1.15.0), with Caldera configured as
// volcanoVersion "1.15" -- an optional module: some module proxies refuse
// volcano.sh/apis v1.15.0. This file is the release adapter: which in-tree
// plugins v1.15.1 ships, which extender verbs it reads, and how its mock
// cache and job updater are driven.
package conformance

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"caldera/conformance/suite"

	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/capacity"
	"volcano.sh/volcano/pkg/scheduler/plugins/cdp"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodegroup"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/pdb"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	resourcestrategyfit "volcano.sh/volcano/pkg/scheduler/plugins/resource-strategy-fit"
	"volcano.sh/volcano/pkg/scheduler/plugins/resourcequota"
	"volcano.sh/volcano/pkg/scheduler/plugins/sla"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"
	"volcano.sh/volcano/pkg/scheduler/plugins/usage"
	"volcano.sh/volcano/pkg/scheduler/util"
)

func init() { metrics.InitKubeSchedulerRelatedMetrics() }

var release = &suite.Release{
	Volcano: "v1.15.1",
	Version: "1.15",
	Builders: map[string]framework.PluginBuilder{
		sla.PluginName: sla.New, priority.PluginName: priority.New, conformance.PluginName: conformance.New,
		cdp.PluginName: cdp.New, overcommit.PluginName: overcommit.New, resourcequota.PluginName: resourcequota.New,
		pdb.PluginName: pdb.New, gang.PluginName: gang.New, binpack.PluginName: binpack.New, drf.PluginName: drf.New,
		proportion.PluginName: proportion.New, capacity.PluginName: capacity.New, extender.PluginName: extender.New,
		nodegroup.PluginName: nodegroup.New, usage.PluginName: usage.New, resourcestrategyfit.PluginName: resourcestrategyfit.New, tasktopology.PluginName: tasktopology.New,
	},
	Verbs: []string{
		extender.ExtenderOnSessionOpenVerb, extender.ExtenderOnSessionCloseVerb, extender.ExtenderPredicateVerb,
		extender.ExtenderPrioritizeVerb, extender.ExtenderPreemptableVerb, extender.ExtenderReclaimableVerb,
		extender.ExtenderQueueOverusedVerb, extender.ExtenderJobEnqueueableVerb, extender.ExtenderJobReadyVerb,
		extender.ExtenderAllocateFuncVerb, extender.ExtenderDeallocateFuncVerb,
	},
	ManagedResources: true,
	NewCache:         newCache,
	UpdateJobs:       func(ssn *framework.Session) { framework.NewJobUpdater(ssn).UpdateAll() },
}

type observed struct {
	binder  *util.FakeBinder
	evictor *util.FakeEvictor
	stop    chan struct{}
}

func (o *observed) Binds() map[string]string { return o.binder.Binds() }
func (o *observed) Evicts() []string         { return o.evictor.Evicts() }
func (o *observed) Settle()                  { suite.Settle(o.binder.Channel, o.evictor.Channel) }
func (o *observed) Stop()                    { close(o.stop) }

// newCache follows pkg/scheduler/uthelper: NewCustomMockSchedulerCache with
// the fake binder/evictor; PDBs go to a fake informer, as pdb_test.go does.
func newCache(t *testing.T, cl suite.Cluster) (*cache.SchedulerCache, suite.Observed) {
	o := &observed{binder: util.NewFakeBinder(1000), evictor: util.NewFakeEvictor(1000), stop: make(chan struct{})}
	sc := cache.NewCustomMockSchedulerCache("volcano", o.binder, o.evictor, &util.FakeStatusUpdater{}, nil, nil)
	sc.Run(o.stop)
	sc.WaitForCacheSync(o.stop)
	inf := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	pdbInformer := inf.Policy().V1().PodDisruptionBudgets().Informer()
	for _, p := range cl.PDBs {
		if err := pdbInformer.GetStore().Add(p); err != nil {
			t.Fatalf("add pdb: %v", err)
		}
	}
	sc.SetSharedInformerFactory(inf)
	return sc, o
}

func TestVolcano(t *testing.T) { suite.Run(t, release) }
