"""``priority``: only lower-priority work may be preempted.

Follows ``pkg/scheduler/plugins/priority/priority.go`` of volcano-sh/volcano at ed72c7c81
(master, 2026-08-20; the same file as v1.15.0, v1.15.1 and v1.16.0-alpha.x).

``PreemptableFn`` compares **job** priorities (``JobInfo.Priority``, resolved by Volcano from
the PodGroup's PriorityClass) when preemptor and preemptee belong to different jobs, and **task**
priorities (``TaskInfo.Priority``) inside one job. It always votes Permit, so an empty list
blocks the rest of its tier. priority registers **no** ``ReclaimableFn`` at any release: reclaim
is fairness between queues and priority does not gate it.

Releases: the nil-job guards (a preemptor whose job is not in the session gets no victims; a
preemptee whose job is not in the session is skipped) came with commit 10511ae51, first released
in v1.15.0. Before it Volcano dereferenced the missing job and the scheduler goroutine panicked,
except when the preemptee list was empty (then the answer was already "no victims, Permit").
A panic is not an answer an extender can give, so Caldera answers the guarded v1.15 behaviour for
every ``volcanoVersion``; for v1.6 to v1.14 it differs from upstream only where upstream crashed.

What the extender cannot carry (``in_tree_only``): ``TaskOrderFn``, ``JobOrderFn``,
``SubJobOrderFn`` (v1.14+), ``JobStarvingFn`` and ``UnifiedEvictableFn`` (v1.15+, gang-aware
eviction) are called in-process only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal

from plugins.api import (
    Arguments,
    Background,
    EvictResult,
    Explained,
    Plugin,
    Reason,
    Session,
    Upstream,
    Vote,
    register,
)
from schemas.api import JobInfo, TaskInfo

ORPHANED_PREEMPTOR = Reason(
    "orphaned-preemptor", "the preemptor's job is not in the session (its PodGroup was deleted)"
)

logger = logging.getLogger("caldera.plugins.priority")


@register
class PriorityPlugin(Plugin):
    name: ClassVar[str] = "priority"
    on_error: ClassVar[Literal["fail", "abstain"]] = "fail"
    """Its answer protects higher-priority pods from eviction: abstaining would offer them."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/priority/priority.go",),
        commit="ed72c7c81",
        releases="v1.6.0 and later, per-release differences by ssn.release",
    )
    needs_snapshot: ClassVar[bool] = True
    in_tree_only: ClassVar[tuple[str, ...]] = (
        "TaskOrderFn",
        "JobOrderFn",
        "SubJobOrderFn",
        "JobStarvingFn",
        "UnifiedEvictableFn",
    )

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)  # priority takes no arguments
        self._jobs: Mapping[str, JobInfo] = {}
        self._reasons: dict[tuple[str, int, int], Reason] = {}

    def _not_lower(self, between: str, theirs: int, ours: int) -> Reason:
        """Why a preemptee stays: its priority is not below the preemptor's (built once per
        pair of priorities in a session)."""
        key = (between, theirs, ours)
        reason = self._reasons.get(key)
        if reason is None:
            reason = self._reasons[key] = Reason(
                "not-lower-priority",
                f"its {between} priority {theirs} is not below the preemptor's {ours}",
            )
        return reason

    def on_session_open(self, ssn: Session) -> None:
        self._jobs = ssn.jobs

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        preemptor_job = self._jobs.get(preemptor.Job)
        if preemptor_job is None:
            # v1.15+ guard: an orphaned preemptor (its PodGroup was deleted) evicts nothing.
            logger.debug("preemptor job %s not in session; no victims", preemptor.Job)
            return Explained(([], Vote.PERMIT), vetoes=dict.fromkeys(
                (p.UID for p in preemptees), ORPHANED_PREEMPTOR))  # fmt: skip
        victims: list[TaskInfo] = []
        vetoes: dict[str, Reason] = {}
        for preemptee in preemptees:
            preemptee_job = self._jobs.get(preemptee.Job)
            if preemptee_job is None:
                # v1.15+ guard: an orphaned preemptee is neither protected nor a victim here.
                logger.debug("preemptee %s/%s: job %s not in session; skipped",
                             preemptee.Namespace, preemptee.Name, preemptee.Job)  # fmt: skip
                continue
            if preemptee_job.UID != preemptor_job.UID:
                # Between jobs the job priorities decide (equal priority protects).
                if preemptee_job.Priority < preemptor_job.Priority:
                    victims.append(preemptee)
                else:
                    vetoes[preemptee.UID] = self._not_lower(
                        "job", preemptee_job.Priority, preemptor_job.Priority
                    )
            elif preemptee.Priority < preemptor.Priority:
                # Inside one job the task priorities decide.
                victims.append(preemptee)
            else:
                vetoes[preemptee.UID] = self._not_lower(
                    "task", preemptee.Priority, preemptor.Priority
                )
        return Explained((victims, Vote.PERMIT), vetoes=vetoes)
