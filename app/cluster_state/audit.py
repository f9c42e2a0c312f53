"""Cluster mode audits itself with what Volcano sends anyway (issue 49, item 2).

In cluster mode Volcano posts no snapshot, but every call still carries its own view of the
objects the call is about: jobEnqueueable, jobEnqueued and jobReady the JobInfo, predicate and
prioritize the TaskInfo and the live NodeInfo(s), preemptable and reclaimable the TaskInfos,
allocate and deallocate the TaskInfo. Each session keeps a sample of them (the first
:attr:`AuditBudget.per_session` distinct objects, at most a third of them of one section) by
reference, a few dictionary operations on the call's path; after onSessionClose has been
answered, between sessions, each is compared with the object the session's derived state holds
(app/cluster_state/compare.py: the same kinds as compare mode, the same in-flight rule).

Volcano's objects are those of its session, which its own allocations change as it goes (a
task Allocated, a node's Idle smaller). The placements Volcano reported in the session
(allocate, deallocate) explain a difference on what they touched: the task, its job, and the
node it was placed on or evicted from; those are counted as ``in_session``, as in-flight ones
are. What is neither is the derivation's or the watch's, and is what the audit is for: counted
under ``caldera_session_state_audit_differences_total{kind,explained="no"}``, logged as a
warning per kind, shown in ``/debug/session``. Sessions in a row with such a difference, past
``sessionStateMaxDivergentSessions``, make the view stale (app/cluster_state/staleness.py):
a divergence no watch error shows, such as a derivation bug or a watch that silently stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from app.cluster_state.compare import Difference, compare
from schemas.api import JobInfo, NodeInfo, TaskInfo
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.session_state")

DEFAULT_MAX_DIVERGENT_SESSIONS = 3
"""Sessions in a row with an unexplained difference before the view counts as stale. One can
be a race the in-flight rule does not see (an object changed twice between the two instants);
three in a row, seconds apart, is a view that is wrong."""

EXPLAINED = ("no", "in_flight", "in_session")
"""The ``explained`` label: not explained, in flight (an object it derives from was seen at
another version by each side), or touched by a placement of this session."""


@dataclass(frozen=True, slots=True)
class AuditBudget:
    per_session: int = 24
    """Objects compared per session at most (jobs, tasks and nodes together)."""

    @property
    def per_section(self) -> int:
        return max(1, self.per_session // 3)


@dataclass
class _Sample:
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    touched_tasks: set[str] = field(default_factory=set)
    touched_jobs: set[str] = field(default_factory=set)
    touched_nodes: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class AuditResult:
    session: int
    objects: int
    differences: list[Difference]
    in_session: frozenset[int]
    """Indexes into ``differences`` of those touched by this session's placements."""

    def explained(self, index: int) -> str:
        if index in self.in_session:
            return "in_session"
        return "in_flight" if self.differences[index].in_flight else "no"

    @property
    def unexplained(self) -> int:
        return sum(1 for i in range(len(self.differences)) if self.explained(i) == "no")


class SelfAudit:
    """One session's sample of Volcano's objects, compared after the session with its state."""

    def __init__(
        self,
        budget: AuditBudget | None = None,
        max_divergent_sessions: int = DEFAULT_MAX_DIVERGENT_SESSIONS,
        count: Callable[[str, str, int], None] | None = None,
    ) -> None:
        self.budget = budget or AuditBudget()
        self.max_divergent_sessions = max_divergent_sessions
        self._count = count
        """Adds to ``caldera_session_state_audit_differences_total{kind,explained}``."""
        self._state: OnSessionOpenRequest | None = None
        self._session = 0
        self._sample = _Sample()
        self.divergent_in_a_row = 0
        self.sessions_audited = 0
        self.objects_audited = 0
        self.last: dict[str, Any] | None = None

    # --- on the call's path: references kept, nothing compared ----------------------------

    def session_opened(self, number: int, state: OnSessionOpenRequest | None) -> None:
        self._session = number
        self._state = state
        self._sample = _Sample()

    def job(self, job: JobInfo) -> None:
        jobs = self._sample.jobs
        if self._state is not None and len(jobs) < self.budget.per_section:
            jobs.setdefault(job.UID, job)

    def task(self, task: TaskInfo) -> None:
        tasks = self._sample.tasks
        if self._state is not None and len(tasks) < self.budget.per_section:
            tasks.setdefault(task.UID, task)

    def nodes(self, nodes: Iterable[NodeInfo]) -> None:
        """A call's nodes: the first one not yet sampled (a prioritize body holds many)."""
        sampled = self._sample.nodes
        if self._state is None or len(sampled) >= self.budget.per_section:
            return
        for node in nodes:
            if node.Name not in sampled:
                sampled[node.Name] = node
                return

    def placed(self, task: TaskInfo) -> None:
        """allocate or deallocate: what it touched explains a difference this session."""
        sample = self._sample
        sample.touched_tasks.add(task.UID)
        sample.touched_jobs.add(task.Job)
        if task.NodeName:
            sample.touched_nodes.add(task.NodeName)

    # --- after the session, between sessions ------------------------------------------------

    def session_closed(self) -> AuditResult | None:
        """Compare the session's sample with its state; None when nothing was sampled."""
        state, sample = self._state, self._sample
        self._state, self._sample = None, _Sample()
        if state is None or not (sample.jobs or sample.tasks or sample.nodes):
            return None
        sent, derived = _pair(sample, state)
        differences = compare(sent, derived)
        in_session = frozenset(i for i, d in enumerate(differences) if _touched(d, sample))
        result = AuditResult(
            self._session,
            len(sample.jobs) + len(sample.tasks) + len(sample.nodes),
            differences,
            in_session,
        )
        self._record(result)
        return result

    def _record(self, result: AuditResult) -> None:
        self.sessions_audited += 1
        self.objects_audited += result.objects
        by_kind: dict[tuple[str, str], int] = {}
        examples: dict[str, Difference] = {}
        for i, difference in enumerate(result.differences):
            explained = result.explained(i)
            key = (difference.kind, explained)
            by_kind[key] = by_kind.get(key, 0) + 1
            if explained == "no":
                examples.setdefault(difference.kind, difference)
        for (kind, explained), n in sorted(by_kind.items()):
            if self._count is not None:
                self._count(kind, explained, n)
        for kind, example in sorted(examples.items()):
            logger.warning(
                "derived session %d: self-audit: %d unexplained difference(s) of kind %s"
                " between what Volcano sent and the derived state, e.g. %s%s",
                result.session,
                by_kind[(kind, "no")],
                kind,
                example.object,
                example.path,
            )
        self.divergent_in_a_row = self.divergent_in_a_row + 1 if result.unexplained else 0
        self.last = {
            "derivedSession": result.session,
            "objects": result.objects,
            "differences": len(result.differences),
            "unexplained": result.unexplained,
            "byKind": {f"{k}/{e}": n for (k, e), n in sorted(by_kind.items())},
        }

    def divergence(self) -> str | None:
        """Why the view counts as stale by the audit, or None (never with a limit of 0)."""
        if not self.max_divergent_sessions or self.divergent_in_a_row < self.max_divergent_sessions:
            return None
        return (
            f"the self-audit found differences no placement or in-flight change explains in"
            f" {self.divergent_in_a_row} sessions in a row (sessionStateMaxDivergentSessions"
            f" {self.max_divergent_sessions}): the derived state is not what Volcano sees"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "perSession": self.budget.per_session,
            "sessionsAudited": self.sessions_audited,
            "objectsAudited": self.objects_audited,
            "divergentSessionsInARow": self.divergent_in_a_row,
            "last": self.last,
        }


def _pair(
    sample: _Sample, state: OnSessionOpenRequest
) -> tuple[OnSessionOpenRequest, OnSessionOpenRequest]:
    """The sampled objects as a snapshot of their own, and the derived state's same objects
    (absent where the derived state has none: a ``missing`` difference)."""
    derived_jobs = state.Jobs or {}
    derived_nodes = state.Nodes or {}
    sent_jobs: dict[str, JobInfo] = dict(sample.jobs)
    kept_jobs: dict[str, JobInfo] = {
        uid: derived_jobs[uid] for uid in sample.jobs if uid in derived_jobs
    }
    # A lone task is compared inside a bare job of its own on both sides, so only the task's
    # fields can differ (the job's own are sampled through the job verbs).
    sent_tasks: dict[str, dict[str, TaskInfo]] = {}
    kept_tasks: dict[str, dict[str, TaskInfo]] = {}
    for uid, task in sample.tasks.items():
        if task.Job in sample.jobs:
            continue  # its job's own Tasks carry it already
        holder = f"task:{task.Job}"
        sent_tasks.setdefault(holder, {})[uid] = task
        kept = kept_tasks.setdefault(holder, {})
        mine = derived_jobs.get(task.Job)
        derived_task = (mine.Tasks or {}).get(uid) if mine is not None else None
        if derived_task is not None:
            kept[uid] = derived_task
    for holder, tasks in sent_tasks.items():
        job = holder.removeprefix("task:")
        sent_jobs[holder] = JobInfo(UID=job, Tasks=tasks)
        kept_jobs[holder] = JobInfo(UID=job, Tasks=kept_tasks[holder])
    sent = OnSessionOpenRequest(Jobs=sent_jobs, Nodes=dict(sample.nodes))
    derived = OnSessionOpenRequest(
        Jobs=kept_jobs,
        Nodes={name: derived_nodes[name] for name in sample.nodes if name in derived_nodes},
    )
    return sent, derived


def _touched(difference: Difference, sample: _Sample) -> bool:
    section = difference.kind.partition(".")[0]
    name = difference.object
    if section == "task":
        job, _, uid = name.rpartition("/")
        return uid in sample.touched_tasks or job.removeprefix("task:") in sample.touched_jobs
    if section == "job":
        return name.removeprefix("task:") in sample.touched_jobs
    if section == "node":
        return name in sample.touched_nodes
    return False
