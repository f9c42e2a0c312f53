"""Each session's state rebuilt from the previous session's where the objects changed.

A full derivation (:func:`app.cluster_state.derive.derive`) builds every task, node and job
from scratch: ~170 ms at 10,000 pods and 1,000 nodes, which a session's first call in cluster
mode would wait for. Between two sessions only a few objects change, so this keeps what the
last derivation built, per object:

* per pod: its task (``NewTaskInfo`` with the overlay's placement applied), the node it is
  offered to and the job it joins; a pod is rebuilt when its object changed (the store made a
  new one) or when a placement for its UID appeared, changed or went;
* per node name: its ``NodeInfo`` with its tasks added, rebuilt when the node's object or any of
  its tasks changed, or a task came or went;
* per job: its ``JobInfo`` (PodGroup fields and tasks), rebuilt likewise, and copied when only
  its priority moved (a PriorityClass changed).

What changed comes from the stores' change logs (the marks a freeze takes,
:class:`~app.cluster_state.objects.ChangeMark`; a relist is logged as the changes it stands
for, see :mod:`app.cluster_state.store`), or, when a log cannot tell (a log restarted, objects
not frozen from a store), from comparing the two frozen views object by object. The result is
the full derivation's, field for field and in the same order: a node's and a job's tasks are
added in the order the full derivation meets them (the stores' insertion order, followed through
the logs), since a Binding task is refused by what its node already holds.

Objects handed out in a session are never changed afterwards: a session's plugins keep them
while the next session is derived (in compare mode, in another thread), so what changes is
built anew (a node or job gets a new ``NodeInfo``/``JobInfo``, a task a new ``TaskInfo``, a
refused Binding task a copy) and only the new objects are mutated while they are built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

import msgspec

from app.cluster_state.derive import (
    Derived,
    Settings,
    _apply_placement,
    _priorities,
    add_task_to_job,
    add_task_to_node,
    keeps_node,
    keeps_pod,
    keeps_podgroup,
    namespace_infos,
    new_job_info,
    new_node_info,
    new_queue_info,
    new_task_info,
    set_pod_group,
)
from app.cluster_state.objects import ChangeMark, ClusterObjects, WatchedNode, WatchedPod
from app.cluster_state.overlay import Placement
from schemas.api import JobInfo, NodeInfo, PodGroup, Queue, QueueInfo, TaskInfo, TaskStatus
from schemas.requests import OnSessionOpenRequest

T = TypeVar("T")

_TERMINATED = (TaskStatus.Succeeded, TaskStatus.Failed)


class _Followed(Generic[T]):
    """One collection as the last derivation saw it, and each key's place in the store's
    insertion order (what a full derivation iterates)."""

    def __init__(self) -> None:
        self.view: Mapping[str, T] = {}
        self.mark: ChangeMark | None = None
        self.position: dict[str, int] = {}
        self._next = 0

    def advance(self, view: Mapping[str, T], mark: ChangeMark | None) -> set[str]:
        """Move to ``view``; the keys whose object was added, replaced or removed."""
        changes = mark.since(self.mark) if mark is not None else None
        changed: set[str]
        if changes is not None:
            # A dict keeps a replaced key's place, and puts a key removed and added again last.
            for key, present in changes:
                if not present:
                    self.position.pop(key, None)
                elif key not in self.position:
                    self.position[key] = self._next
                    self._next += 1
            changed = {key for key, _ in changes}
        else:
            previous = self.view
            changed = {key for key, value in view.items() if previous.get(key) is not value}
            changed.update(key for key in previous if key not in view)
            self.position = {key: i for i, key in enumerate(view)}
            self._next = len(self.position)
        self.view, self.mark = view, mark
        return changed

    def in_order(self, keys: Iterable[str]) -> list[str]:
        return sorted(keys, key=self.position.__getitem__)

    def last(self, keys: Iterable[str]) -> str:
        return max(keys, key=self.position.__getitem__)


def _add(index: dict[str, set[str]], name: str, key: str) -> None:
    members = index.get(name)
    if members is None:
        index[name] = {key}
    else:
        members.add(key)


def _discard(index: dict[str, set[str]], name: str, key: str) -> None:
    members = index.get(name)
    if members is not None:
        members.discard(key)
        if not members:
            del index[name]


def _node_name(watched: WatchedNode) -> str:
    meta = watched.node.metadata
    return meta.name if meta else ""


def _job_uid(key: str, pg: PodGroup) -> str:
    return f"{pg.metadata.namespace}/{pg.metadata.name}" if pg.metadata.name else key


class IncrementalDerivation:
    """``derive`` that reuses what the previous call built (see the module's docstring).

    Calls must not overlap (cluster mode derives on the event loop; compare mode runs one
    comparison at a time)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rebuilt: dict[str, int] = {}
        """What the last call built anew: ``tasks``, ``nodes``, ``jobs``."""
        self._reset()

    def _reset(self) -> None:
        self._pods: _Followed[WatchedPod] = _Followed()
        self._nodes: _Followed[WatchedNode] = _Followed()
        self._podgroups: _Followed[PodGroup] = _Followed()
        # pods
        self._uid_of: dict[str, str] = {}
        """Pod key to its UID, for every pod with metadata (kept by the filter or not)."""
        self._keys_of_uid: dict[str, set[str]] = {}
        self._metaless: set[str] = set()
        """Pods without metadata: UID "" (rebuilt every time; the API server has none)."""
        self._base: dict[str, TaskInfo] = {}
        """Each kept pod's task, its placement applied, before its node takes or refuses it."""
        self._final: dict[str, TaskInfo] = {}
        """Each kept pod's task as the jobs hold it (a refused Binding task is Pending)."""
        self._node_of: dict[str, str] = {}
        self._job_of: dict[str, str] = {}
        self._pods_on: dict[str, set[str]] = {}
        self._pods_in: dict[str, set[str]] = {}
        self._placed: set[str] = set()
        """The UIDs the previous call's placements named."""
        # nodes
        self._node_name_of: dict[str, str] = {}
        self._node_keys: dict[str, set[str]] = {}
        self._node_infos: dict[str, NodeInfo] = {}
        # jobs
        self._job_uid_of: dict[str, str] = {}
        self._pg_keys: dict[str, set[str]] = {}
        self._jobs: dict[str, JobInfo] = {}
        """Every job with a PodGroup, whatever its queue."""
        self._priorities: tuple[int, dict[str, int]] | None = None
        # queues
        self._queue_infos: dict[str, tuple[Queue, QueueInfo]] = {}

    def derive(
        self, objects: ClusterObjects, placements: Mapping[str, Placement] | None = None
    ) -> Derived:
        """What :func:`~app.cluster_state.derive.derive` returns for ``objects``."""
        try:
            return self._derive(objects, placements or {})
        except BaseException:
            self._reset()  # whatever was half updated: the next call starts from scratch
            raise

    def _derive(self, objects: ClusterObjects, placements: Mapping[str, Placement]) -> Derived:
        settled: set[str] = set()
        dirty_nodes: set[str] = set()
        dirty_jobs: set[str] = set()
        marks = objects.marks

        for key in self._nodes.advance(objects.nodes, marks.get("nodes")):
            self._node_changed(key, objects.nodes.get(key), dirty_nodes)
        for key in self._podgroups.advance(objects.podgroups, marks.get("podgroups")):
            self._podgroup_changed(key, objects.podgroups.get(key), dirty_jobs)

        pods = self._pods.advance(objects.pods, marks.get("pods"))
        placed = set(placements)
        for uid in placed | self._placed:  # a placement came, changed or went
            pods.update(self._keys_of_uid.get(uid, ()))
        pods.update(self._metaless)
        self._placed = placed
        self._pods_changed(pods, objects.pods, placements, settled, dirty_nodes, dirty_jobs)
        settled.update(uid for uid in placements if uid not in self._keys_of_uid)

        for name in dirty_nodes:
            self._build_node(name, objects, dirty_jobs)

        priorities = _priorities(objects)
        if priorities != self._priorities:
            self._priorities = priorities
            for uid, job in list(self._jobs.items()):
                self._jobs[uid] = self._prioritised(job)
        for uid in dirty_jobs:
            self._build_job(uid, objects)

        self.rebuilt = {"tasks": len(pods), "nodes": len(dirty_nodes), "jobs": len(dirty_jobs)}
        return Derived(snapshot=self._assemble(objects), settled=settled)

    # --- what changed -------------------------------------------------------------------------

    def _node_changed(self, key: str, watched: WatchedNode | None, dirty: set[str]) -> None:
        old = self._node_name_of.pop(key, None)
        if old is not None:
            _discard(self._node_keys, old, key)
            dirty.add(old)
        if watched is not None and keeps_node(name := _node_name(watched), self.settings):
            self._node_name_of[key] = name
            _add(self._node_keys, name, key)
            dirty.add(name)

    def _podgroup_changed(self, key: str, pg: PodGroup | None, dirty: set[str]) -> None:
        old = self._job_uid_of.pop(key, None)
        if old is not None:
            _discard(self._pg_keys, old, key)
            dirty.add(old)
        if pg is not None and keeps_podgroup(pg, self.settings):
            uid = _job_uid(key, pg)
            self._job_uid_of[key] = uid
            _add(self._pg_keys, uid, key)
            dirty.add(uid)

    def _pods_changed(
        self,
        keys: Iterable[str],
        view: Mapping[str, WatchedPod],
        placements: Mapping[str, Placement],
        settled: set[str],
        dirty_nodes: set[str],
        dirty_jobs: set[str],
    ) -> None:
        """Forget what each pod of ``keys`` gave, and build its task anew from its object.

        One loop with the maps bound locally: on the first call (or after a log restarted) it
        runs for every pod, and is then most of the derivation's time."""
        uid_of, keys_of_uid, metaless = self._uid_of, self._keys_of_uid, self._metaless
        base, final, node_of, job_of = self._base, self._final, self._node_of, self._job_of
        pods_on, pods_in = self._pods_on, self._pods_in
        scheduler_names = self.settings.scheduler_names
        ring = self.settings.multi_scheduler is not None
        for key in keys:
            if key in uid_of or key in metaless:  # known: what it gave goes
                node = node_of.pop(key, None)
                if node is not None:
                    _discard(pods_on, node, key)
                    dirty_nodes.add(node)
                job = job_of.pop(key, None)
                if job is not None:
                    _discard(pods_in, job, key)
                    dirty_jobs.add(job)
                base.pop(key, None)
                final.pop(key, None)
                uid = uid_of.pop(key, None)
                if uid is not None:
                    _discard(keys_of_uid, uid, key)
                metaless.discard(key)
            watched = view.get(key)
            if watched is None:
                continue
            meta = watched.pod.metadata
            if meta:
                uid_of[key] = meta.uid
                keys_of_uid.setdefault(meta.uid, set()).add(key)
            else:
                metaless.add(key)
            # keeps_pod: the pod informer's filter (inlined without a multi-scheduler ring)
            if ring:
                if not keeps_pod(watched, self.settings):
                    continue
            elif watched.scheduler_name not in scheduler_names and not watched.node_name:
                continue
            task = new_task_info(watched)
            placement = placements.get(task.UID)
            if placement is not None and _apply_placement(task, watched, placement):
                settled.add(task.UID)
            base[key] = final[key] = task
            if task.NodeName and task.Status not in _TERMINATED:
                node_of[key] = task.NodeName
                pods_on.setdefault(task.NodeName, set()).add(key)
                dirty_nodes.add(task.NodeName)
            if task.Job:
                job_of[key] = task.Job
                pods_in.setdefault(task.Job, set()).add(key)
                dirty_jobs.add(task.Job)

    # --- building -----------------------------------------------------------------------------

    def _build_node(self, name: str, objects: ClusterObjects, dirty_jobs: set[str]) -> None:
        """The node's ``NodeInfo`` anew, its tasks added as a full derivation adds them; a
        Binding task it refuses (or a node that is not there) is Pending in its job."""
        keys = self._node_keys.get(name)
        info: NodeInfo | None = None
        if keys:
            info = new_node_info(objects.nodes[self._nodes.last(keys)])
            self._node_infos[name] = info
        else:
            self._node_infos.pop(name, None)
        for key in self._pods.in_order(self._pods_on.get(name, ())):
            task = self._base[key]
            final = task
            refused = info is None or not add_task_to_node(info, task)
            if refused and task.Status == TaskStatus.Binding:  # AddBindTask refuses it
                final = msgspec.structs.replace(task, Status=TaskStatus.Pending, NodeName="")
            if final is not self._final[key]:
                self._final[key] = final
                job = self._job_of.get(key)
                if job is not None:
                    dirty_jobs.add(job)

    def _build_job(self, uid: str, objects: ClusterObjects) -> None:
        keys = self._pg_keys.get(uid)
        if not keys:  # no PodGroup: never in a snapshot
            self._jobs.pop(uid, None)
            return
        job = new_job_info(uid)
        set_pod_group(
            job, objects.podgroups[self._podgroups.last(keys)], self.settings.default_queue
        )
        for key in self._pods.in_order(self._pods_in.get(uid, ())):
            add_task_to_job(job, self._final[key])
        job.Priority = self._priority(job)
        self._jobs[uid] = job

    def _priority(self, job: JobInfo) -> int:
        assert self._priorities is not None and job.PodGroup is not None
        default, values = self._priorities
        return values.get(job.PodGroup.spec.priority_class_name, default)

    def _prioritised(self, job: JobInfo) -> JobInfo:
        """The job with its priority as the classes now say: a copy when it moved."""
        priority = self._priority(job)
        if job.Priority == priority:
            return job
        return msgspec.structs.replace(job, Priority=priority)

    def _queues(self, objects: ClusterObjects) -> dict[str, QueueInfo]:
        queues: dict[str, QueueInfo] = {}
        infos: dict[str, tuple[Queue, QueueInfo]] = {}
        for key, queue in objects.queues.items():
            if not queue.metadata.name:
                continue
            known = self._queue_infos.get(key)
            info = known[1] if known is not None and known[0] is queue else new_queue_info(queue)
            infos[key] = (queue, info)
            queues[queue.metadata.name] = info
        self._queue_infos = infos
        return queues

    def _assemble(self, objects: ClusterObjects) -> OnSessionOpenRequest:
        """The session's maps, in the full derivation's order (the stores' order)."""
        nodes: dict[str, NodeInfo] = {}
        for key in objects.nodes:
            name = self._node_name_of.get(key)
            if name is not None:  # None: a node the multi-scheduler ring gives another replica
                nodes[name] = self._node_infos[name]
        queues = self._queues(objects)
        jobs: dict[str, JobInfo] = {}
        for key in objects.podgroups:
            uid = self._job_uid_of.get(key)
            if uid is not None and uid not in jobs:
                job = self._jobs[uid]
                if job.Queue in queues:
                    jobs[uid] = job
        return OnSessionOpenRequest(
            Jobs=jobs, Nodes=nodes, Queues=queues, NamespaceInfo=namespace_infos(objects)
        )
