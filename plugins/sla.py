"""``sla``: a job that has waited longer than its SLA is admitted regardless of later tiers.

Follows ``pkg/scheduler/plugins/sla/sla.go`` of volcano-sh/volcano at ed72c7c81 (master,
2026-08-20). The file's behaviour is identical at every release Caldera speaks (v1.6.0 to
v1.16.0-alpha.1: only the klog import and comments changed), so nothing branches on
``ssn.release``.

The waiting time of a job is ``JobInfo.WaitingTime`` when Volcano set it (it parses the
PodGroup annotations ``volcano.sh/sla-waiting-time``, then ``sla-waiting-time``, in
``JobInfo.SetPodGroup``), otherwise the plugin's ``sla-waiting-time`` argument.

What the extender cannot carry (``in_tree_only``):

- ``JobOrderFn`` (earliest deadline first): Volcano orders jobs in-process and never asks an
  extender. :meth:`SlaPlugin.compare_jobs` keeps the comparison so the upstream test vector is
  ported, but no verb reaches it.
- ``JobPipelinedFn``: the same vote as ``JobEnqueueableFn``, used by allocate; the extender
  plugin has no pipelined verb.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import ClassVar, Literal

from plugins.api import (
    Arguments,
    Background,
    Explained,
    Plugin,
    Reason,
    Session,
    Upstream,
    Vote,
    register,
    utc_now,
)
from plugins.support.goint import INT64_MAX, INT64_MIN
from plugins.support.units import format_duration
from schemas.api import JobInfo
from schemas.goduration import DurationError, go_time, nanos_between, parse_go_duration

logger = logging.getLogger("caldera.plugins.sla")

JOB_WAITING_TIME = "sla-waiting-time"
"""The plugin argument holding the cluster-wide waiting time (a Go duration string)."""

"""Go's zero ``time.Time``; a ``null`` CreationTimestamp decodes to None and means this."""


def parse_global_waiting_time(arguments: Arguments) -> int | None:
    """The ``sla-waiting-time`` argument in nanoseconds, or None when there is no global SLA.

    Upstream takes the value only if it is a Go string (a YAML int such as ``10`` becomes ``""``),
    parses it with ``time.ParseDuration`` and keeps it only when it is strictly positive; an
    invalid, zero or negative value means "no global SLA", with a log line.
    """
    if JOB_WAITING_TIME not in arguments:
        return None
    raw = arguments[JOB_WAITING_TIME]
    text = raw if isinstance(raw, str) else ""
    try:
        nanos = parse_go_duration(text)
    except DurationError as exc:
        why = (
            f"{exc}"
            if isinstance(raw, str)
            else 'not a string, so Volcano reads it as "" (write a duration such as "5m")'
        )
        arguments.warn(
            f"sla: cannot parse global job waiting time {raw!r}: {why}; no global SLA",
            JOB_WAITING_TIME,
        )
        arguments.use(JOB_WAITING_TIME, None)
        return None
    if nanos <= 0:
        arguments.warn(f"sla: invalid global waiting time {raw!r}; no global SLA", JOB_WAITING_TIME)
        arguments.use(JOB_WAITING_TIME, None)
        return None
    return nanos


def _deadline(created: datetime, waiting: int) -> str:
    """When the SLA passes, in RFC 3339 (a waiting time past year 9999 names none)."""
    try:
        return (created + timedelta(microseconds=waiting // 1000)).isoformat()
    except OverflowError:
        return "after year 9999"


def _go_since(then: datetime, now: datetime) -> int:
    """Go's ``time.Since``: ``Time.Sub`` saturates at the int64 bounds."""
    return max(INT64_MIN, min(INT64_MAX, nanos_between(then, now)))


@register
class SlaPlugin(Plugin):
    name: ClassVar[str] = "sla"
    on_error: ClassVar[Literal["fail", "abstain"]] = "abstain"
    """It only ever permits or abstains: a dropped answer can delay a job, never admit one wrongly."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/sla/sla.go",),
        commit="ed72c7c81",
        releases="v1.6.0 and later",
    )
    needs_snapshot: ClassVar[bool] = False
    in_tree_only: ClassVar[tuple[str, ...]] = ("JobOrderFn", "JobPipelinedFn")

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        # Upstream parses in OnSessionOpen; a plugin instance lives for one session either way.
        self.global_waiting_time = parse_global_waiting_time(arguments)
        self._now = utc_now

    def on_session_open(self, ssn: Session) -> None:
        self._now = ssn.now

    def waiting_time(self, job: JobInfo) -> int | None:
        """The job's own waiting time if Volcano parsed one, else the global one (ns)."""
        return job.WaitingTime if job.WaitingTime is not None else self.global_waiting_time

    def compare_jobs(self, left: JobInfo, right: JobInfo) -> int:
        """Upstream ``JobOrderFn`` (in-tree only): jobs with an SLA first, earliest deadline first."""
        lwt, rwt = self.waiting_time(left), self.waiting_time(right)
        if lwt is None:
            return 0 if rwt is None else 1
        if rwt is None:
            return -1
        # deadline(l) - deadline(r), exactly in nanoseconds
        diff = (
            nanos_between(go_time(right.CreationTimestamp), go_time(left.CreationTimestamp))
            + lwt
            - rwt
        )
        return -1 if diff < 0 else (1 if diff > 0 else 0)

    def job_enqueueable(self, job: JobInfo) -> Vote | Explained[Vote]:
        """Permit once the job has waited its SLA (deadline included), else Abstain; never Reject.

        A job without a creation timestamp is Go's zero time: ``time.Since`` saturates, so it
        is always past its deadline.
        """
        waiting = self.waiting_time(job)
        if waiting is None:
            return Vote.ABSTAIN
        created = go_time(job.CreationTimestamp)
        waited = _go_since(created, self._now())
        if job.CreationTimestamp is None:
            # Go's zero time: a deadline in year 1 and 292 years waited say nothing true.
            return Explained(
                Vote.PERMIT,
                Reason(
                    "past-sla",
                    lambda: (
                        f"has no creation timestamp, which Volcano reads as long past its"
                        f" SLA {format_duration(waiting)}: admitted"
                    ),
                ),
            )

        def sla() -> str:
            return f"SLA {format_duration(waiting)} (deadline {_deadline(created, waiting)})"

        if waited < waiting:
            return Explained(
                Vote.ABSTAIN,
                Reason("within-sla", lambda: f"waited {format_duration(waited)} of its {sla()}"),
            )
        return Explained(
            Vote.PERMIT, Reason("past-sla", lambda: f"waited past its {sla()}: admitted")
        )
