"""A session's objects for identifiers-mode calls, and Volcano's in-session changes to them.

Under the identifiers protocol (docs/proposals/extender-identifiers.md, schemas/identifiers.py)
a call names its task, job, node or queue; Caldera answers on its own copy of the object, which
must be the object Volcano would have marshalled at that moment. At the session's open that is
the derived state (cluster_mode.py), restricted to the session's roster when Volcano sends one
(onSessionOpen): a node that is not Ready is not in ``ssn.Nodes``, a job whose queue is missing
is not in ``ssn.Jobs`` (``SchedulerCache.Snapshot``, pkg/scheduler/cache/cache.go). As the
session goes, Volcano's statements change its objects and report each change through
allocateFunc and deallocateFunc (statement.go, v1.14.1: ``Allocate``, ``Pipeline``,
``unallocate``, ``unpipeline``, ``Evict``, ``unevict``), in order, before any call that could
read it. :meth:`SessionObjects.apply` replays each on the copy as Volcano does on its own:

- the job: ``JobInfo.UpdateTaskStatus`` (job_info.go): the task's status, and ``Allocated``
  when it enters or leaves ``AllocatedStatus`` (Bound, Binding, Running, Allocated);
- the node: the task leaves the node's ``Tasks`` with the status it was added with
  (``NodeInfo.RemoveTask``: Releasing gives back Releasing, Idle and Used; Pipelined only
  Pipelined; any other Idle and Used) and, while it stays on a node, is added with its new status
  (``NodeInfo.AddTask``: Releasing takes Idle, Releasing and Used; Pipelined only Pipelined; any
  other Idle and Used). An eviction and its discard are ``NodeInfo.UpdateTask``: both;
- the task: its status, its ``NodeName`` (cleared after a discard, as ``unallocate`` does once the
  handlers ran) and the node written into its pod (``task.Pod.Spec.NodeName = hostname``, left
  by a discard, derive.py ``write_node``).

The derived objects are shared with the next session's incremental derivation, so nothing here
changes them: an object a change touches is copied once per session and the copy is what later
calls are answered on (copy on write).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from app.cluster_state.derive import write_node
from app.errors import RequestError
from plugins.support.resources import add_in_place, clone, sub_without_assert_in_place
from schemas.api import (
    ALLOCATED_STATUSES,
    JobInfo,
    NodeInfo,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.identifiers import SessionOpenIds
from schemas.requests import OnSessionOpenRequest

T = TypeVar("T")

OFF_NODE = frozenset({TaskStatus.Pending, TaskStatus.Succeeded, TaskStatus.Failed})
"""Statuses after which an event leaves the task on no node (``unallocate``, ``unpipeline``)."""


class UnknownObject(RequestError):
    """A call names an object the session does not hold: Caldera's view and Volcano's differ on
    it (an object created or deleted between the two instants), or the body is wrong. Answered
    409; Volcano applies ``extender.ignorable`` and asks the capabilities again next session."""

    status = 409
    outcome = "unknown_object"


@dataclass
class RosterDifference:
    """What the roster Volcano sent and the derived state disagree on, per section."""

    missing: dict[str, list[str]] = field(default_factory=dict)
    """In Volcano's roster, not in the derived state."""
    extra: dict[str, int] = field(default_factory=dict)
    """In the derived state, not in the roster (left out of the session): how many."""

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra)


def restrict(
    state: OnSessionOpenRequest, roster: SessionOpenIds
) -> tuple[OnSessionOpenRequest, RosterDifference]:
    """The derived state with only the roster's jobs, nodes and queues (namespaces are not in
    the roster: all kept), and what the two disagree on. A section the roster omits (None) is
    kept whole."""
    difference = RosterDifference()

    def section(name: str, held: dict[str, T] | None, names: list[str] | None) -> dict[str, T]:
        held = held or {}
        if names is None:
            return held
        kept = {key: held[key] for key in names if key in held}
        if missing := [key for key in names if key not in held]:
            difference.missing[name] = missing
        if len(held) > len(kept):
            difference.extra[name] = len(held) - len(kept)
        return kept

    restricted = msgspec.structs.replace(
        state,
        Jobs=section("jobs", state.Jobs, roster.jobs),
        Nodes=section("nodes", state.Nodes, roster.nodes),
        Queues=section("queues", state.Queues, roster.queues),
    )
    return restricted, difference


def _remove_from_node(node: NodeInfo, task: TaskInfo) -> None:
    """``NodeInfo.RemoveTask`` (node_info.go): by the status the node holds the task with."""
    tasks = node.Tasks
    key = f"{task.Namespace}/{task.Name}"
    held = tasks.pop(key, None) if tasks is not None else None
    if held is None or node.Node is None:
        return
    resreq = held.Resreq
    assert node.Idle is not None and node.Used is not None
    if held.Status == TaskStatus.Pipelined:
        sub_without_assert_in_place(_resource(node, "Pipelined"), resreq)
        return
    if held.Status == TaskStatus.Releasing:
        sub_without_assert_in_place(_resource(node, "Releasing"), resreq)
    add_in_place(node.Idle, resreq)
    sub_without_assert_in_place(node.Used, resreq)


def _add_to_node(node: NodeInfo, task: TaskInfo) -> None:
    """``NodeInfo.AddTask``: the node keeps the task as it is now."""
    if node.Node is not None:
        resreq = task.Resreq
        assert node.Idle is not None and node.Used is not None
        if task.Status == TaskStatus.Pipelined:
            add_in_place(_resource(node, "Pipelined"), resreq)
        else:
            sub_without_assert_in_place(node.Idle, resreq)
            add_in_place(node.Used, resreq)
            if task.Status == TaskStatus.Releasing:
                add_in_place(_resource(node, "Releasing"), resreq)
    tasks = node.Tasks
    if tasks is None:
        tasks = {}
        node.__dict__["Tasks"] = tasks
    tasks[f"{task.Namespace}/{task.Name}"] = task


def _resource(node: NodeInfo, name: str) -> Resource:
    value: Resource | None = getattr(node, name)
    if value is None:
        value = Resource()
        setattr(node, name, value)
    return value


def _copy_node(node: NodeInfo) -> NodeInfo:
    copy = msgspec.structs.replace(
        node,
        Idle=clone(node.Idle) if node.Idle is not None else None,
        Used=clone(node.Used) if node.Used is not None else None,
        Releasing=clone(node.Releasing) if node.Releasing is not None else None,
        Pipelined=clone(node.Pipelined) if node.Pipelined is not None else None,
    )
    tasks = node.Tasks
    copy.__dict__["Tasks"] = dict(tasks) if tasks is not None else {}
    return copy


def _copy_job(job: JobInfo) -> JobInfo:
    return msgspec.structs.replace(
        job,
        Tasks=dict(job.Tasks or {}),
        Allocated=clone(job.Allocated),
    )


class SessionObjects:
    """One session's jobs, nodes and queues by identifier, with its placements applied."""

    def __init__(self, state: OnSessionOpenRequest, session: str = "") -> None:
        self.session = session
        """The session's id (``ssn.UID``) from the call that opened it; empty when it opened
        on a call of today's bodies."""
        self._derived_jobs: Mapping[str, JobInfo] = state.Jobs or {}
        self._derived_nodes: Mapping[str, NodeInfo] = state.Nodes or {}
        self.jobs: dict[str, JobInfo] = dict(self._derived_jobs)
        self.nodes: dict[str, NodeInfo] = dict(self._derived_nodes)
        """The session's objects: the derived ones, and the copies its changes made."""
        self.queues: Mapping[str, QueueInfo] = state.Queues or {}
        self.events = 0
        """allocate/deallocate events applied."""

    # --- lookups ------------------------------------------------------------------------------

    def job(self, job_id: str) -> JobInfo:
        job = self.jobs.get(job_id)
        if job is None:
            raise UnknownObject(f"job {job_id!r} is not in the session{self._which()}")
        return job

    def task(self, job_id: str, uid: str) -> TaskInfo:
        task = (self.job(job_id).Tasks or {}).get(uid)
        if task is None:
            raise UnknownObject(f"task {uid!r} is not in job {job_id!r}{self._which()}")
        return task

    def node(self, name: str) -> NodeInfo:
        node = self.nodes.get(name)
        if node is None:
            raise UnknownObject(f"node {name!r} is not in the session{self._which()}")
        return node

    def queue(self, name: str) -> QueueInfo:
        queue = self.queues.get(name)
        if queue is None:
            raise UnknownObject(f"queue {name!r} is not in the session{self._which()}")
        return queue

    def _which(self) -> str:
        return f" {self.session}" if self.session else ""

    # --- Volcano's in-session changes ---------------------------------------------------------

    def apply(self, job_id: str, uid: str, node_name: str, status_name: str) -> TaskInfo:
        """An allocateFunc or deallocateFunc: the task after it (module docstring)."""
        try:
            status = TaskStatus[status_name]
        except KeyError:
            known = ", ".join(s.name for s in TaskStatus)
            raise RequestError(
                f"status {status_name!r} is not an api.TaskStatus name ({known}) - at `status`"
            ) from None
        job = self.job(job_id)
        if job is self._derived_jobs.get(job_id):  # copy on write, once per session
            job = self.jobs[job_id] = _copy_job(job)
        old = self.task(job_id, uid)
        node = self.node(node_name) if node_name else None
        if node is not None and node is self._derived_nodes.get(node_name):
            node = self.nodes[node_name] = _copy_node(node)
        placed = status not in OFF_NODE
        new = msgspec.structs.replace(old, Status=int(status), NodeName=node_name if placed else "")
        if status == TaskStatus.Allocated and node_name:
            write_node(new, node_name)  # Statement.Allocate only; Pipeline leaves the pod
        # JobInfo.UpdateTaskStatus: out of Allocated by the old status, in by the new one.
        assert job.Tasks is not None and job.Allocated is not None
        if old.Status in ALLOCATED_STATUSES:
            sub_without_assert_in_place(job.Allocated, old.Resreq)
        if status in ALLOCATED_STATUSES:
            add_in_place(job.Allocated, new.Resreq)
        job.Tasks[uid] = new
        if node is not None:
            _remove_from_node(node, old)
            if placed:
                _add_to_node(node, new)
        self.events += 1
        return new
