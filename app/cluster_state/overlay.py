"""What Volcano told Caldera about its own placements and evictions, before the cluster shows them.

Volcano's cache does not wait for the API server: when a session commits an allocation it marks
the task ``Binding`` and adds it to its node (``SchedulerCache.AddBindTask``, cache.go), and
when it commits an eviction it marks the task ``Releasing`` (``SchedulerCache.Evict``); the
pod's own update (``spec.nodeName`` set, ``deletionTimestamp`` set) arrives later. Until it
does, the pod's update events are ignored (``updatePod``: "allocated in cache but not present in
NodeName"), so the next session still sees the task Binding on its node. Caldera learns the
same placements from allocateFunc/deallocateFunc (v1.13 and later): this overlay keeps them,
so the derived snapshot counts such a task as Volcano's cache does.

Within a session a statement may be rolled back (allocateFunc then deallocateFunc with status
Pending for ``unallocate``; deallocateFunc Releasing then allocateFunc Running for ``unevict``),
so a session's calls are pending until onSessionClose commits what survived. Pipelined tasks are
never dispatched and are not kept.

One more trace of an allocation stays in Volcano's cache whether it is committed or rolled back:
``Statement.Allocate`` (statement.go) and ``Session.Allocate`` (session.go) set
``task.Pod.Spec.NodeName`` on the session's task, whose ``Pod`` is the cache's own object
(``TaskInfo.Clone`` copies the pointer, job_info.go), and ``unallocate`` does not clear it. So a
pending task whose gang was tried on a node and discarded is sent in the next snapshots with that
node in its pod's ``spec.nodeName`` (task ``NodeName`` empty, status Pending), until an update of
the pod replaces the object (``updatePod``). The overlay keeps the last such node of each pod
with the pod's ``resourceVersion`` then, as a ``Pending`` placement, which the derivation applies
while the cluster still shows the pod at that version and unbound (derive.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from schemas.api import TaskInfo, TaskStatus

PLACEMENT_TTL_SECONDS = 120.0
"""How long a committed placement may go unseen in the cluster before it is forgotten. Volcano
resyncs a task whose bind or eviction failed from the API server (``resyncTask``), which Caldera
cannot see; a pod that is neither bound nor deleting this long after Volcano dispatched it is
taken to be such a failure, and the cluster's view wins again."""


@dataclass(frozen=True, slots=True)
class Placement:
    """A task Volcano's cache holds in a status the cluster does not show yet."""

    node_name: str
    status: TaskStatus
    """``Binding`` (allocated, not yet bound) or ``Releasing`` (evicted, not yet deleting);
    ``Pending`` for the node an allocation rolled back wrote into Volcano's pod object."""
    committed_at: float = 0.0
    """When the session that made it closed (the overlay's clock)."""
    pod_version: str | None = None
    """``Pending``: the pod's ``resourceVersion`` when Volcano wrote the node into it."""


class AllocationOverlay:
    """Placements and evictions by pod UID, pending within a session, committed at its close.

    Entries leave when the cluster catches up (:meth:`settle`: the pod is bound, deleting or
    gone); the store calls it with every frozen view."""

    def __init__(
        self,
        ttl_seconds: float = PLACEMENT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pending: dict[str, Placement | None] = {}
        self._committed: dict[str, Placement] = {}
        self._written: dict[str, Placement] = {}
        """The node Volcano's last allocation of each pod wrote into its pod object (module
        docstring), kept whatever became of the allocation, as a ``Pending`` placement."""
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self.expired = 0
        """Placements forgotten unseen (a failed bind or eviction, presumably)."""

    def allocate(self, task: TaskInfo) -> None:
        """allocateFunc. ``Allocated`` is a placement; ``Running`` is ``unevict`` (the
        eviction rolled back); ``Pipelined`` is never dispatched."""
        if task.Status == TaskStatus.Allocated and task.NodeName:
            self._pending[task.UID] = Placement(task.NodeName, TaskStatus.Binding)
            meta = task.Pod.metadata if task.Pod is not None else None
            if meta is not None and meta.resourceVersion:
                self._written[task.UID] = Placement(
                    task.NodeName, TaskStatus.Pending, pod_version=meta.resourceVersion
                )
        elif task.Status != TaskStatus.Pipelined:
            self._pending[task.UID] = None

    def deallocate(self, task: TaskInfo) -> None:
        """deallocateFunc. ``Releasing`` is an eviction; any other status is a rollback
        (``unallocate``, ``unpipeline``) of this session's allocation."""
        if task.Status == TaskStatus.Releasing:
            self._pending[task.UID] = Placement(task.NodeName, TaskStatus.Releasing)
        else:
            self._pending[task.UID] = None

    def close_session(self) -> None:
        """onSessionClose: what the session's statements left in place was dispatched."""
        now = self._clock()
        for uid, placement in self._pending.items():
            if placement is None:
                self._committed.pop(uid, None)
            else:
                self._committed[uid] = replace(placement, committed_at=now)
        self._pending.clear()

    def placements(self) -> dict[str, Placement]:
        """The committed placements younger than the TTL, and for the other pods the node an
        allocation wrote into Volcano's pod object (a copy: one frozen view reads it)."""
        oldest = self._clock() - self.ttl_seconds
        for uid in [u for u, p in self._committed.items() if p.committed_at < oldest]:
            del self._committed[uid]
            self.expired += 1
        return self._written | self._committed

    def settle(self, caught_up: set[str], seen: Mapping[str, Placement] | None = None) -> None:
        """Forget the placements of pods the cluster now shows as Volcano's cache does (a
        written node: the pod was updated, bound or deleted since). ``seen``: the placements
        the derivation that found them caught up was given, when it ran off the event loop
        (compare mode): only those are forgotten, not one a session made since (a pod allocated
        again while the comparison ran)."""
        for uid in caught_up:
            for entries in (self._committed, self._written):
                current = entries.get(uid)
                if current is not None and (seen is None or seen.get(uid) == current):
                    del entries[uid]

    def __len__(self) -> int:
        return len(self._committed)
