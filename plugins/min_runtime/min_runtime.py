"""``min-runtime``: a running job is not preempted or reclaimed before it has run a minimum time.

A port of KAI-Scheduler's ``minruntime`` plugin (reclaim-min-runtime and preempt-min-runtime):
``pkg/scheduler/plugins/minruntime/minruntime.go`` and ``resolver.go`` (the latter is
``plugins/min_runtime/resolver.py``) of
kai-scheduler/KAI-Scheduler at d5bc503a (2026-08-07), the same algorithm as NVIDIA/KAI-Scheduler
at 72de64fc (PR #162) apart from the per-job protection caches PR #1809 removed (no protection
boolean is cached here either; see **The session's instant** for when it is judged). The design
is KAI's ``docs/developer/designs/min-runtime/README.md``; the start time is the PodGroup annotation
``kai.scheduler/last-start-timestamp`` (``pkg/common/constants/constants.go``), read as
``podgroup_info/job_info.go`` reads it.

**Semantics.** A job is protected while ``now < start + min-runtime`` (strictly: at equality it
may be evicted). A job with no start time is never protected. Two durations exist, each resolved
through the queue tree and falling back to a plugin default:

* preempt-min-runtime, for a victim in the preemptor's queue: the first queue, walking up from
  the victim's queue, that sets it (the preemptor is ignored, as in KAI);
* reclaim-min-runtime, for a victim in another queue. ``reclaimResolveMethod: lca`` (default):
  take the lowest common ancestor of the two queues, step one queue down towards the victim
  (no step when the victim's queue is the ancestor), then walk up. Top-level queues are siblings
  under a shadow root, so across top-level trees the victim's top-level queue decides.
  ``reclaimResolveMethod: queue``: walk up from the victim's queue, as for preempt.

A queue that sets a value, even ``0s`` or a negative one, stops the walk. A non-elastic victim
that is protected is filtered out. An elastic one (PodGroup ``minMember`` below its task count)
always passes KAI's victim filter; KAI's scenario validator then refuses any eviction scenario
that would leave a protected elastic job below ``minAvailable`` in a sub-group it touches.

**Volcano mapping.** Volcano's ``extender`` plugin calls ``preemptable`` from the ``preempt``
action and ``reclaimable`` from ``reclaim``. The preempt action only offers victims of the
preemptor's own queue (between jobs, ``preempt.go``: ``job.Queue == preemptorJob.Queue``) or of
the preemptor's own job (intra-job preemption); reclaim only offers victims of other queues
(``reclaim.go``: ``j.Queue != job.Queue``). So KAI's same-queue rule is exactly the preemptable
verb and its cross-queue rule exactly the reclaimable verb, as the reference (§8.3) recommends:
``preemptable`` uses preempt-min-runtime and ``reclaimable`` reclaim-min-runtime. Victims of the
preemptor's own job pass (KAI never offers a job as its own victim), as do victims whose job is
not in the session (no PodGroup, so no start time).

KAI sees a whole eviction scenario at once; Volcano asks once per (preemptor task, node), and
evicts from the victims returned only until the task fits. The elastic rule therefore becomes a
session-wide budget: every victim of an elastic job this plugin grants, in any preemptable or
reclaimable call of the session, is counted as gone, and while the job is protected a victim is
granted only if the job keeps at least ``MinAvailable`` allocated tasks (and its role at least
``TaskMinAvailable[role]``, Volcano's per-role ``minTaskMember``, the analogue of KAI's
sub-groups) after all those victims. Counting every grant as an eviction is conservative: a
granted victim that another plugin or the fit check spares still uses the budget (the
reference's option (a); tracking real evictions would need the allocate/deallocate verbs). A
victim granted before is granted again without counting twice. The budget lives in the plugin
instance, which the framework builds afresh for every session. "Allocated" is
``api.AllocatedStatus`` in the snapshot (Allocated, Binding, Bound, Running); KAI's validator
also counts Releasing and Pipelined pods as staying, but a Releasing pod is leaving and the
snapshot, taken at session open, holds no Pipelined ones. Elastic means ``MinAvailable`` below
the number of tasks in any status, as KAI counts pods. A protected job already below its
minimum (pods failed) gives nothing. Gang's own victim rule is close to this one; the README
explains when each applies. KAI judges elasticity per sub-group and, once a PodGroup has
sub-groups, checks only theirs; a Volcano PodGroup has ``minMember`` (the gang, which Volcano
keeps) and ``minTaskMember`` per role, and both bind here. So a job whose ``minMember`` is its
task count keeps every task even when a role's ``minTaskMember`` is below its replicas: the
answer the per-job elasticity test already gives (issue 29, item 4).

**Start time.** The PodGroup annotation ``kai.scheduler/last-start-timestamp`` (key configurable)
when it is set and non-empty, parsed as Go's ``time.Parse(time.RFC3339, …)``; a value that does
not parse means "no start time" (KAI ignores it, and so the job is not protected). Volcano
writes no such annotation, so without it the start time is derived from the snapshot alone: the
earliest, over the job's tasks that are allocated now (``api.AllocatedStatus``: Allocated,
Binding, Bound, Running), of the pod's ``PodScheduled=True`` condition ``lastTransitionTime``,
or else the pod's ``status.startTime``. That survives a restart of Caldera; it approximates KAI's
"stamped when the job goes from 0 to some allocated tasks" (a job whose original pods were all
replaced without ever reaching zero looks younger than it is, so it is protected longer).

**The session's instant.** Protection is judged against one instant per session, read from the
clock when the session opens (the moment its snapshot is taken), not against the clock at each
call. Volcano asks once per (preemptor task, node) in a session, and the elastic budget spans
those calls: with the clock read per call, a job whose minimum runtime ends while the session
runs would be protected in one call and free in the next, so which of its pods go would depend on
how fast the calls arrive (load, not the snapshot; issue 37, item 10). With one instant, a
session's answers are a function of its snapshot, that instant and the evictees in the order
Volcano offers them. KAI reads ``time.Now()`` on every call within a session that lasts well
under a second; a job whose protection ends during a session is freed by the next one, one
scheduling period later.

**Queue settings** come from Volcano Queue annotations (Volcano Queues have no such fields):
``preempt-min-runtime`` and ``reclaim-min-runtime`` by default, parsed with Go's
``time.ParseDuration`` like KAI's ``metav1.Duration`` queue fields (no ``d``/``w``). Present
means set; a value that does not parse is treated as absent (inherit) and logged once. The tree is
``spec.parent`` (empty means ``root``). Two deliberate differences from a literal reading of the
tree helpers in ``plugins/support/queues.py``:

* KAI's hierarchy path stops at a queue whose parent the snapshot lacks and treats that orphan
  as top-level (resolver_test.go, "orphaned victim queue"); ``QueueTree`` hangs the missing
  parent under ``root`` as a queue of its own, which would make it the step-down target. The
  resolver builds KAI's path from ``QueueTree.ancestors`` and resolves the LCA on it.
* ``root`` is above every top-level queue and is consulted last in every walk, after the
  top-level queue and before the plugin default: annotating ``root`` sets a cluster-wide value.
  With ``root`` unannotated (KAI has no such queue) the results are KAI's exactly.

A job whose queue the session does not hold (or, for reclaim, whose preemptor's job or queue it
does not hold) gets the plugin default, as KAI's resolver does for a nil queue. A parent cycle,
which KAI's walk would never leave, ends the walk (``QueueTree`` cuts it).
Durations are cached per session: per victim queue for preempt, per (preemptor queue, victim
queue) for reclaim; nothing is kept per (pending job, victim) pair.

**Arguments** (KAI's names for the first three):

* ``defaultPreemptMinRuntime``, ``defaultReclaimMinRuntime``: duration strings in
  ``go-str2duration`` v2's grammar (Go's units plus ``d`` = 24h and ``w`` = 168h), default
  ``0s``. A value that does not parse, or is negative, is logged and gives ``0s`` (KAI's
  ``parseMinRuntime``). A non-string YAML value (``10``) keeps the default with a warning
  (Volcano's ``GetString`` rule; KAI would read ``"10"``, which does not parse either).
* ``reclaimResolveMethod``: ``lca`` (default) or ``queue``; empty means ``lca``, anything else is
  logged and gives ``lca``.
* ``preemptMinRuntimeAnnotation``, ``reclaimMinRuntimeAnnotation``: the Queue annotation keys
  (defaults ``preempt-min-runtime``, ``reclaim-min-runtime``).
* ``lastStartTimestampAnnotation``: the PodGroup annotation holding the start time (default
  ``kai.scheduler/last-start-timestamp``, KAI's key, for a controller that stamps it).

An empty annotation key is logged and the default kept.

**Votes.** ``preemptable`` and ``reclaimable`` return ``(victims, Permit)`` with the evictees
that may go, in their order, as cdp and pdb do: when every evictee is protected the empty list
ends the plugin's tier with no victims, and Volcano's next tier decides (see the README for the
tier layout this needs).

Releases: nothing branches on ``ssn.release``. Both verbs exist from v1.6, and the ≤1.13
(flattened) and ≥1.14 JSON shapes of Queue and PodGroup fold into the same view, so the
annotations are read alike; before hierarchical queues every queue is top-level.

What the extender cannot carry (``in_tree_only``): KAI's hooks have no Volcano twin beyond the
victim filters; the gang-aware ``gangpreempt``/``gangreclaim`` actions (v1.15+) consult only
``UnifiedEvictableFn``, which no extender verb carries, so they never ask this plugin.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
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
    utc_now,
    warn_once,
)
from plugins.min_runtime.resolver import (
    PREEMPT_MIN_RUNTIME,
    RECLAIM_MIN_RUNTIME,
    RESOLVE_LCA,
    RESOLVE_METHODS,
    Resolver,
)
from plugins.support.units import format_duration
from schemas.api import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo
from schemas.goduration import (
    GO_ZERO_TIME,
    DurationError,
    go_time,
    nanos_between,
    parse_str2duration,
)

logger = logging.getLogger("caldera.plugins.min_runtime")

DEFAULT_PREEMPT_MIN_RUNTIME = "defaultPreemptMinRuntime"
DEFAULT_RECLAIM_MIN_RUNTIME = "defaultReclaimMinRuntime"
RECLAIM_RESOLVE_METHOD = "reclaimResolveMethod"
PREEMPT_ANNOTATION_ARGUMENT = "preemptMinRuntimeAnnotation"
RECLAIM_ANNOTATION_ARGUMENT = "reclaimMinRuntimeAnnotation"
START_ANNOTATION_ARGUMENT = "lastStartTimestampAnnotation"

LAST_START_TIMESTAMP = "kai.scheduler/last-start-timestamp"
"""KAI's ``constants.LastStartTimeStamp``."""


# --- arguments ---------------------------------------------------------------------------------


def parse_min_runtime(arguments: Arguments, key: str) -> int:
    """KAI's ``parseMinRuntime``: nanoseconds; missing gives 0, unparsable or negative gives 0."""
    text = arguments.get_string(key, "0s")
    try:
        nanos = parse_str2duration(text)
    except DurationError as exc:
        arguments.warn(f"min-runtime: failed to parse {key} {text!r} ({exc}); using 0s", key)
        arguments.use(key, "0s")
        return 0
    if nanos < 0:
        arguments.warn(f"min-runtime: {key} {text!r} is negative; using 0s", key)
        arguments.use(key, "0s")
        return 0
    return nanos


def parse_resolve_method(arguments: Arguments) -> str:
    method = arguments.get_string(RECLAIM_RESOLVE_METHOD, "")
    if not method:
        arguments.use(RECLAIM_RESOLVE_METHOD, RESOLVE_LCA)
        return RESOLVE_LCA
    if method not in RESOLVE_METHODS:
        arguments.warn(
            f"min-runtime: invalid {RECLAIM_RESOLVE_METHOD} {method!r}"
            f" (expected {' or '.join(RESOLVE_METHODS)}); using {RESOLVE_LCA}",
            RECLAIM_RESOLVE_METHOD,
        )
        arguments.use(RECLAIM_RESOLVE_METHOD, RESOLVE_LCA)
        return RESOLVE_LCA
    arguments.use(RECLAIM_RESOLVE_METHOD, method)
    return method


def _annotation_key(arguments: Arguments, key: str, default: str) -> str:
    value = arguments.get_string(key, default)
    if not value:
        arguments.warn(f"min-runtime: {key} is empty; using {default!r}", key)
        arguments.use(key, default)
        return default
    return value


# --- start time -----------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_rfc3339(text: str) -> datetime | None:
    """Go's ``time.Parse(time.RFC3339, text)``: fractional seconds accepted (truncated to
    microseconds here), ``Z`` or a ``±hh:mm`` offset required; None where Go errs."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        if zulu:
            tz: timezone = UTC
        else:
            if int(off_h) > 23 or int(off_m) > 59:
                return None
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            tz = timezone(-offset if sign == "-" else offset)
        micros = int((fraction or "0")[:6].ljust(6, "0"))
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros, tz
        )
    except ValueError:
        return None


def _pod_start(task: TaskInfo) -> datetime | None:
    """The pod's first ``PodScheduled=True`` transition, else its ``status.startTime``."""
    status = task.Pod.status if task.Pod is not None else None
    if status is None:
        return None
    for condition in status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "True":
            if condition.lastTransitionTime is not None:
                return go_time(condition.lastTransitionTime)
            break
    return go_time(status.startTime) if status.startTime is not None else None


def derived_start_time(job: JobInfo) -> datetime | None:
    """The earliest start of the job's tasks that are allocated now (see the module docstring)."""
    earliest: datetime | None = None
    for task in (job.Tasks or {}).values():
        if task.Status not in ALLOCATED_STATUSES:
            continue
        started = _pod_start(task)
        if started is None or started == GO_ZERO_TIME:
            continue
        if earliest is None or started < earliest:
            earliest = started
    return earliest


def job_start_time(job: JobInfo, annotation: str = LAST_START_TIMESTAMP) -> datetime | None:
    """The annotation when set and non-empty (None if it does not parse), else the derived time.
    Go's zero time counts as no start time (``IsZero``)."""
    meta = job.PodGroup.metadata if job.PodGroup is not None else None
    value = (meta.annotations or {}).get(annotation, "") if meta is not None else ""
    if value:
        started = parse_rfc3339(value)
        if started is None:
            warn_once(
                logger,
                f"min-runtime: job {job.Namespace}/{job.Name}: {annotation}={value!r} is not"
                " RFC 3339; the job has no start time and is not protected",
            )
            return None
    else:
        started = derived_start_time(job)
    if started is None or started == GO_ZERO_TIME:
        return None
    return started


def is_protected(min_runtime: int, start: datetime | None, now: datetime) -> bool:
    """``now < start + min_runtime``; never without a start time."""
    return start is not None and nanos_between(start, now) < min_runtime


def _protection(kind: str, job: str, min_runtime: int, start: datetime | None, more: str) -> Reason:
    """Why min-runtime spares a pod: its job's start, minimum runtime and the end of it."""
    assert start is not None  # only a started job is protected
    try:
        until = (start + timedelta(microseconds=min_runtime // 1000)).isoformat()
    except OverflowError:
        until = "after year 9999"
    return Reason(
        "min-runtime" if not more else "min-runtime-elastic",
        f"job {job} started {start.isoformat()} with a {kind} minimum runtime of"
        f" {format_duration(min_runtime)}: protected until {until}{more}",
    )


# --- the elastic budget ---------------------------------------------------------------------


@dataclass(slots=True)
class ElasticBudget:
    """What an elastic job may lose while protected, and what it was granted this session."""

    min_available: int
    task_min_available: Mapping[str, int]
    allocated: int
    allocated_by_role: Mapping[str, int]
    granted: dict[str, str] = field(default_factory=dict)
    """Task UID to role, for every victim of this job granted in the session."""
    granted_by_role: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, job: JobInfo) -> ElasticBudget:
        by_role: Counter[str] = Counter()
        for task in (job.Tasks or {}).values():
            if task.Status in ALLOCATED_STATUSES:
                by_role[task.TaskRole] += 1
        return cls(
            min_available=job.MinAvailable,
            task_min_available=job.TaskMinAvailable or {},
            allocated=sum(by_role.values()),
            allocated_by_role=by_role,
        )

    def fits(self, task: TaskInfo) -> bool:
        """Whether the job keeps ``MinAvailable`` (and its role's minimum) after every grant so
        far and ``task``."""
        new = task.UID not in self.granted
        role = task.TaskRole
        if self.allocated - (len(self.granted) + new) < self.min_available:
            return False
        role_min = self.task_min_available.get(role)
        if role_min is None:
            return True
        remaining = self.allocated_by_role.get(role, 0) - (self.granted_by_role[role] + new)
        return remaining >= role_min

    def grant(self, task: TaskInfo) -> None:
        if task.UID not in self.granted:
            self.granted[task.UID] = task.TaskRole
            self.granted_by_role[task.TaskRole] += 1


@dataclass(slots=True)
class _JobState:
    start: datetime | None
    budget: ElasticBudget | None
    """None for a job that is not elastic."""


def is_elastic(job: JobInfo) -> bool:
    """``PodGroupInfo.IsElastic``: fewer required than the tasks it has, in any status."""
    return job.MinAvailable < len(job.Tasks or {})


# --- the plugin -------------------------------------------------------------------------------

PREEMPT = "preempt"
RECLAIM = "reclaim"


@register
class MinRuntimePlugin(Plugin):
    name: ClassVar[str] = "min-runtime"
    on_error: ClassVar[Literal["fail", "abstain"]] = "fail"
    """Its answer protects pods within their minimum runtime from eviction: abstaining would offer them."""
    upstream = Upstream(
        repository="kai-scheduler/KAI-Scheduler",
        files=(
            "pkg/scheduler/plugins/minruntime/minruntime.go",
            "pkg/scheduler/plugins/minruntime/resolver.go",
        ),
        commit="d5bc503a",
        releases="no Volcano twin: KAI-Scheduler's plugin, hosted for every Volcano release",
    )
    needs_snapshot: ClassVar[bool] = True
    in_tree_only: ClassVar[tuple[str, ...]] = ("UnifiedEvictableFn",)

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.default_preempt = parse_min_runtime(arguments, DEFAULT_PREEMPT_MIN_RUNTIME)
        self.default_reclaim = parse_min_runtime(arguments, DEFAULT_RECLAIM_MIN_RUNTIME)
        self.resolve_method = parse_resolve_method(arguments)
        self.preempt_annotation = _annotation_key(
            arguments, PREEMPT_ANNOTATION_ARGUMENT, PREEMPT_MIN_RUNTIME
        )
        self.reclaim_annotation = _annotation_key(
            arguments, RECLAIM_ANNOTATION_ARGUMENT, RECLAIM_MIN_RUNTIME
        )
        self.start_annotation = _annotation_key(
            arguments, START_ANNOTATION_ARGUMENT, LAST_START_TIMESTAMP
        )
        self._jobs: Mapping[str, JobInfo] = {}
        self._reasons: dict[tuple[str, str, int, datetime | None, int | None], Reason] = {}
        self._queues: Mapping[str, QueueInfo] = {}
        self._instant = go_time(utc_now())
        """The session's instant, every protection is judged at (set on session open)."""
        self.resolver = Resolver({}, self.default_preempt, self.default_reclaim)
        self._state: dict[str, _JobState] = {}

    def on_session_open(self, ssn: Session) -> None:
        self._jobs = ssn.jobs
        self._queues = ssn.queues
        self._instant = go_time(ssn.now())  # an aware instant, whatever the clock returns
        self.resolver = Resolver(
            ssn.queues,
            self.default_preempt,
            self.default_reclaim,
            self.preempt_annotation,
            self.reclaim_annotation,
        )

    def _job_state(self, key: str, job: JobInfo) -> _JobState:
        state = self._state.get(key)
        if state is None:
            budget = ElasticBudget.of(job) if is_elastic(job) else None
            state = _JobState(job_start_time(job, self.start_annotation), budget)
            self._state[key] = state
        return state

    def _queue(self, job: JobInfo | None) -> str | None:
        """The job's queue as KAI looks it up: None when the session does not hold it."""
        if job is None or job.Queue not in self._queues:
            return None
        return job.Queue

    def _min_runtime(self, kind: str, evictor_job: JobInfo | None, victim_job: JobInfo) -> int:
        if kind == PREEMPT:
            nanos, error = self.resolver.preempt_min_runtime(self._queue(victim_job))
        else:
            nanos, error = self.resolver.reclaim_min_runtime(
                self.resolve_method, self._queue(evictor_job), self._queue(victim_job)
            )
        if error is not None:
            logger.debug(
                "min-runtime: %s of %s/%s: %s; using the default",
                kind, victim_job.Namespace, victim_job.Name, error,
            )  # fmt: skip
        return nanos

    def _filter(
        self, kind: str, evictor: TaskInfo, evictees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        now = self._instant
        evictor_job = self._jobs.get(evictor.Job)
        victims: list[TaskInfo] = []
        vetoes: dict[str, Reason] = {}
        for task in evictees:
            job = self._jobs.get(task.Job)
            if job is None or task.Job == evictor.Job:
                victims.append(task)  # no PodGroup, no start time; or intra-job preemption
                continue
            state = self._job_state(task.Job, job)
            min_runtime = self._min_runtime(kind, evictor_job, job)
            protected = state.start is not None and is_protected(min_runtime, state.start, now)
            budget = state.budget
            if budget is None:
                if not protected:
                    victims.append(task)
                else:
                    logger.debug("min-runtime: %s/%s protected from %s",
                                 task.Namespace, task.Name, kind)  # fmt: skip
                    vetoes[task.UID] = self._protection(kind, task.Job, min_runtime, state.start)
                continue
            if protected and not budget.fits(task):
                logger.debug("min-runtime: %s/%s kept: its elastic job would drop below its"
                             " minimum while protected", task.Namespace, task.Name)  # fmt: skip
                vetoes[task.UID] = self._protection(
                    kind, task.Job, min_runtime, state.start, budget.min_available
                )
                continue
            budget.grant(task)
            victims.append(task)
        return Explained((victims, Vote.PERMIT), vetoes=vetoes)

    def _protection(
        self, kind: str, job: str, min_runtime: int, start: datetime | None,
        elastic_minimum: int | None = None,
    ) -> Reason:  # fmt: skip
        """The reason a task of ``job`` is spared, built once per session and question."""
        key = (kind, job, min_runtime, start, elastic_minimum)
        reason = self._reasons.get(key)
        if reason is None:
            more = (
                ""
                if elastic_minimum is None
                else f"; its elastic job may lose no more pods below minAvailable {elastic_minimum}"
            )
            reason = self._reasons[key] = _protection(kind, job, min_runtime, start, more)
        return reason

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return self._filter(PREEMPT, preemptor, preemptees)

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return self._filter(RECLAIM, reclaimer, reclaimees)
