// Package conformance runs the shared differential suite (../suite) against
// Volcano v1.8.2 (volcano.sh/apis v1.8.2), with Caldera configured as
// volcanoVersion "1.8": the {"status":[{"Code","Reason"}]} predicate dialect
// of 1.8-1.9, no pdb plugin, no allocate/deallocate verbs, no
// managedResources, cdp without a reclaimable function.
//
// v1.8.2 has no pkg/scheduler/uthelper and no mock-cache constructor, so this
// adapter opens the session the way v1.8.2's own action tests do: a
// SchedulerCache literal with fake binder, evictor, status updater and volume
// binder, and a fake Volcano clientset for the queue status CloseSession
// writes. Binds travel through the cache's BindFlowChannel, which v1.8.2
// drains in a goroutine started by Run (not usable without an API server);
// Settle drains it into the cache's exported Bind instead.
package conformance

import (
	"reflect"
	"sync"
	"testing"
	"unsafe"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"caldera/conformance/suite"

	"volcano.sh/volcano/cmd/scheduler/app/options"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/cdp"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	"volcano.sh/volcano/pkg/scheduler/plugins/resourcequota"
	"volcano.sh/volcano/pkg/scheduler/plugins/sla"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"
	"volcano.sh/volcano/pkg/scheduler/plugins/usage"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// The allocate action reads options.ServerOpts (nil outside the scheduler
// binary); these are the values Volcano's own allocate tests set.
func init() {
	options.ServerOpts = &options.ServerOption{MinNodesToFind: 100, MinPercentageOfNodesToFind: 5, PercentageOfNodesToFind: 100}
}

var release = &suite.Release{
	Volcano: "v1.8.2",
	Version: "1.8",
	Builders: map[string]framework.PluginBuilder{
		sla.PluginName: sla.New, priority.PluginName: priority.New, conformance.PluginName: conformance.New,
		cdp.PluginName: cdp.New, overcommit.PluginName: overcommit.New, resourcequota.PluginName: resourcequota.New,
		gang.PluginName: gang.New, binpack.PluginName: binpack.New, drf.PluginName: drf.New,
		proportion.PluginName: proportion.New, extender.PluginName: extender.New,
		usage.PluginName: usage.New, tasktopology.PluginName: tasktopology.New,
	},
	Verbs: []string{
		extender.ExtenderOnSessionOpenVerb, extender.ExtenderOnSessionCloseVerb, extender.ExtenderPredicateVerb,
		extender.ExtenderPrioritizeVerb, extender.ExtenderPreemptableVerb, extender.ExtenderReclaimableVerb,
		extender.ExtenderQueueOverusedVerb, extender.ExtenderJobEnqueueableVerb, extender.ExtenderJobReadyVerb,
	},
	NewCache: newCache,
	// UpdateJobs nil: v1.8.2's CloseSession runs the job updater itself.
}

// binder records binds (v1.8.2's util.FakeBinder writes an unguarded map).
type binder struct {
	mu    sync.Mutex
	binds map[string]string
}

func (b *binder) Bind(_ kubernetes.Interface, tasks []*api.TaskInfo) ([]*api.TaskInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, task := range tasks {
		b.binds[task.Namespace+"/"+task.Name] = task.NodeName
	}
	return nil, nil
}

// statusUpdater is the fake one, except that UpdatePodGroup hands the
// PodGroup back: v1.8.2's cache stores what it returns as job.PodGroup.
type statusUpdater struct{ util.FakeStatusUpdater }

func (statusUpdater) UpdatePodGroup(pg *api.PodGroup) (*api.PodGroup, error) { return pg, nil }

type observed struct {
	sc      *cache.SchedulerCache
	binder  *binder
	evictor *util.FakeEvictor
}

func (o *observed) Binds() map[string]string {
	o.binder.mu.Lock()
	defer o.binder.mu.Unlock()
	out := map[string]string{}
	for k, v := range o.binder.binds {
		out[k] = v
	}
	return out
}

func (o *observed) Evicts() []string { return o.evictor.Evicts() }

func (o *observed) Settle() {
	var tasks []*api.TaskInfo
	for len(o.sc.BindFlowChannel) > 0 {
		tasks = append(tasks, <-o.sc.BindFlowChannel)
	}
	if len(tasks) > 0 {
		o.sc.Bind(tasks)
	}
	suite.Settle(o.evictor.Channel)
}

func (o *observed) Stop() {}

func newCache(t *testing.T, cl suite.Cluster) (*cache.SchedulerCache, suite.Observed) {
	o := &observed{binder: &binder{binds: map[string]string{}}, evictor: &util.FakeEvictor{Channel: make(chan string, 1000)}}
	o.sc = &cache.SchedulerCache{
		Nodes:               map[string]*api.NodeInfo{},
		Jobs:                map[api.JobID]*api.JobInfo{},
		Queues:              map[api.QueueID]*api.QueueInfo{},
		PriorityClasses:     map[string]*schedulingv1.PriorityClass{},
		NamespaceCollection: map[string]*api.NamespaceCollection{},
		CSINodesStatus:      map[string]*api.CSINodeStatusInfo{},
		BindFlowChannel:     make(chan *api.TaskInfo, 5000),
		Binder:              o.binder,
		Evictor:             o.evictor,
		StatusUpdater:       &statusUpdater{},
		VolumeBinder:        &util.FakeVolumeBinder{},
		Recorder:            &record.FakeRecorder{},
	}
	// CloseSession writes each queue's allocated resources through the
	// cache's unexported Volcano client (v1.8.2's own tests patch the method
	// with gomonkey instead): give it a fake clientset, as the mock-cache
	// constructor of later releases does.
	vc := reflect.ValueOf(o.sc).Elem().FieldByName("vcClient")
	objs := make([]runtime.Object, 0, len(cl.Queues))
	for _, q := range cl.Queues {
		objs = append(objs, q.DeepCopy())
	}
	reflect.NewAt(vc.Type(), unsafe.Pointer(vc.UnsafeAddr())).Elem().Set(reflect.ValueOf(vcfake.NewSimpleClientset(objs...)))
	return o.sc, o
}

func TestVolcano(t *testing.T) { suite.Run(t, release) }
