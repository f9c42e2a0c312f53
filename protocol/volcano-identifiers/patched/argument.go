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

import "volcano.sh/volcano/pkg/scheduler/api"

type OnSessionOpenRequest struct {
	Jobs           map[api.JobID]*api.JobInfo
	Nodes          map[string]*api.NodeInfo
	Queues         map[api.QueueID]*api.QueueInfo
	NamespaceInfo  map[api.NamespaceName]*api.NamespaceInfo
	RevocableNodes map[string]*api.NodeInfo
	NodeList       []string
}

type OnSessionOpenResponse struct{}

type OnSessionCloseRequest struct{}
type OnSessionCloseResponse struct{}

type PredicateRequest struct {
	Task *api.TaskInfo `json:"task"`
	Node *api.NodeInfo `json:"node"`
}

type PredicateResponse struct {
	ErrorMessage string `json:"status"`
	Code         int    `json:"code"`
}

type PrioritizeRequest struct {
	Task  *api.TaskInfo   `json:"task"`
	Nodes []*api.NodeInfo `json:"nodes"`
}

type PrioritizeResponse struct {
	NodeScore    map[string]float64 `json:"nodeScore"`
	ErrorMessage string             `json:"errorMessage"`
}

type PreemptableRequest struct {
	Evictor  *api.TaskInfo   `json:"evictor"`
	Evictees []*api.TaskInfo `json:"evictees"`
}

type PreemptableResponse struct {
	Status  int             `json:"status"`
	Victims []*api.TaskInfo `json:"victims"`
}

type ReclaimableRequest PreemptableRequest
type ReclaimableResponse PreemptableResponse

type JobEnqueueableRequest struct {
	Job *api.JobInfo `json:"job"`
}

type JobEnqueueableResponse struct {
	Status int `json:"status"`
}

type QueueOverusedRequest struct {
	Queue *api.QueueInfo `json:"queue"`
}
type QueueOverusedResponse struct {
	Overused bool `json:"overused"`
}

type JobReadyRequest struct {
	Job *api.JobInfo `json:"job"`
}

type JobReadyResponse struct {
	Status bool `json:"status"`
}

type EventHandlerRequest struct {
	Task *api.TaskInfo `json:"task"`
}

type EventHandlerResponse struct {
	ErrorMessage string `json:"errorMessage"`
}

// Capabilities is the extender's answer to GET <urlPrefix>/capabilities: the bodies it reads
// and whether it answers the batched predicate.
type Capabilities struct {
	Bodies         []string `json:"bodies"`
	BatchPredicate bool     `json:"batchPredicate"`
}

// The requests and responses below are those of identifiers mode (extender.bodies: identifiers):
// each call names the session and the objects it is about instead of marshalling them.

// OnSessionOpenIdentifiersRequest carries the session's id and its roster: the keys of
// ssn.Jobs, ssn.Nodes, ssn.Queues and ssn.RevocableNodes.
type OnSessionOpenIdentifiersRequest struct {
	Session        string   `json:"session"`
	Jobs           []string `json:"jobs"`
	Nodes          []string `json:"nodes"`
	Queues         []string `json:"queues"`
	RevocableNodes []string `json:"revocableNodes"`
}

// SessionRequest is the body of onSessionClose in identifiers mode.
type SessionRequest struct {
	Session string `json:"session"`
}

type PredicateIdentifiersRequest struct {
	Session string `json:"session"`
	Task    string `json:"task"`
	Job     string `json:"job"`
	Node    string `json:"node"`
}

// BatchPredicateRequest asks the predicate of one task on the named nodes at once.
type BatchPredicateRequest struct {
	Session string   `json:"session"`
	Task    string   `json:"task"`
	Job     string   `json:"job"`
	Nodes   []string `json:"nodes"`
}

// BatchPredicateResponse names the nodes that fail; a node absent passes.
type BatchPredicateResponse struct {
	FailedNodes map[string]NodeFailure `json:"failedNodes"`
}

// NodeFailure is why a node fails: Code is an api.Status code, as the predicate's is.
type NodeFailure struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

type PrioritizeIdentifiersRequest struct {
	Session string   `json:"session"`
	Task    string   `json:"task"`
	Job     string   `json:"job"`
	Nodes   []string `json:"nodes"`
}

// TaskIdentifier names a task and its job.
type TaskIdentifier struct {
	UID string `json:"uid"`
	Job string `json:"job"`
}

// PreemptableIdentifiersRequest is the body of preemptable and reclaimable in identifiers mode.
type PreemptableIdentifiersRequest struct {
	Session  string           `json:"session"`
	Evictor  TaskIdentifier   `json:"evictor"`
	Evictees []TaskIdentifier `json:"evictees"`
}

// PreemptableIdentifiersResponse answers the victims as UIDs of the evictees sent (preemptable
// and reclaimable).
type PreemptableIdentifiersResponse struct {
	Status  int      `json:"status"`
	Victims []string `json:"victims"`
}

// JobIdentifierRequest is the body of jobEnqueueable and jobReady in identifiers mode.
type JobIdentifierRequest struct {
	Session string `json:"session"`
	Job     string `json:"job"`
}

type QueueOverusedIdentifierRequest struct {
	Session string `json:"session"`
	Queue   string `json:"queue"`
}

// EventHandlerIdentifiersRequest is the body of allocateFunc and deallocateFunc in identifiers
// mode: the task, its job, its node and its status after the event (api.TaskStatus's name).
type EventHandlerIdentifiersRequest struct {
	Session string `json:"session"`
	Task    string `json:"task"`
	Job     string `json:"job"`
	Node    string `json:"node"`
	Status  string `json:"status"`
}
