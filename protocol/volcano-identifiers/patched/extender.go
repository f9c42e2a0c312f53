/*
Copyright 2022 The Volcano Authors.

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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/util"
)

const (
	// PluginName indicates name of volcano scheduler plugin.
	PluginName = "extender"

	// ExtenderURLPrefix is the key for providing extender endpoint address
	ExtenderURLPrefix = "extender.urlPrefix"
	// ExtenderHTTPTimeout is the timeout for extender http calls
	ExtenderHTTPTimeout = "extender.httpTimeout"
	// ExtenderOnSessionOpenVerb is the verb of OnSessionOpen method
	ExtenderOnSessionOpenVerb = "extender.onSessionOpenVerb"
	// ExtenderOnSessionCloseVerb is the verb of OnSessionClose method
	ExtenderOnSessionCloseVerb = "extender.onSessionCloseVerb"
	// ExtenderPredicateVerb is the verb of Predicate method
	ExtenderPredicateVerb = "extender.predicateVerb"
	// ExtenderPrioritizeVerb is the verb of Prioritize method
	ExtenderPrioritizeVerb = "extender.prioritizeVerb"
	// ExtenderPreemptableVerb is the verb of Preemptable method
	ExtenderPreemptableVerb = "extender.preemptableVerb"
	// ExtenderReclaimableVerb is the verb of Reclaimable method
	ExtenderReclaimableVerb = "extender.reclaimableVerb"
	// ExtenderQueueOverusedVerb is the verb of QueueOverused method
	ExtenderQueueOverusedVerb = "extender.queueOverusedVerb"
	// ExtenderJobEnqueueableVerb is the verb of JobEnqueueable method
	ExtenderJobEnqueueableVerb = "extender.jobEnqueueableVerb"
	// ExtenderJobReadyVerb is the verb of JobReady method
	ExtenderJobReadyVerb = "extender.jobReadyVerb"
	// ExtenderAllocateFuncVerb is the verb of AllocateFunc method
	ExtenderAllocateFuncVerb = "extender.allocateFuncVerb"
	// ExtenderDeallocateFuncVerb is the verb of DeallocateFunc method
	ExtenderDeallocateFuncVerb = "extender.deallocateFuncVerb"
	// ExtenderIgnorable indicates whether the extender can ignore unexpected errors
	ExtenderIgnorable = "extender.ignorable"
	// ExtenderBodies is what the calls carry: objects (default) or identifiers
	ExtenderBodies = "extender.bodies"
	// ExtenderBatchPredicateVerb is the verb of the batched predicate, one call per task
	ExtenderBatchPredicateVerb = "extender.batchPredicateVerb"

	// 10MB
	maxBodySize = 10 << 20
	// ExtenderManagedResources is the managed resources list split by ","
	ExtenderManagedResources = "extender.managedResources"
)

type extenderConfig struct {
	urlPrefix          string
	httpTimeout        time.Duration
	onSessionOpenVerb  string
	onSessionCloseVerb string
	predicateVerb      string
	prioritizeVerb     string
	preemptableVerb    string
	reclaimableVerb    string
	queueOverusedVerb  string
	jobEnqueueableVerb string
	jobReadyVerb       string
	allocateFuncVerb   string
	deallocateFuncVerb string
	ignorable          bool
	managedResources   sets.Set[string]
	bodies             string
	batchPredicateVerb string
}

type extenderPlugin struct {
	client http.Client
	config *extenderConfig

	// identifiers and batchPredicate are what negotiate agreed with the extender for this session.
	identifiers    bool
	batchPredicate bool
	// session is the session's id, sent with every call in identifiers mode.
	session string
	// nodeNames are the session's nodes, the candidates of every batched predicate.
	nodeNames []string
	// errorCache is allocate's predicateErrorCacheEnable (default true): whether a task's batch
	// leaves out the nodes its task group already failed on, as allocate's predicate helper
	// does not ask them again (pkg/scheduler/util/predicate_helper.go).
	errorCache bool
	// predicated keeps the batched predicate's answer for each task's pass.
	predicated predicatedTasks
}

// predicatedTasks keeps, per task, the failed nodes the batched predicate answered, with the
// number of allocate and deallocate events the session had seen when it was asked: an answer is
// only used while no event has changed the session's nodes since.
type predicatedTasks struct {
	sync.RWMutex
	events int
	tasks  map[api.TaskID]*predicatedTask
	// groupFailed holds, per task group (job and task role), the nodes a batched predicate
	// failed this session.
	groupFailed map[string]map[string]struct{}
}

type predicatedTask struct {
	events int
	// err fails every node: the call failed and the extender is not ignorable.
	err    error
	failed map[string]NodeFailure
	// left are the session's nodes the batch did not name. A predicate on one of them (an
	// action whose own error cache does not know them: preempt's, backfill's, reclaim's) asks
	// the batched predicate once for all of them: leftAnswer.
	left       map[string]struct{}
	leftOnce   sync.Once
	leftAnswer *predicatedTask
}

func parseExtenderConfig(arguments framework.Arguments) *extenderConfig {
	/*
		   actions: "reclaim, allocate, backfill, preempt"
		   tiers:
		   - plugins:
		     - name: priority
		     - name: gang
		     - name: conformance
		   - plugins:
		     - name: drf
		     - name: predicates
			 - name: extender
		       arguments:
				   extender.urlPrefix: http://127.0.0.1
				   extender.httpTimeout: 100ms
				   extender.onSessionOpenVerb: onSessionOpen
				   extender.onSessionCloseVerb: onSessionClose
				   extender.predicateVerb: predicate
				   extender.prioritizeVerb: prioritize
				   extender.preemptableVerb: preemptable
				   extender.reclaimableVerb: reclaimable
				   extender.queueOverusedVerb: queueOverused
				   extender.jobEnqueueableVerb: jobEnqueueable
				   extender.allocateFuncVerb: allocateFunc
				   extender.deallocateFuncVerb: deallocateFunc
				   extender.bodies: identifiers
				   extender.batchPredicateVerb: batchPredicate
				   extender.ignorable: true
				   extender.managedResources:
				   - nvidia.com/gpu
				   - nvidia.com/gpumem
		     - name: proportion
		     - name: nodeorder
	*/
	ec := &extenderConfig{}
	ec.urlPrefix, _ = arguments[ExtenderURLPrefix].(string)
	ec.onSessionOpenVerb, _ = arguments[ExtenderOnSessionOpenVerb].(string)
	ec.onSessionCloseVerb, _ = arguments[ExtenderOnSessionCloseVerb].(string)
	ec.predicateVerb, _ = arguments[ExtenderPredicateVerb].(string)
	ec.prioritizeVerb, _ = arguments[ExtenderPrioritizeVerb].(string)
	ec.preemptableVerb, _ = arguments[ExtenderPreemptableVerb].(string)
	ec.reclaimableVerb, _ = arguments[ExtenderReclaimableVerb].(string)
	ec.queueOverusedVerb, _ = arguments[ExtenderQueueOverusedVerb].(string)
	ec.jobEnqueueableVerb, _ = arguments[ExtenderJobEnqueueableVerb].(string)
	ec.jobReadyVerb, _ = arguments[ExtenderJobReadyVerb].(string)
	ec.allocateFuncVerb, _ = arguments[ExtenderAllocateFuncVerb].(string)
	ec.deallocateFuncVerb, _ = arguments[ExtenderDeallocateFuncVerb].(string)
	ec.batchPredicateVerb, _ = arguments[ExtenderBatchPredicateVerb].(string)
	ec.bodies = BodiesObjects
	if bodies, _ := arguments[ExtenderBodies].(string); bodies != "" {
		ec.bodies = bodies
	}

	arguments.GetBool(&ec.ignorable, ExtenderIgnorable)

	ec.httpTimeout = time.Second
	if httpTimeout, _ := arguments[ExtenderHTTPTimeout].(string); httpTimeout != "" {
		if timeoutDuration, err := time.ParseDuration(httpTimeout); err == nil {
			ec.httpTimeout = timeoutDuration
		}
	}
	managedResources, ok := framework.Get[[]string](arguments, ExtenderManagedResources)
	if ok {
		ec.managedResources = sets.New[string](managedResources...)
	}

	return ec
}

func New(arguments framework.Arguments) framework.Plugin {
	cfg := parseExtenderConfig(arguments)
	klog.V(4).Infof("Initialize extender plugin with endpoint address %s", cfg.urlPrefix)
	return &extenderPlugin{client: http.Client{Timeout: cfg.httpTimeout}, config: cfg}
}

func (ep *extenderPlugin) Name() string {
	return PluginName
}

func (ep *extenderPlugin) OnSessionOpen(ssn *framework.Session) {
	ep.negotiate()
	ep.session = string(ssn.UID)

	if ep.config.onSessionOpenVerb != "" {
		var req interface{} = &OnSessionOpenRequest{
			Jobs:           ssn.Jobs,
			Nodes:          ssn.Nodes,
			Queues:         ssn.Queues,
			NamespaceInfo:  ssn.NamespaceInfo,
			RevocableNodes: ssn.RevocableNodes,
		}
		if ep.identifiers {
			req = newOnSessionOpenIdentifiersRequest(ssn)
		}
		err := ep.send(ep.config.onSessionOpenVerb, req, nil)
		if err != nil {
			klog.Warningf("OnSessionClose failed with error %v", err)
		}
		if err != nil && !ep.config.ignorable {
			return
		}
	}

	if ep.batchPredicate {
		ep.nodeNames = make([]string, 0, len(ssn.NodeList))
		for _, node := range ssn.NodeList {
			ep.nodeNames = append(ep.nodeNames, node.Name)
		}
		ep.predicated.tasks = map[api.TaskID]*predicatedTask{}
		ep.predicated.groupFailed = map[string]map[string]struct{}{}
		ep.errorCache = allocateErrorCache(ssn)
		// Every action calls PrePredicateFn before a task's predicate pass: ask the extender
		// once, on the session's nodes, and answer the pass's PredicateFn calls from it.
		ssn.AddPrePredicateFn(ep.Name(), func(task *api.TaskInfo) error {
			if !ep.IsInterested(task) {
				return nil
			}
			group := ep.taskGroup(task)
			nodes, left := ep.predicated.candidates(group, ep.nodeNames)
			answer := ep.askBatchPredicate(task, nodes)
			answer.left = left
			ep.predicated.Lock()
			ep.predicated.tasks[task.UID] = answer
			if group != "" && answer.err == nil && len(answer.failed) > 0 {
				failed := ep.predicated.groupFailed[group]
				if failed == nil {
					failed = map[string]struct{}{}
					ep.predicated.groupFailed[group] = failed
				}
				for name := range answer.failed {
					failed[name] = struct{}{}
				}
			}
			ep.predicated.Unlock()
			return nil
		})
	}

	if ep.config.predicateVerb != "" || ep.batchPredicate {
		ssn.AddPredicateFn(ep.Name(), func(task *api.TaskInfo, node *api.NodeInfo) error {
			if !ep.IsInterested(task) {
				return nil
			}
			if ep.batchPredicate {
				return ep.predicateFromBatch(task, node)
			}

			resp := &PredicateResponse{}
			var req interface{} = &PredicateRequest{Task: task, Node: node}
			if ep.identifiers {
				req = &PredicateIdentifiersRequest{Session: ep.session, Task: string(task.UID), Job: string(task.Job), Node: node.Name}
			}
			err := ep.send(ep.config.predicateVerb, req, resp)
			if err != nil {
				klog.Warningf("Predicate failed with error %v", err)

				if ep.config.ignorable {
					return nil
				}
				return api.NewFitError(task, node, err.Error())
			}

			if len(resp.ErrorMessage) == 0 {
				return nil
			}
			// keep compatibility with old behavior: error messages length is not zero,
			// but didn't return a code, and code will be 0 for default. Change code to Error for corresponding
			if resp.Code == api.Success {
				resp.Code = api.Error
			}
			return api.NewFitErrWithStatus(task, node, &api.Status{Code: resp.Code, Reason: resp.ErrorMessage, Plugin: PluginName})
		})
	}

	if ep.config.prioritizeVerb != "" {
		ssn.AddBatchNodeOrderFn(ep.Name(), func(task *api.TaskInfo, nodes []*api.NodeInfo) (map[string]float64, error) {
			if !ep.IsInterested(task) {
				return map[string]float64{}, nil
			}

			resp := &PrioritizeResponse{}
			var req interface{} = &PrioritizeRequest{Task: task, Nodes: nodes}
			if ep.identifiers {
				names := make([]string, 0, len(nodes))
				for _, node := range nodes {
					names = append(names, node.Name)
				}
				req = &PrioritizeIdentifiersRequest{Session: ep.session, Task: string(task.UID), Job: string(task.Job), Nodes: names}
			}
			err := ep.send(ep.config.prioritizeVerb, req, resp)
			if err != nil {
				klog.Warningf("Prioritize failed with error %v", err)

				if ep.config.ignorable {
					return nil, nil
				}
				return nil, err
			}

			if resp.ErrorMessage == "" && resp.NodeScore != nil {
				return resp.NodeScore, nil
			}
			return nil, errors.New(resp.ErrorMessage)
		})
	}

	if ep.config.preemptableVerb != "" {
		ssn.AddPreemptableFn(ep.Name(), func(evictor *api.TaskInfo, evictees []*api.TaskInfo) ([]*api.TaskInfo, int) {
			if !ep.IsInterested(evictor) {
				return []*api.TaskInfo{}, util.Abstain
			}

			if ep.identifiers {
				victims, status, err := ep.victims(ep.config.preemptableVerb, evictor, evictees)
				if err != nil {
					klog.Warningf("Preemptable failed with error %v", err)

					if ep.config.ignorable {
						return nil, util.Permit
					}
					return nil, util.Reject
				}
				return victims, status
			}

			resp := &PreemptableResponse{}
			err := ep.send(ep.config.preemptableVerb, &PreemptableRequest{Evictor: evictor, Evictees: evictees}, resp)
			if err != nil {
				klog.Warningf("Preemptable failed with error %v", err)

				if ep.config.ignorable {
					return nil, util.Permit
				}
				return nil, util.Reject
			}

			return resp.Victims, resp.Status
		})
	}

	if ep.config.reclaimableVerb != "" {
		ssn.AddReclaimableFn(ep.Name(), func(evictor *api.TaskInfo, evictees []*api.TaskInfo) ([]*api.TaskInfo, int) {
			if !ep.IsInterested(evictor) {
				return []*api.TaskInfo{}, util.Abstain
			}

			if ep.identifiers {
				victims, status, err := ep.victims(ep.config.reclaimableVerb, evictor, evictees)
				if err != nil {
					klog.Warningf("Reclaimable failed with error %v", err)

					if ep.config.ignorable {
						return nil, util.Permit
					}
					return nil, util.Reject
				}
				return victims, status
			}

			resp := &ReclaimableResponse{}
			err := ep.send(ep.config.reclaimableVerb, &ReclaimableRequest{Evictor: evictor, Evictees: evictees}, resp)
			if err != nil {
				klog.Warningf("Reclaimable failed with error %v", err)

				if ep.config.ignorable {
					return nil, util.Permit
				}
				return nil, util.Reject
			}

			return resp.Victims, resp.Status
		})
	}

	if ep.config.jobEnqueueableVerb != "" {
		ssn.AddJobEnqueueableFn(ep.Name(), func(obj interface{}) int {
			job := obj.(*api.JobInfo)
			resp := &JobEnqueueableResponse{}
			var req interface{} = &JobEnqueueableRequest{Job: job}
			if ep.identifiers {
				req = &JobIdentifierRequest{Session: ep.session, Job: string(job.UID)}
			}
			err := ep.send(ep.config.jobEnqueueableVerb, req, resp)
			if err != nil {
				klog.Warningf("JobEnqueueable failed with error %v", err)

				if ep.config.ignorable {
					return util.Permit
				}
				return util.Reject
			}

			return resp.Status
		})
	}

	if ep.config.queueOverusedVerb != "" {
		ssn.AddOverusedFn(ep.Name(), func(obj interface{}) bool {
			queue := obj.(*api.QueueInfo)
			resp := &QueueOverusedResponse{}
			var req interface{} = &QueueOverusedRequest{Queue: queue}
			if ep.identifiers {
				req = &QueueOverusedIdentifierRequest{Session: ep.session, Queue: queue.Name}
			}
			err := ep.send(ep.config.queueOverusedVerb, req, resp)
			if err != nil {
				klog.Warningf("QueueOverused failed with error %v", err)

				return !ep.config.ignorable
			}

			return resp.Overused
		})
	}

	if ep.config.jobReadyVerb != "" {
		ssn.AddJobReadyFn(ep.Name(), func(obj interface{}) bool {
			job := obj.(*api.JobInfo)
			resp := &JobReadyResponse{}
			var req interface{} = &JobReadyRequest{Job: job}
			if ep.identifiers {
				req = &JobIdentifierRequest{Session: ep.session, Job: string(job.UID)}
			}
			err := ep.send(ep.config.jobReadyVerb, req, resp)
			if err != nil {
				klog.Warningf("JobReady failed with error %v", err)

				return !ep.config.ignorable
			}

			return resp.Status
		})
	}

	addEventHandler(ssn, ep)
}

func (ep *extenderPlugin) OnSessionClose(ssn *framework.Session) {
	if ep.config.onSessionCloseVerb != "" {
		var req interface{} = &OnSessionCloseRequest{}
		if ep.identifiers {
			req = &SessionRequest{Session: ep.session}
		}
		if err := ep.send(ep.config.onSessionCloseVerb, req, nil); err != nil {
			klog.Warningf("OnSessionClose failed with error %v", err)
		}
	}
}

func (ep *extenderPlugin) send(action string, args interface{}, result interface{}) error {
	err := ep.post(action, args, result)
	if err != nil {
		// Ask the extender's capabilities again at the next session: it may have been replaced.
		forgetCapabilities(ep.config.urlPrefix)
	}
	return err
}

func (ep *extenderPlugin) post(action string, args interface{}, result interface{}) error {
	out, err := json.Marshal(args)
	if err != nil {
		return err
	}

	url := strings.TrimRight(ep.config.urlPrefix, "/") + "/" + action

	req, err := http.NewRequest("POST", url, bytes.NewReader(out))
	if err != nil {
		return err
	}

	req.Header.Set("Content-Type", "application/json")

	resp, err := ep.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed %v with extender at URL %v, code %v", action, url, resp.StatusCode)
	}

	if result != nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, maxBodySize)
		return json.NewDecoder(resp.Body).Decode(result)
	}
	return nil
}

// IsInterested returns true if at least one extended resource requested by
// this pod is managed by this extender.
//
// This code is adapted from the Kubernetes project:
// https://github.com/kubernetes/kubernetes/blob/master/pkg/scheduler/extender.go
func (ep *extenderPlugin) IsInterested(task *api.TaskInfo) bool {
	if ep.config.managedResources.Len() == 0 {
		return true
	}
	if ep.hasManagedResources(task.Pod.Spec.Containers) {
		return true
	}
	if ep.hasManagedResources(task.Pod.Spec.InitContainers) {
		return true
	}
	return false
}

func (ep *extenderPlugin) hasManagedResources(containers []corev1.Container) bool {
	for _, container := range containers {
		if ep.hasResourcesInList(container.Resources.Requests) ||
			ep.hasResourcesInList(container.Resources.Limits) {
			return true
		}
	}
	return false
}

// hasResourcesInList checks if any resource in the given ResourceList is managed by this extender
func (ep *extenderPlugin) hasResourcesInList(resources corev1.ResourceList) bool {
	for resourceName := range resources {
		if ep.config.managedResources.Has(string(resourceName)) {
			return true
		}
	}
	return false
}

func addEventHandler(ssn *framework.Session, ep *extenderPlugin) {
	const (
		AllocateFunc   = "AllocateFunc"
		DeallocateFunc = "DeallocateFunc"
	)
	eventHandlerFunc := func(funcName string) func(event *framework.Event) {
		return func(event *framework.Event) {
			if event == nil {
				klog.Errorf("%s event nil.", funcName)
				return
			}
			// The session's nodes have changed: the batched predicate's answers kept are stale.
			ep.predicated.Lock()
			ep.predicated.events++
			ep.predicated.Unlock()
			if !ep.IsInterested(event.Task) {
				return
			}
			resp := &EventHandlerResponse{}
			var verb string
			switch funcName {
			case AllocateFunc:
				verb = ep.config.allocateFuncVerb
			case DeallocateFunc:
				verb = ep.config.deallocateFuncVerb
			}
			var req interface{} = &EventHandlerRequest{Task: event.Task}
			if ep.identifiers {
				req = &EventHandlerIdentifiersRequest{
					Session: ep.session,
					Task:    string(event.Task.UID),
					Job:     string(event.Task.Job),
					Node:    event.Task.NodeName,
					Status:  event.Task.Status.String(),
				}
			}
			err := ep.send(verb, req, resp)
			if err != nil {
				klog.Warningf("%s failed with error %v", funcName, err)

				if !ep.config.ignorable {
					event.Err = err
				}
			}
			if resp.ErrorMessage != "" {
				event.Err = errors.New(resp.ErrorMessage)
			}
		}
	}

	var eventHandler framework.EventHandler
	if ep.config.allocateFuncVerb != "" {
		eventHandler.AllocateFunc = eventHandlerFunc(AllocateFunc)
	}

	if ep.config.deallocateFuncVerb != "" {
		eventHandler.DeallocateFunc = eventHandlerFunc(DeallocateFunc)
	}

	ssn.AddEventHandler(&eventHandler)
}

// newOnSessionOpenIdentifiersRequest names the session and the objects it holds, each list sorted.
func newOnSessionOpenIdentifiersRequest(ssn *framework.Session) *OnSessionOpenIdentifiersRequest {
	req := &OnSessionOpenIdentifiersRequest{
		Session:        string(ssn.UID),
		Jobs:           make([]string, 0, len(ssn.Jobs)),
		Nodes:          make([]string, 0, len(ssn.Nodes)),
		Queues:         make([]string, 0, len(ssn.Queues)),
		RevocableNodes: make([]string, 0, len(ssn.RevocableNodes)),
	}
	for id := range ssn.Jobs {
		req.Jobs = append(req.Jobs, string(id))
	}
	for name := range ssn.Nodes {
		req.Nodes = append(req.Nodes, name)
	}
	for _, queue := range ssn.Queues {
		req.Queues = append(req.Queues, queue.Name)
	}
	for name := range ssn.RevocableNodes {
		req.RevocableNodes = append(req.RevocableNodes, name)
	}
	sort.Strings(req.Jobs)
	sort.Strings(req.Nodes)
	sort.Strings(req.Queues)
	sort.Strings(req.RevocableNodes)
	return req
}

// allocateErrorCache is allocate's predicateErrorCacheEnable, read as allocate reads it.
func allocateErrorCache(ssn *framework.Session) bool {
	enabled := true
	framework.GetArgOfActionFromConf(ssn.Configurations, "allocate").GetBool(&enabled, conf.EnablePredicateErrCacheKey)
	return enabled
}

// taskGroup is the key of allocate's predicate error cache for task (its job and task role), or
// "" where that cache is off: allocate's predicateErrorCacheEnable is false, or the task has no
// role (util.PredicateHelper's rule, volcano-sh/volcano#3527).
func (ep *extenderPlugin) taskGroup(task *api.TaskInfo) string {
	if !ep.errorCache || len(task.TaskRole) == 0 {
		return ""
	}
	return fmt.Sprintf("%s/%s", task.Job, task.TaskRole)
}

// candidates are the nodes a batched predicate of a task of group names: every node but those
// a task of the same group failed on this session, which allocate's predicate helper answers
// from its error cache without asking any plugin again; and the nodes left out.
func (p *predicatedTasks) candidates(group string, nodes []string) ([]string, map[string]struct{}) {
	if group == "" {
		return nodes, nil
	}
	p.RLock()
	defer p.RUnlock()
	failed := p.groupFailed[group]
	if len(failed) == 0 {
		return nodes, nil
	}
	asked := make([]string, 0, len(nodes))
	left := make(map[string]struct{}, len(failed))
	for _, name := range nodes {
		if _, ok := failed[name]; ok {
			left[name] = struct{}{}
			continue
		}
		asked = append(asked, name)
	}
	return asked, left
}

// askBatchPredicate asks the batched predicate of task on nodes. A failed call fails every node,
// or passes every node when the extender is ignorable, as the per-node predicate does.
func (ep *extenderPlugin) askBatchPredicate(task *api.TaskInfo, nodes []string) *predicatedTask {
	ep.predicated.RLock()
	answer := &predicatedTask{events: ep.predicated.events}
	ep.predicated.RUnlock()

	resp := &BatchPredicateResponse{}
	err := ep.send(ep.config.batchPredicateVerb, &BatchPredicateRequest{
		Session: ep.session,
		Task:    string(task.UID),
		Job:     string(task.Job),
		Nodes:   nodes,
	}, resp)
	if err != nil {
		klog.Warningf("BatchPredicate failed with error %v", err)

		if !ep.config.ignorable {
			answer.err = err
		}
		return answer
	}
	answer.failed = resp.FailedNodes
	return answer
}

// askLeftOut answers the nodes answer's batch left out, asked in one batched predicate the first
// time a predicate names one of them (the pass's 16 parallel predicates wait for that one call).
func (ep *extenderPlugin) askLeftOut(task *api.TaskInfo, answer *predicatedTask) *predicatedTask {
	answer.leftOnce.Do(func() {
		names := make([]string, 0, len(answer.left))
		for name := range answer.left {
			names = append(names, name)
		}
		sort.Strings(names)
		answer.leftAnswer = ep.askBatchPredicate(task, names)
	})
	return answer.leftAnswer
}

// predicateFromBatch answers the predicate of task on node from the batched predicate's answer
// of the task's pass. Without one (asked outside a pass, as preempt asks the nominated node, or
// after an allocate or deallocate event) it asks the batched predicate on this node alone; on a
// node the batch left out, it asks for every node left out (askLeftOut).
func (ep *extenderPlugin) predicateFromBatch(task *api.TaskInfo, node *api.NodeInfo) error {
	ep.predicated.RLock()
	answer, found := ep.predicated.tasks[task.UID]
	current := found && answer.events == ep.predicated.events
	ep.predicated.RUnlock()
	if !current {
		answer = ep.askBatchPredicate(task, []string{node.Name})
	} else if _, left := answer.left[node.Name]; left {
		answer = ep.askLeftOut(task, answer)
	}

	if answer.err != nil {
		return api.NewFitError(task, node, answer.err.Error())
	}
	failure, failed := answer.failed[node.Name]
	if !failed {
		return nil
	}
	// As the per-node predicate: a failure without a code is an Error.
	code := failure.Code
	if code == api.Success {
		code = api.Error
	}
	return api.NewFitErrWithStatus(task, node, &api.Status{Code: code, Reason: failure.Reason, Plugin: PluginName})
}

// victims asks verb (preemptable or reclaimable) in identifiers mode and maps the UIDs it
// answers back to the evictees sent; a UID that is not one of them is ignored.
func (ep *extenderPlugin) victims(verb string, evictor *api.TaskInfo, evictees []*api.TaskInfo) ([]*api.TaskInfo, int, error) {
	req := &PreemptableIdentifiersRequest{
		Session:  ep.session,
		Evictor:  TaskIdentifier{UID: string(evictor.UID), Job: string(evictor.Job)},
		Evictees: make([]TaskIdentifier, 0, len(evictees)),
	}
	byUID := make(map[api.TaskID]*api.TaskInfo, len(evictees))
	for _, evictee := range evictees {
		req.Evictees = append(req.Evictees, TaskIdentifier{UID: string(evictee.UID), Job: string(evictee.Job)})
		byUID[evictee.UID] = evictee
	}

	resp := &PreemptableIdentifiersResponse{}
	if err := ep.send(verb, req, resp); err != nil {
		return nil, util.Reject, err
	}
	victims := make([]*api.TaskInfo, 0, len(resp.Victims))
	for _, uid := range resp.Victims {
		victim, found := byUID[api.TaskID(uid)]
		if !found {
			klog.Warningf("%s answered victim %s, which is not one of the evictees", verb, uid)
			continue
		}
		victims = append(victims, victim)
	}
	return victims, resp.Status, nil
}
