"""``task-topology``: score nodes so that the tasks of a job with affinity between its task kinds
land together, and those with anti-affinity apart.

Follows ``pkg/scheduler/plugins/task-topology/{topology.go,manager.go,bucket.go,util.go}`` of
volcano-sh/volcano at v1.15.1 (0a56ed331), with ``Resource.LessPartly``, ``LessEqual`` and
``Sub`` of ``api/resource_info.go``. The files are the same from v1.13.0 (the first release
whose extender sends allocate events, which this plugin requires) to v1.14.1, v1.15.1 and master
ed72c7c81, except for the import path of ``MaxNodeScore`` (100 throughout). Older releases
derived task names from pod names (≤ v1.9) and cannot send allocate, so they are not served.

A job opts in with PodGroup annotations (the job controller copies the vcjob's):
``volcano.sh/task-topology-affinity`` and ``volcano.sh/task-topology-anti-affinity`` (groups
separated by ``;``, task names within a group by ``,``; a group of one name is self-(anti-)
affinity) and ``volcano.sh/task-topology-task-order`` (``a,b,c``). Names are split without
trimming, empty names are skipped, and each name must be the ``TaskRole`` of some task of the
job and appear once per group; otherwise the job is left alone (logged at debug level with
upstream's message). A pod belongs to its task by its ``volcano.sh/task-spec`` annotation only
(``TaskRole`` also accepts the label, so a label-only pod passes validation and stays out of
the buckets, as upstream).

At session open, for every job with a Pending task and valid annotations, the job's tasks that
take part in some (anti-)affinity are sorted (tasks on a node first, by node name; then the task
order, the affinity priority self-anti 4 > inter-affinity 3 > self-affinity 2 > inter-anti 1, and
the pod name) and put in buckets: one per node for placed tasks, and for each other task the
first bucket of highest affinity (ties to the bucket with the smaller request), or a new bucket
when that affinity is negative.

``prioritize`` (``NodeOrderFn``) for a task in a bucket, on a node whose ``Idle + Releasing``
holds the task's request (else 0; a scalar the node lacks counts, even ``pods``): the bucket's
tasks placed on that node, minus the anti-affinity count of tasks allocated there this session,
plus the bucket's unplaced tasks, minus one per other unplaced task that must be taken out of the
bucket's request until the rest fits the node. The integer times ``task-topology.weight``, then
``* 100 / the largest bucket size`` of the job. ``allocate`` (``AllocateFunc``) records the task
on its node and moves it from the bucket's unplaced tasks to its placed ones.

Upstream registers no ``DeallocateFunc``: an allocation Volcano later rolls back (a discarded
statement, an eviction) stays counted, and ``deallocate`` is deliberately not implemented, to
answer exactly as the in-tree plugin does. ``requires_verbs`` is ``("allocate",)``: without
allocate events every score after the first placement of a session would differ.

Arguments: ``task-topology.weight`` (``GetInt``, default 1, no range check; an int outside Go's
64-bit range is not a Go int and keeps the default; the product ``score * weight`` wraps like
Go's int64).

Deliberate choices:

- Upstream takes unplaced tasks out of the bucket in Go map order (random) until the rest
  fits; Caldera takes them in the order they entered the bucket (the sort order above), so the
  score is deterministic. Which tasks are removed only changes how many must go.
- Where upstream's asserting ``Resource.Sub`` would panic (a bucket's request short of a task
  being allocated twice in a session, say), the subtraction is floored at zero per dimension and
  reported through ``ssn.clamped``.
- Bound tasks sorted onto the same node are interchangeable, so Go's unstable sort cannot change
  the buckets; the request's scalars are summed in the payload's order (sorted by name).
- A task without a pod (no task-spec; its own UID stands for the pod's), a node without
  ``Idle``: treated as empty, where Go would panic.

With Caldera's ``managedResources`` set, Volcano sends no allocate event for a task outside
them, so such a task of a job with buckets stays counted as unplaced for the session.

Per prioritize call the job's manager, the task's bucket and, when the bucket's request is too
big for some node, the sequence of partial requests are computed once. Each node then finds the
first partial request that fits by bisection (the requests only shrink, so "fits" cannot turn
false again; with a negative request in the payload every one is tried in turn, as upstream):
200 nodes against a 500-task bucket cost about 1.6 ms per call instead of 40.

What the extender cannot carry (``in_tree_only``): ``TaskOrderFn``, which orders a job's tasks
by bucket (bigger buckets first, then older ones, then the task order and affinity priority).
Volcano orders tasks in-process and has no verb for it, so with Caldera the allocation order is
that of Volcano's other TaskOrderFns, and a bucket's tasks are not guaranteed to be placed one
after another; the node scores above still pull each task towards its bucket's nodes.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar

from plugins.api import (
    Arguments,
    Background,
    OnError,
    Plugin,
    Session,
    Upstream,
    Verb,
    register,
)
from plugins.support.goint import INT32_MIN, go_int64
from plugins.support.resources import (
    add_in_place,
    clone,
    less_equal_zero,
    less_partly_zero,
    sub_asserting_in_place,
)
from schemas.api import JobInfo, NodeInfo, Resource, TaskInfo, TaskStatus

logger = logging.getLogger("caldera.plugins.task_topology")

PLUGIN_NAME = "task-topology"
WEIGHT_ARGUMENT = "task-topology.weight"
DEFAULT_WEIGHT = 1
MAX_NODE_SCORE = 100
"""``fwk.MaxNodeScore``."""

TASK_SPEC_KEY = "volcano.sh/task-spec"
AFFINITY_ANNOTATION = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY_ANNOTATION = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER_ANNOTATION = "volcano.sh/task-topology-task-order"

OUT_OF_BUCKET = -1
_NO_NAMES: frozenset[str] = frozenset()


class TopologyType(IntEnum):
    SELF_ANTI_AFFINITY = 0
    INTER_ANTI_AFFINITY = 1
    SELF_AFFINITY = 2
    INTER_AFFINITY = 3


AFFINITY_PRIORITY = {
    TopologyType.SELF_ANTI_AFFINITY: 4,
    TopologyType.INTER_AFFINITY: 3,
    TopologyType.SELF_AFFINITY: 2,
    TopologyType.INTER_ANTI_AFFINITY: 1,
}
"""``affinityPriority``: the larger, the earlier a task is put in a bucket."""


# --- annotations -------------------------------------------------------------------------------


@dataclass(slots=True)
class TaskTopology:
    """``TaskTopology``: the groups read from the PodGroup annotations."""

    affinity: list[list[str]] | None = None
    anti_affinity: list[list[str]] | None = None
    task_order: list[str] | None = None


class TopologyError(ValueError):
    """An annotation naming an unknown or repeated task; the job gets no buckets."""


def _pod_annotations(task: TaskInfo) -> Mapping[str, str]:
    pod = task.Pod
    if pod is None or pod.metadata is None or pod.metadata.annotations is None:
        return {}
    return pod.metadata.annotations


def get_task_name(task: TaskInfo) -> str:
    """``getTaskName``: the pod's ``volcano.sh/task-spec`` annotation (not the label)."""
    return _pod_annotations(task).get(TASK_SPEC_KEY, "")


def pod_uid(task: TaskInfo) -> str:
    """``task.Pod.UID`` (the task's own UID when the payload has no pod)."""
    pod = task.Pod
    if pod is not None and pod.metadata is not None and pod.metadata.uid:
        return pod.metadata.uid
    return task.UID


def affinity_check(job: JobInfo, groups: Sequence[Sequence[str]]) -> None:
    """``affinityCheck``: every non-empty name is a ``TaskRole`` of the job, once per group."""
    roles = {task.TaskRole for task in (job.Tasks or {}).values()}
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(f"task {name} do not exist in job <{job.Namespace}/{job.Name}>")
            if name in seen:
                raise TopologyError(f"task {name} is duplicate in job <{job.Namespace}/{job.Name}>")
            seen.add(name)


def split_annotations(job: JobInfo, annotation: str) -> list[list[str]]:
    """``splitAnnotations``: ``;`` then ``,``, nothing trimmed, empty names kept."""
    groups = [part.split(",") for part in annotation.split(";")]
    affinity_check(job, groups)
    return groups


def read_topology_from_pg_annotations(job: JobInfo) -> TaskTopology | None:
    """``readTopologyFromPgAnnotations``: None when none of the three annotations is present;
    raises :class:`TopologyError` with upstream's message when one is invalid."""
    pg = job.PodGroup
    annotations = (pg.metadata.annotations if pg is not None else None) or {}
    affinity = annotations.get(AFFINITY_ANNOTATION)
    anti_affinity = annotations.get(ANTI_AFFINITY_ANNOTATION)
    task_order = annotations.get(TASK_ORDER_ANNOTATION)
    if affinity is None and anti_affinity is None and task_order is None:
        return None
    topology = TaskTopology()
    if affinity is not None:
        topology.affinity = split_annotations(job, affinity)
    if anti_affinity is not None:
        topology.anti_affinity = split_annotations(job, anti_affinity)
    if task_order is not None:
        topology.task_order = task_order.split(",")
        affinity_check(job, [topology.task_order])
    return topology


# --- buckets -----------------------------------------------------------------------------------

Clamped = Callable[[str], None]


def request_score(req: Resource) -> float:
    """``Bucket.CalcResReq``'s score: 1 milliCPU = 1 MiB = 1 scalar unit (``pods`` included)."""
    score = req.MilliCPU + req.Memory / 1024 / 1024
    for amount in (req.ScalarResources or {}).values():
        score += amount
    return score


@dataclass(slots=True)
class Bucket:
    """``Bucket``: tasks meant to land together."""

    index: int
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    """Unplaced members by pod UID, in the order they entered the bucket."""
    task_name_set: dict[str, int] = field(default_factory=dict)
    req_score: float = 0.0
    request: Resource = field(default_factory=Resource)
    bound_task: int = 0
    node: dict[str, int] = field(default_factory=dict)

    def calc_res_req(self, req: Resource | None, add: bool, clamped: Clamped) -> None:
        if req is None:
            return
        score = request_score(req)
        if add:
            self.req_score += score
            add_in_place(self.request, req)
        else:
            self.req_score -= score
            sub_asserting_in_place(self.request, req, clamped)

    def add_task(self, name: str, task: TaskInfo, clamped: Clamped) -> None:
        self.task_name_set[name] = self.task_name_set.get(name, 0) + 1
        if task.NodeName:
            self.node[task.NodeName] = self.node.get(task.NodeName, 0) + 1
            self.bound_task += 1
            return
        self.tasks[pod_uid(task)] = task
        self.calc_res_req(task.Resreq, True, clamped)

    def task_bound(self, task: TaskInfo, clamped: Clamped) -> None:
        self.node[task.NodeName] = self.node.get(task.NodeName, 0) + 1
        self.bound_task += 1
        self.tasks.pop(pod_uid(task), None)
        self.calc_res_req(task.Resreq, False, clamped)


class JobManager:
    """``JobManager``: one job's affinity matrices, buckets and per-node task counts."""

    def __init__(self, job_id: str, clamped: Clamped) -> None:
        self.job_id = job_id
        self.clamped = clamped
        self.buckets: list[Bucket] = []
        self.pod_in_bucket: dict[str, int] = {}
        self.pod_in_task: dict[str, str] = {}
        self.task_affinity_priority: dict[str, int] = {}
        self.task_exist_order: dict[str, int] = {}
        self.inter_affinity: dict[str, set[str]] = {}
        self.self_affinity: set[str] = set()
        self.inter_anti_affinity: dict[str, set[str]] = {}
        self.self_anti_affinity: set[str] = set()
        self.bucket_max_size = 0
        self.node_task_set: dict[str, dict[str, int]] = {}

    def _mark(self, name: str, kind: TopologyType) -> None:
        priority = AFFINITY_PRIORITY[kind]
        if priority > self.task_affinity_priority.get(name, 0):
            self.task_affinity_priority[name] = priority

    def apply_task_topology(self, topology: TaskTopology) -> None:
        """``ApplyTaskTopology``: the groups as matrices, priorities and the task order."""
        for groups, single, pair, self_set, inter in (
            (topology.affinity, TopologyType.SELF_AFFINITY, TopologyType.INTER_AFFINITY,
             self.self_affinity, self.inter_affinity),
            (topology.anti_affinity, TopologyType.SELF_ANTI_AFFINITY,
             TopologyType.INTER_ANTI_AFFINITY, self.self_anti_affinity, self.inter_anti_affinity),
        ):  # fmt: skip
            for group in groups or ():
                if len(group) == 1:
                    self_set.add(group[0])
                    self._mark(group[0], single)
                    continue
                for index, src in enumerate(group):
                    for dst in group[:index]:
                        inter.setdefault(src, set()).add(dst)
                        inter.setdefault(dst, set()).add(src)
                    self._mark(src, pair)
        order = topology.task_order or []
        for index, name in enumerate(order):
            self.task_exist_order[name] = len(order) - index

    def new_bucket(self) -> Bucket:
        bucket = Bucket(index=len(self.buckets))
        self.buckets.append(bucket)
        return bucket

    def add_task_to_bucket(self, bucket: Bucket, name: str, task: TaskInfo) -> None:
        self.pod_in_bucket[pod_uid(task)] = bucket.index
        bucket.add_task(name, task, self.clamped)
        self.bucket_max_size = max(self.bucket_max_size, len(bucket.tasks) + bucket.bound_task)

    def check_task_set_affinity(
        self, name: str, task_set: Mapping[str, int], only_anti: bool
    ) -> int:
        """``checkTaskSetAffinity``: +count per affinity, -count per anti-affinity."""
        score = 0
        if not name:
            return score
        inter = self.inter_affinity.get(name, _NO_NAMES)
        inter_anti = self.inter_anti_affinity.get(name, _NO_NAMES)
        for other, count in task_set.items():
            same = other == name
            if not only_anti and (name in self.self_affinity if same else other in inter):
                score += count
            if name in self.self_anti_affinity if same else other in inter_anti:
                score -= count
        return score

    def _order_key(self, task: TaskInfo) -> tuple[int, str, int, int, str]:
        """``sort.Reverse(TaskOrder)`` as a key: placed tasks first by node name, then the task
        order (larger first), the affinity priority (larger first) and the pod name."""
        if task.NodeName:
            return (0, task.NodeName, 0, 0, "")
        name = self.pod_in_task.get(pod_uid(task), "")
        return (
            1,
            "",
            -self.task_exist_order.get(name, 0),
            -self.task_affinity_priority.get(name, 0),
            task.Name,
        )

    def construct_bucket(self, tasks: Mapping[str, TaskInfo]) -> None:
        """``ConstructBucket``: ``buildTaskInfo``, the sort, then ``buildBucket``."""
        members: list[TaskInfo] = []
        for task in tasks.values():
            name = get_task_name(task)
            if not name or name not in self.task_affinity_priority:
                self.pod_in_bucket[pod_uid(task)] = OUT_OF_BUCKET
                continue
            self.pod_in_task[pod_uid(task)] = name
            members.append(task)
        members.sort(key=self._order_key)
        node_bucket: dict[str, Bucket] = {}
        for task in members:
            name = get_task_name(task)
            selected: Bucket | None
            if task.NodeName:
                max_affinity = 0
                selected = node_bucket.get(task.NodeName)
            else:
                max_affinity = INT32_MIN
                selected = None
                for bucket in self.buckets:
                    affinity = self.check_task_set_affinity(name, bucket.task_name_set, False)
                    if affinity > max_affinity:
                        max_affinity, selected = affinity, bucket
                    elif (
                        affinity == max_affinity
                        and selected is not None
                        and bucket.req_score < selected.req_score
                    ):
                        selected = bucket
            if max_affinity < 0 or selected is None:
                selected = self.new_bucket()
                if task.NodeName:
                    node_bucket[task.NodeName] = selected
            self.add_task_to_bucket(selected, name, task)

    def get_bucket(self, task: TaskInfo) -> Bucket | None:
        index = self.pod_in_bucket.get(pod_uid(task), OUT_OF_BUCKET)
        return None if index == OUT_OF_BUCKET else self.buckets[index]

    def task_bound(self, task: TaskInfo) -> None:
        """``TaskBound``: count the task on its node and move it to its bucket's placed ones."""
        name = get_task_name(task)
        if name:
            per_node = self.node_task_set.setdefault(task.NodeName, {})
            per_node[name] = per_node.get(name, 0) + 1
        bucket = self.get_bucket(task)
        if bucket is not None:
            bucket.task_bound(task, self.clamped)


def has_pending_tasks(job: JobInfo) -> bool:
    """``JobInfo.HasPendingTasks``: ``TaskStatusIndex[Pending]`` is not empty, i.e. some task
    has status Pending (the index is built from the tasks' statuses)."""
    return any(task.Status == TaskStatus.Pending for task in (job.Tasks or {}).values())


def _non_negative(res: Resource) -> bool:
    return (
        res.MilliCPU >= 0
        and res.Memory >= 0
        and all(amount >= 0 for amount in (res.ScalarResources or {}).values())
    )


@dataclass(frozen=True, slots=True)
class PartialRequests:
    """Upstream's remove-until-fits loop, computed once per prioritize call: ``partials[k]``
    is the bucket's request once ``k + 1`` other unplaced tasks are taken out."""

    partials: list[Resource]
    monotone: bool
    """Every removed request is non-negative, so the partial requests only shrink and "fits"
    (``LessEqual``, tolerance included) never turns false again: a binary search finds the
    first that fits. Otherwise every one is tried in turn, as upstream does."""

    def removed_until_fit(self, max_resource: Resource) -> int:
        """How many tasks upstream takes out for a node of ``max_resource``: up to and
        including the first partial request that fits, or all of them."""
        partials = self.partials
        if self.monotone:
            first = bisect_left(
                range(len(partials)), True, key=lambda k: less_equal_zero(partials[k], max_resource)
            )
            return first + 1 if first < len(partials) else len(partials)
        for count, remains in enumerate(partials, start=1):
            if less_equal_zero(remains, max_resource):
                return count
        return len(partials)


# --- the plugin --------------------------------------------------------------------------------


def _max_resource(node: NodeInfo) -> Resource:
    """``node.Idle.Clone().Add(node.Releasing)``."""
    return add_in_place(clone(node.Idle), node.Releasing)


@register
class TaskTopologyPlugin(Plugin):
    name: ClassVar[str] = PLUGIN_NAME
    on_error = OnError.ABSTAIN
    """It only scores nodes and accounts allocations: a dropped score changes no rule."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=(
            "pkg/scheduler/plugins/task-topology/topology.go",
            "pkg/scheduler/plugins/task-topology/manager.go",
            "pkg/scheduler/plugins/task-topology/bucket.go",
            "pkg/scheduler/plugins/task-topology/util.go",
        ),
        commit="0a56ed331",
        releases="v1.13.0 and later",
    )
    needs_snapshot: ClassVar[bool] = True
    in_tree_only: ClassVar[tuple[str, ...]] = (
        "TaskOrderFn (bucket order of a job's tasks): no extender verb orders tasks",
    )
    requires_verbs: ClassVar[tuple[str, ...]] = (Verb.ALLOCATE,)

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.weight = arguments.get_int(WEIGHT_ARGUMENT, DEFAULT_WEIGHT)
        self.managers: dict[str, JobManager] = {}

    def on_session_open(self, ssn: Session) -> None:
        def clamped(resource: str) -> None:
            ssn.clamped(PLUGIN_NAME, resource)

        self.managers = {}
        for job in ssn.jobs.values():
            if not has_pending_tasks(job):
                continue
            try:
                topology = read_topology_from_pg_annotations(job)
            except TopologyError as exc:
                logger.debug(
                    "Failed to read task topology from job <%s/%s> annotations, error: %s.",
                    job.Namespace,
                    job.Name,
                    exc,
                )
                continue
            if topology is None:
                continue
            manager = JobManager(job.UID, clamped)
            manager.apply_task_topology(topology)
            manager.construct_bucket(job.Tasks or {})
            self.managers[job.UID] = manager

    def on_session_close(self) -> None:
        self.managers = {}

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """``NodeOrderFn`` for every candidate node, with the per-task work done once."""
        manager = self.managers.get(task.Job)
        bucket = manager.get_bucket(task) if manager is not None else None
        name = get_task_name(task)
        uid = pod_uid(task)
        resreq = task.Resreq
        partial_requests: PartialRequests | None = None
        scores: dict[str, float] = {}
        for node in nodes:
            max_resource = _max_resource(node)
            if resreq is not None and less_partly_zero(max_resource, resreq):
                scores[node.Name] = 0.0  # the task can never fit: no manager, no scaling
                continue
            if manager is None:
                scores[node.Name] = 0.0
                continue
            score = 0
            if bucket is not None:
                score = bucket.node.get(node.Name, 0)
                placed = manager.node_task_set.get(node.Name)
                if placed is not None:
                    anti = manager.check_task_set_affinity(name, placed, True)
                    if anti < 0:
                        score += anti
                score += len(bucket.tasks)
                if not less_equal_zero(bucket.request, max_resource):
                    if partial_requests is None:
                        partial_requests = self._partial_requests(manager, bucket, uid)
                    score -= partial_requests.removed_until_fit(max_resource)
            scores[node.Name] = self._scale(score, manager)
        return scores

    @staticmethod
    def _partial_requests(manager: JobManager, bucket: Bucket, uid: str) -> PartialRequests:
        """The bucket's request after taking out each other unplaced task in turn (upstream
        recomputes this per node, in map order)."""
        remains = clone(bucket.request)
        partials: list[Resource] = []
        monotone = True
        for task_uid, member in bucket.tasks.items():
            if task_uid == uid or member.Resreq is None:
                continue
            monotone = monotone and _non_negative(member.Resreq)
            sub_asserting_in_place(remains, member.Resreq, manager.clamped)
            partials.append(clone(remains))
        return PartialRequests(partials, monotone)

    def _scale(self, score: int, manager: JobManager | None) -> float:
        value = float(go_int64(score * self.weight))
        if manager is not None and manager.bucket_max_size != 0:
            value = value * float(MAX_NODE_SCORE) / float(manager.bucket_max_size)
        return value

    def allocate(self, task: TaskInfo) -> str | None:
        """``AllocateFunc``: fired by Volcano on allocate, pipeline and unevict."""
        manager = self.managers.get(task.Job)
        if manager is not None:
            manager.task_bound(task)
        return None
