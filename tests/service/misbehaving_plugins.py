"""Plugins that misbehave, installed into a real ``caldera serve`` through the ``caldera.plugins``
entry points (tests/service/test_misbehaving_plugins.py copies this module into a site directory
beside a ``dist-info`` naming it): the framework must name, count, explain and contain each
fault, whatever the plugin does.

- ``misbehave-raise`` raises in every hook, or only in those its ``hooks`` argument names
  (comma-separated, as ``Plugin`` names them: ``"preemptable,reclaimable"``), so that it can
  stand beside other plugins in a scenario whose set-up needs the other verbs to work
  (tests/e2e: the ``preemption-faulty-*`` scenarios);
- ``misbehave-wrong-type`` answers every hook with a value of another type than it declares;
- ``misbehave-slow`` sleeps ``seconds`` (3 by default) in jobReady for a job named ``slow``;
- ``misbehave-foreign-victim`` answers preemptable and reclaimable with a TaskInfo it made
  itself, not one of the evictees it was given: Volcano would evict an object it never offered;
- ``steady`` answers every hook plainly: the answers that must stand beside the others.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from plugins.api.arguments import Arguments
from plugins.api.base import Background, EvictResult, FitError, Plugin, Vote
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo

WRONG: dict[str, object] = {
    "predicate": False,
    "node_order": {"n1": None},
    "preemptable": [],
    "reclaimable": ([], 1),
    "job_enqueueable": 5,
    "job_enqueued": True,
    "overused": None,
    "job_ready": "no",
    "allocate": 3,
    "deallocate": False,
}
"""Per hook, the wrong answer ``misbehave-wrong-type`` gives."""


class Raises(Plugin):
    name = "misbehave-raise"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        named = arguments.get_string("hooks", "")
        self._hooks = frozenset(h.strip() for h in named.split(",") if h.strip())

    def hooks(self) -> frozenset[str]:
        every = super().hooks()
        return every & self._hooks if self._hooks else every

    def _broke(self, hook: str) -> RuntimeError:
        return RuntimeError(f"{hook} broke")

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        raise self._broke("predicate")

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        raise self._broke("node_order")

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        raise self._broke("preemptable")

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        raise self._broke("reclaimable")

    def job_enqueueable(self, job: JobInfo) -> Vote:
        raise self._broke("job_enqueueable")

    def job_enqueued(self, job: JobInfo) -> None:
        raise self._broke("job_enqueued")

    def overused(self, queue: QueueInfo) -> bool:
        raise self._broke("overused")

    def job_ready(self, job: JobInfo) -> bool:
        raise self._broke("job_ready")

    def allocate(self, task: TaskInfo) -> str | None:
        raise self._broke("allocate")

    def deallocate(self, task: TaskInfo) -> str | None:
        raise self._broke("deallocate")


class WrongType(Plugin):
    name = "misbehave-wrong-type"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return WRONG["predicate"]  # type: ignore[return-value]

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return WRONG["node_order"]  # type: ignore[return-value]

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return WRONG["preemptable"]  # type: ignore[return-value]

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return WRONG["reclaimable"]  # type: ignore[return-value]

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return WRONG["job_enqueueable"]  # type: ignore[return-value]

    def job_enqueued(self, job: JobInfo) -> None:
        return WRONG["job_enqueued"]  # type: ignore[return-value]

    def overused(self, queue: QueueInfo) -> bool:
        return WRONG["overused"]  # type: ignore[return-value]

    def job_ready(self, job: JobInfo) -> bool:
        return WRONG["job_ready"]  # type: ignore[return-value]

    def allocate(self, task: TaskInfo) -> str | None:
        return WRONG["allocate"]  # type: ignore[return-value]

    def deallocate(self, task: TaskInfo) -> str | None:
        return WRONG["deallocate"]  # type: ignore[return-value]


class ForeignVictim(Plugin):
    name = "misbehave-foreign-victim"

    def _stranger(self, evictees: Sequence[TaskInfo]) -> EvictResult:
        # The same UID as an evictee, but not the object Caldera was given: Caldera echoes the
        # evictees' own bytes, and has none for this one.
        return [TaskInfo(UID=evictees[0].UID if evictees else "stranger", Name="stranger")], (
            Vote.PERMIT
        )

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return self._stranger(preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return self._stranger(reclaimees)


class Slow(Plugin):
    name = "misbehave-slow"

    def job_ready(self, job: JobInfo) -> bool:
        if job.Name == "slow":
            time.sleep(self.arguments.get_float64("seconds", 3.0))
        return True


class Steady(Plugin):
    """Plain answers: a node named ``full`` does not fit, every node scores 5, every evictee
    but ``keep`` may go, a job named ``hold`` is rejected and not ready, queue ``busy`` is
    overused, an allocation of a task named ``no-room`` is refused."""

    name = "steady"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError("steady: full") if node.Name == "full" else None

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {node.Name: 5.0 for node in nodes}

    def _victims(self, evictees: Sequence[TaskInfo]) -> EvictResult:
        return [t for t in evictees if t.Name != "keep"], Vote.PERMIT

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return self._victims(preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return self._victims(reclaimees)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return Vote.REJECT if job.Name == "hold" else Vote.PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        return None

    def overused(self, queue: QueueInfo) -> bool:
        return queue.Name == "busy"

    def job_ready(self, job: JobInfo) -> bool:
        return job.Name != "hold"

    def allocate(self, task: TaskInfo) -> str | None:
        return "steady: no room" if task.Name == "no-room" else None

    def deallocate(self, task: TaskInfo) -> str | None:
        return None
