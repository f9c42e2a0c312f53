"""Plugin doubles for framework tests: each answers what it was told to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import EvictResult, FitError, Plugin, Vote
from plugins.api.release import Release
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo


def task(uid: str, **kw: object) -> TaskInfo:
    return TaskInfo(UID=uid, Name=uid, Namespace="default", **kw)  # type: ignore[arg-type]


class Evicts(Plugin):
    """Preemptable/reclaimable: returns the evictees whose UID is in ``uids``, with ``vote``."""

    name = "evicts"

    def __init__(self, uids: Sequence[str] | None, vote: Vote = Vote.PERMIT) -> None:
        super().__init__(Arguments())
        self.uids = uids
        self.vote = vote
        self.calls = 0

    def _pick(self, evictees: Sequence[TaskInfo]) -> EvictResult:
        self.calls += 1
        if self.uids is None:
            return [], self.vote
        return [t for uid in self.uids for t in evictees if uid == t.UID], self.vote

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return self._pick(preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return self._pick(reclaimees)


class Votes(Plugin):
    name = "votes"

    def __init__(self, vote: Vote) -> None:
        super().__init__(Arguments())
        self.vote = vote
        self.enqueued: list[str] = []

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return self.vote

    def job_enqueued(self, job: JobInfo) -> None:
        self.enqueued.append(job.UID)


class Answers(Plugin):
    """predicate / node_order / overused / job_ready / allocate / deallocate doubles."""

    name = "answers"
    calls: ClassVar[list[str]] = []

    def __init__(
        self,
        fit: FitError | None = None,
        scores: Mapping[str, float] | None = None,
        overused_: bool = False,
        ready: bool = True,
        error: str | None = None,
        label: str = "",
    ) -> None:
        super().__init__(Arguments())
        self.fit, self.scores, self.overused_, self.ready, self.error = (
            fit,
            scores or {},
            overused_,
            ready,
            error,
        )
        self.label = label

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        Answers.calls.append(f"predicate:{self.label}")
        return self.fit

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return self.scores

    def overused(self, queue: QueueInfo) -> bool:
        Answers.calls.append(f"overused:{self.label}")
        return self.overused_

    def job_ready(self, job: JobInfo) -> bool:
        Answers.calls.append(f"job_ready:{self.label}")
        return self.ready

    def allocate(self, task: TaskInfo) -> str | None:
        Answers.calls.append(f"allocate:{self.label}")
        return self.error

    def deallocate(self, task: TaskInfo) -> str | None:
        Answers.calls.append(f"deallocate:{self.label}")
        return self.error


class Raises(Plugin):
    name = "raises"

    def job_ready(self, job: JobInfo) -> bool:
        raise ZeroDivisionError("boom")


SENDS_JOB_ENQUEUED = Release(1, 16)


def framework(
    *tiers: Sequence[tuple[str, Plugin] | tuple[str, Plugin, dict[str, bool]]],
    release: Release = SENDS_JOB_ENQUEUED,
) -> Framework:
    """Tiers of (plugin name, instance[, flags]); each name must be unique unless testing that.
    The release defaults to one whose Volcano sends jobEnqueued itself, so the rules are seen
    alone."""
    built = []
    for tier in tiers:
        slots = []
        for entry in tier:
            name, plugin = entry[0], entry[1]
            flags = entry[2] if len(entry) == 3 else {}  # type: ignore[misc]
            option = PluginOption(name=name, flags=flags)
            slots.append(Slot(option, plugin, plugin.hooks()))
        built.append(slots)
    return Framework(built, release, Metrics())
