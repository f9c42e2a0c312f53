"""The session snapshot Volcano's cache would send, derived from the cluster's objects.

Follows Volcano v1.14.1 (``pkg/scheduler/api`` and ``pkg/scheduler/cache``), building from
scratch the state the cache keeps incrementally:

* tasks: ``NewTaskInfo`` (job_info.go) and ``getTaskStatus`` (helpers.go);
* which pods: the pod informer's filter (cache.go ``addEventHandler``): pods of one of the
  scheduler's names, and any pod already bound to a node (a DaemonSet's pods use the node's
  resources too); a pod joins a job only through its ``scheduling.k8s.io/group-name``
  annotation (``getJobID``), whatever its scheduler;
* in Volcano's multi-scheduler mode (``MULTI_SCHEDULER_ENABLE=true``, Caldera given the
  scheduler's environment): only the pods, PodGroups and nodes the replicas' hash ring gives
  this replica (``responsibleForPod``, ``responsibleForPodGroup``, ``responsibleForNode`` in
  util.go; :mod:`app.cluster_state.multi_scheduler`);
* node sharding (``--scheduler-sharding-mode hard|soft``, v1.14 and later) changes nothing
  here: ``Snapshot`` (cache.go) puts every Ready node in ``ClusterInfo.Nodes`` and the shard's
  only in ``NodesInShard`` (``RefreshNodeShards``, shard_coordinator.go), which the extender's
  ``OnSessionOpenRequest`` (plugins/extender/argument.go) does not carry; the NodeShard
  informer touches no pod, PodGroup or node filter (same in v1.15, whose pluggable shard
  policies are the sharding controller's, ``pkg/controllers/sharding/policy``, choosing
  ``spec.nodesDesired``);
* nodes: ``NewNodeInfo`` and ``AddTask`` (node_info.go); a terminated task (Succeeded,
  Failed) is not on its node (``addTask``, event_handlers.go); a node that is not watched (a
  pod bound to a node the cache never saw) is ``NotReady`` and left out, like ``Snapshot``;
* jobs: ``SetPodGroup`` and ``AddTaskInfo`` (job_info.go), the default queue when the
  PodGroup names none (``setPodGroup``), the priority of the PodGroup's PriorityClass or the
  global default's (``Snapshot``), and only jobs with a PodGroup and an existing queue;
* queues: ``NewQueueInfo`` (queue_info.go); namespaces: ``NamespaceCollection`` (namespace_info.go).

Only the fields of ``schemas.api`` are filled: they are what the plugins read.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import msgspec

from app.cluster_state.multi_scheduler import MultiScheduler
from app.cluster_state.objects import ClusterObjects, WatchedNode, WatchedPod, pod_resource_request
from app.cluster_state.overlay import Placement
from plugins.support.resources import (
    add_in_place,
    clone,
    is_empty,
    less_equal_zero,
    new_resource,
    sub_without_assert_in_place,
)
from schemas.api import (
    ALLOCATED_STATUSES,
    DisruptionBudget,
    JobInfo,
    NamespaceInfo,
    NodeInfo,
    NodePhase,
    NodeState,
    NodeUsage,
    PodGroup,
    Queue,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.goduration import GO_ZERO_TIME, DurationError, parse_go_duration
from schemas.k8s import ObjectMeta, ResourceQuotaStatus
from schemas.requests import OnSessionOpenRequest

GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_PRIORITY = "volcano.sh/task-priority"
PREEMPTABLE = "volcano.sh/preemptable"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
WAITING_TIME_KEYS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
"""``v1beta1.JobWaitingTime`` first, then ``api.JobWaitingTime``."""
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
OVERSUBSCRIPTION_CPU = "volcano.sh/oversubscription-cpu"
OVERSUBSCRIPTION_MEMORY = "volcano.sh/oversubscription-memory"

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_GO_INT = re.compile(r"^[+-]?[0-9]+$")
_GO_FLOAT = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_INT32 = (-(1 << 31), (1 << 31) - 1)


def _go_bool(text: str) -> bool | None:
    """``strconv.ParseBool``: None when Go would return an error."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


@dataclass(frozen=True)
class Settings:
    """What the scheduler's command line decides (``--scheduler-name``, ``--default-queue``)
    and its environment (the multi-scheduler ring, ``multi_scheduler.from_env``)."""

    scheduler_names: Collection[str] = ("volcano",)
    default_queue: str = "default"
    multi_scheduler: MultiScheduler | None = None


# --- tasks ------------------------------------------------------------------------------------


def task_status(phase: str, deleting: bool, node_name: str) -> TaskStatus:
    """``getTaskStatus`` (helpers.go)."""
    if phase == "Running":
        return TaskStatus.Releasing if deleting else TaskStatus.Running
    if phase == "Pending":
        if deleting:
            return TaskStatus.Releasing
        return TaskStatus.Bound if node_name else TaskStatus.Pending
    if phase == "Succeeded":
        return TaskStatus.Succeeded
    if phase == "Failed":
        return TaskStatus.Failed
    return TaskStatus.Unknown


def new_task_info(watched: WatchedPod) -> TaskInfo:
    """``NewTaskInfo`` (job_info.go)."""
    pod = watched.pod
    meta = pod.metadata
    annotations = (meta.annotations if meta else None) or {}
    labels = (meta.labels if meta else None) or {}
    namespace = meta.namespace if meta else ""
    group = annotations.get(GROUP_NAME, "")
    role = annotations.get(TASK_SPEC) or labels.get(TASK_SPEC) or ""
    priority = 1 if watched.priority is None else watched.priority
    text = annotations.get(TASK_PRIORITY)
    if text is not None and _GO_INT.match(text) and _INT32[0] <= int(text) <= _INT32[1]:
        priority = int(text)
    resreq = clone(watched.resreq) if watched.resreq is not None else pod_resource_request(watched)
    spec = pod.spec
    return TaskInfo(
        UID=meta.uid if meta else "",
        Job=f"{namespace}/{group}" if group else "",
        Name=meta.name if meta else "",
        Namespace=namespace,
        TaskRole=role,
        Resreq=resreq,
        NodeName=watched.node_name,
        Status=task_status(
            pod.status.phase if pod.status else "", watched.deleting, watched.node_name
        ),
        Priority=priority,
        SchGated=bool(spec is not None and spec.schedulingGates),
        BestEffort=is_empty(resreq),
        Pod=pod,
    )


def _apply_placement(task: TaskInfo, watched: WatchedPod, placement: Placement | None) -> bool:
    """Give ``task`` the status Volcano's cache holds when the cluster has not caught up;
    return True when the cluster already shows it (the placement can be forgotten)."""
    if placement is None:
        return False
    if placement.status == TaskStatus.Binding:
        if watched.node_name or task.Status != TaskStatus.Pending:
            return True
        task.Status = TaskStatus.Binding
        task.NodeName = placement.node_name
        write_node(task, placement.node_name)
        return False
    if placement.status == TaskStatus.Pending:
        # The node an allocation wrote into Volcano's pod object (overlay.py): there until an
        # update of the pod replaces the object.
        meta = watched.pod.metadata
        if watched.node_name or meta is None or meta.resourceVersion != placement.pod_version:
            return True
        write_node(task, placement.node_name)
        return False
    # Releasing: the pod's deletion (deletionTimestamp) shows it.
    if watched.deleting or task.Status not in (TaskStatus.Running, TaskStatus.Bound):
        return True
    task.Status = TaskStatus.Releasing
    return False


def write_node(task: TaskInfo, node: str) -> None:
    """``task.Pod.Spec.NodeName = hostname`` (``Statement.Allocate``), on a copy of the pod:
    the watched object is shared by every derivation."""
    pod = task.Pod
    if pod is not None and pod.spec is not None and pod.spec.nodeName != node:
        task.Pod = msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, nodeName=node)
        )


# --- nodes ------------------------------------------------------------------------------------


def new_node_info(watched: WatchedNode) -> NodeInfo:
    """``NewNodeInfo`` (node_info.go): Idle, Allocatable and Capacity from the node's status
    plus the oversubscription annotations; ``setNodeState`` makes every watched node Ready."""
    meta = watched.node.metadata
    labels = (meta.labels if meta else None) or {}
    annotations = (meta.annotations if meta else None) or {}
    oversubscription = Resource(
        MilliCPU=_go_float(annotations.get(OVERSUBSCRIPTION_CPU)),
        Memory=_go_float(annotations.get(OVERSUBSCRIPTION_MEMORY)),
    )
    allocatable = add_in_place(
        clone(watched.allocatable_resource)
        if watched.allocatable_resource is not None
        else new_resource(watched.allocatable),
        oversubscription,
    )
    info = NodeInfo(
        Name=meta.name if meta else "",
        Node=watched.node,
        State=NodeState(Phase=NodePhase.Ready, Reason=""),
        Releasing=Resource(),
        Pipelined=Resource(),
        Idle=clone(allocatable),
        Used=Resource(),
        Allocatable=allocatable,
        Capacity=add_in_place(
            clone(watched.capacity_resource)
            if watched.capacity_resource is not None
            else new_resource(watched.capacity),
            oversubscription,
        ),
        ResourceUsage=NodeUsage(MetricsTime=GO_ZERO_TIME, CPUUsageAvg={}, MEMUsageAvg={}),
        RevocableZone=labels.get(REVOCABLE_ZONE, ""),
    )
    _set_tasks(info, {})
    return info


def _go_float(text: str | None) -> float:
    """``strconv.ParseFloat`` whose error is ignored: 0 on anything Go would refuse."""
    if text is None or not _GO_FLOAT.match(text):
        return 0.0
    return float(text)


def _set_tasks(info: NodeInfo, tasks: dict[str, TaskInfo]) -> None:
    # NodeInfo.Tasks is a cached property over the snapshot's raw bytes: a derived node
    # provides the decoded value directly.
    info.__dict__["Tasks"] = tasks


def add_task_to_node(info: NodeInfo, task: TaskInfo) -> bool:
    """``NodeInfo.AddTask``: Releasing counts in Releasing and Used, Binding only if it fits the
    node's Idle (else refused: False), any other status in Used; all but Pipelined leave Idle."""
    tasks = info.Tasks
    assert tasks is not None
    key = f"{task.Namespace}/{task.Name}"
    if key in tasks:
        return False
    assert info.Idle is not None and info.Used is not None and info.Releasing is not None
    resreq = task.Resreq or Resource()
    if task.Status == TaskStatus.Pipelined:
        add_in_place(info.Pipelined or Resource(), resreq)
    else:
        if task.Status == TaskStatus.Binding and not less_equal_zero(resreq, info.Idle):
            return False
        sub_without_assert_in_place(info.Idle, resreq)
        add_in_place(info.Used, resreq)
        if task.Status == TaskStatus.Releasing:
            add_in_place(info.Releasing, resreq)
    tasks[key] = task
    return True


# --- jobs -------------------------------------------------------------------------------------


def _waiting_time(annotations: Mapping[str, str]) -> int | None:
    """``extractWaitingTime``: the first key present decides; an unparseable or non-positive
    duration is no waiting time, and the second key is then read."""
    for key in WAITING_TIME_KEYS:
        text = annotations.get(key)
        if text is None:
            continue
        try:
            nanos = parse_go_duration(text)
        except DurationError:
            continue
        if nanos > 0:
            return nanos
    return None


def _pg_bool(pg: PodGroup, key: str) -> bool:
    """``extractPreemptable``: the annotation, else the label; invalid is false."""
    for source in (pg.metadata.annotations, pg.metadata.labels):
        if source and key in source:
            return _go_bool(source[key]) is True
    return False


def _revocable_zone(annotations: Mapping[str, str]) -> str:
    if REVOCABLE_ZONE in annotations:
        return "*" if annotations[REVOCABLE_ZONE] == "*" else ""
    return "*" if _go_bool(annotations.get(PREEMPTABLE, "")) is True else ""


def _budget(annotations: Mapping[str, str]) -> DisruptionBudget:
    if JDB_MIN_AVAILABLE in annotations:
        return DisruptionBudget(MinAvailable=annotations[JDB_MIN_AVAILABLE])
    if JDB_MAX_UNAVAILABLE in annotations:
        return DisruptionBudget(MaxUnavailable=annotations[JDB_MAX_UNAVAILABLE])
    return DisruptionBudget()


def new_job_info(uid: str) -> JobInfo:
    """``NewJobInfo``: empty maps and resources, as the snapshot carries them."""
    return JobInfo(
        UID=uid,
        Tasks={},
        TaskMinAvailable={},
        Allocated=Resource(),
        TotalRequest=Resource(),
        Budget=DisruptionBudget(),
    )


def set_pod_group(job: JobInfo, pg: PodGroup, default_queue: str) -> None:
    """``JobInfo.SetPodGroup`` and the cache's ``setPodGroup`` (default queue)."""
    meta, spec = pg.metadata, pg.spec
    annotations = meta.annotations or {}
    job.Name = meta.name
    job.Namespace = meta.namespace
    job.MinAvailable = spec.min_member
    job.Queue = spec.queue or default_queue
    job.CreationTimestamp = meta.creationTimestamp
    job.WaitingTime = _waiting_time(annotations)
    job.Preemptable = _pg_bool(pg, PREEMPTABLE)
    job.RevocableZone = _revocable_zone(annotations)
    job.Budget = _budget(annotations)
    job.TaskMinAvailable = dict(spec.min_task_member or {})
    job.TaskMinAvailableTotal = sum(job.TaskMinAvailable.values())
    job.PgUID = meta.uid
    job.PodGroup = pg


def add_task_to_job(job: JobInfo, task: TaskInfo) -> None:
    """``JobInfo.AddTaskInfo``: every task in TotalRequest, the allocated ones in Allocated."""
    assert job.Tasks is not None and job.TotalRequest is not None and job.Allocated is not None
    job.Tasks[task.UID] = task
    add_in_place(job.TotalRequest, task.Resreq)
    if task.Status in ALLOCATED_STATUSES:
        add_in_place(job.Allocated, task.Resreq)


# --- the snapshot -----------------------------------------------------------------------------


@dataclass
class Derived:
    """A derived snapshot, and the placements the cluster has caught up with."""

    snapshot: OnSessionOpenRequest
    settled: set[str]


def _ring_key(meta: ObjectMeta | None) -> str:
    """The ring's key of a pod or PodGroup: its first owner reference's name, else its own."""
    if meta is None:
        return ""
    owners = meta.ownerReferences
    return owners[0].name if owners else meta.name


def keeps_pod(watched: WatchedPod, settings: Settings) -> bool:
    """The pod informer's filter: ``responsibleForPod``, else bound to a node
    ``responsibleForNode`` gives this scheduler (any node without a multi-scheduler ring)."""
    multi = settings.multi_scheduler
    if watched.scheduler_name in settings.scheduler_names and (
        multi is None or multi.owns(_ring_key(watched.pod.metadata))
    ):
        return True
    return bool(watched.node_name) and (multi is None or multi.owns(watched.node_name))


def keeps_podgroup(pg: PodGroup, settings: Settings) -> bool:
    """The PodGroup informer's filter: ``responsibleForPodGroup``."""
    multi = settings.multi_scheduler
    return multi is None or multi.owns(_ring_key(pg.metadata))


def keeps_node(name: str, settings: Settings) -> bool:
    """``nodeCanAddCache``'s ``responsibleForNode``: a node the cache never adds."""
    multi = settings.multi_scheduler
    return multi is None or multi.owns(name)


def derive(
    objects: ClusterObjects,
    settings: Settings | None = None,
    placements: Mapping[str, Placement] | None = None,
) -> Derived:
    """The ``OnSessionOpenRequest`` Volcano's cache would send for ``objects``."""
    settings = settings or Settings()
    placements = placements or {}
    settled: set[str] = set()

    nodes: dict[str, NodeInfo] = {}
    for watched_node in objects.nodes.values():
        meta = watched_node.node.metadata
        if keeps_node(meta.name if meta else "", settings):
            info = new_node_info(watched_node)
            nodes[info.Name] = info

    jobs: dict[str, JobInfo] = {}
    for key, pg in objects.podgroups.items():
        if not keeps_podgroup(pg, settings):
            continue
        uid = f"{pg.metadata.namespace}/{pg.metadata.name}" if pg.metadata.name else key
        job = jobs.get(uid)
        if job is None:
            job = jobs[uid] = new_job_info(uid)
        set_pod_group(job, pg, settings.default_queue)

    for watched in objects.pods.values():
        if not keeps_pod(watched, settings):
            continue
        task = new_task_info(watched)
        if _apply_placement(task, watched, placements.get(task.UID)):
            settled.add(task.UID)
        if task.NodeName and task.Status not in (TaskStatus.Succeeded, TaskStatus.Failed):
            node = nodes.get(task.NodeName)
            refused = node is None or not add_task_to_node(node, task)
            if refused and task.Status == TaskStatus.Binding:  # AddBindTask refuses it
                task.Status, task.NodeName = TaskStatus.Pending, ""
        if task.Job:
            job = jobs.get(task.Job)
            if job is None:
                job = jobs[task.Job] = new_job_info(task.Job)
            add_task_to_job(job, task)
    settled.update(uid for uid in placements if uid not in _pod_uids(objects))

    queues = {
        queue.metadata.name: new_queue_info(queue)
        for queue in objects.queues.values()
        if queue.metadata.name
    }
    default_priority, class_values = _priorities(objects)
    snapshot_jobs: dict[str, JobInfo] = {}
    for uid, job in jobs.items():
        if job.PodGroup is None or job.Queue not in queues:
            continue
        job.Priority = class_values.get(job.PodGroup.spec.priority_class_name, default_priority)
        snapshot_jobs[uid] = job

    return Derived(
        snapshot=OnSessionOpenRequest(
            Jobs=snapshot_jobs,
            Nodes=nodes,
            Queues=queues,
            NamespaceInfo=namespace_infos(objects),
        ),
        settled=settled,
    )


def _pod_uids(objects: ClusterObjects) -> set[str]:
    return {w.pod.metadata.uid for w in objects.pods.values() if w.pod.metadata}


def _priorities(objects: ClusterObjects) -> tuple[int, dict[str, int]]:
    """The global default's value (0 without one) and each class's value. With several global
    defaults Volcano keeps whichever its informer delivered last; here the last by name."""
    default = 0
    values: dict[str, int] = {}
    for name in sorted(objects.priority_classes):
        pc = objects.priority_classes[name]
        values[pc.name] = pc.value
        if pc.global_default:
            default = pc.value
    return default, values


def new_queue_info(queue: Queue) -> QueueInfo:
    """``NewQueueInfo`` (queue_info.go): UID and Name are the queue's name."""
    annotations = queue.metadata.annotations or {}
    return QueueInfo(
        UID=queue.metadata.name,
        Name=queue.metadata.name,
        Weight=queue.spec.weight,
        Weights=annotations.get(HIERARCHY_WEIGHTS, ""),
        Hierarchy=annotations.get(HIERARCHY, ""),
        Queue=queue,
    )


def namespace_infos(objects: ClusterObjects) -> dict[str, NamespaceInfo]:
    """``NamespaceCollection.Snapshot``: per namespace that has had quotas, quota name to its
    status."""
    infos: dict[str, NamespaceInfo] = {
        namespace: NamespaceInfo(Name=namespace, QuotaStatus={})
        for namespace in objects.quota_namespaces
    }
    for quota in objects.quotas.values():
        info = infos.setdefault(
            quota.namespace, NamespaceInfo(Name=quota.namespace, QuotaStatus={})
        )
        assert info.QuotaStatus is not None
        info.QuotaStatus[quota.name] = ResourceQuotaStatus(
            hard=quota.status.hard, used=quota.status.used
        )
    return infos
