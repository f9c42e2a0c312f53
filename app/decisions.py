"""One typed decision stream: what the framework decided, told once to whoever listens.

The framework (app/framework.py) combines the plugins' answers; everything else it used to do
beside that — count each answer, write the decision record, turn a change of verdict into a
PodGroup Event, count and log a plugin's fault — is a subscriber to this stream, as
kube-scheduler's framework hands its Diagnosis to a recorder instead of writing Events itself.
An answer's outcome is one :class:`~app.outcome.Outcome`, shared by
``caldera_plugin_decisions_total`` (its ``outcome`` label), the decision record
(``GET /debug/explain``) and the Events.

A subscriber subclasses :class:`DecisionSink` and overrides what it listens to; :class:`Stream`
binds, per event, only the subscribers that override it, so an event nobody listens to costs a
call to a no-op and one listened to by one subscriber costs that subscriber's call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from app.outcome import Outcome
from plugins.api.base import FitError, Vote
from plugins.api.reasons import Reason
from schemas.api import JobInfo, QueueInfo, TaskInfo

if TYPE_CHECKING:
    from app.events import PodGroupEvents
    from app.explain import Answer, SessionLog
    from app.metrics import Metrics
    from app.plugin_faults import Fault, PluginFaults


OF_VOTE = {Vote.PERMIT: Outcome.PERMIT, Vote.ABSTAIN: Outcome.ABSTAIN, Vote.REJECT: Outcome.REJECT}


class DecisionSink:
    """The stream's events; every one a no-op here. Subscribers override what they need."""

    def answered(self, plugin: str, verb: str, outcome: Outcome) -> None:
        """A plugin's answer to one call."""

    def rejected(self, plugin: str, verb: str, reason: str) -> None:
        """A plugin's rejection (a failed predicate, a Reject, a veto), by reason code."""

    def predicate(self, task: TaskInfo, node: str, plugin: str, error: FitError | None) -> None:
        """The predicate's answer for ``task`` on ``node`` (``plugin``: who failed it)."""

    def scores(self, task: TaskInfo, plugin: str, scores: Mapping[str, float]) -> None:
        """One plugin's scores for ``task``."""

    def evictions(
        self, verb: str, evictor: TaskInfo, evictees: Sequence[TaskInfo], answers: list[Answer]
    ) -> None:
        """Every answer one eviction question got (the list is not changed afterwards)."""

    def job_verdict(
        self, job: JobInfo, verb: str, plugin: str, outcome: Outcome, reason: Reason | None
    ) -> None:
        """One plugin's verdict on a job (jobEnqueueable, jobReady)."""

    def queue_verdict(
        self, queue: QueueInfo, plugin: str, outcome: Outcome, reason: Reason | None
    ) -> None:
        """One plugin's verdict on a queue (queueOverused)."""

    def job_decided(self, job: JobInfo, vote: Vote, plugin: str, reason: Reason | None) -> None:
        """The enqueue vote's decision on a job (``plugin``: who rejected it)."""

    def fault(self, fault: Fault, subject: object, cause: BaseException | None) -> None:
        """A plugin's fault, asked about ``subject`` (a task, job or queue)."""


EVENTS = tuple(
    name
    for name in vars(DecisionSink)
    if not name.startswith("_") and callable(vars(DecisionSink)[name])
)


def _fan_out(handlers: Sequence[Callable[..., None]]) -> Callable[..., None]:
    def every(*args: Any) -> None:
        for handler in handlers:
            handler(*args)

    return every


class Stream(DecisionSink):
    """The subscribers, bound per event (see the module docstring)."""

    def __init__(self, subscribers: Sequence[DecisionSink]) -> None:
        self.subscribers = tuple(subscribers)
        for name in EVENTS:
            handlers = [
                handler
                for sink in self.subscribers
                if getattr(handler := getattr(sink, name), "__func__", None)
                is not vars(DecisionSink)[name]
            ]
            if len(handlers) == 1:
                setattr(self, name, handlers[0])
            elif handlers:
                setattr(self, name, _fan_out(handlers))


class MetricsSubscriber(DecisionSink):
    """``caldera_plugin_decisions_total`` and ``caldera_rejections_total``."""

    def __init__(self, metrics: Metrics) -> None:
        self.decisions = metrics.decisions.inc
        self.rejections = metrics.rejections.inc

    def answered(self, plugin: str, verb: str, outcome: Outcome) -> None:
        self.decisions((plugin, verb, outcome))

    def rejected(self, plugin: str, verb: str, reason: str) -> None:
        self.rejections((plugin, verb, reason))


class RecordSubscriber(DecisionSink):
    """The session's decision record (app/explain.py)."""

    def __init__(self, log: SessionLog, clock: Callable[[], datetime]) -> None:
        self.log = log
        self.clock = clock
        self.predicate = log.predicate  # type: ignore[method-assign]
        self.scores = log.scores  # type: ignore[method-assign]

    def evictions(
        self, verb: str, evictor: TaskInfo, evictees: Sequence[TaskInfo], answers: list[Answer]
    ) -> None:
        self.log.evictions(verb, evictor, evictees, answers, self.clock())

    def job_verdict(
        self, job: JobInfo, verb: str, plugin: str, outcome: Outcome, reason: Reason | None
    ) -> None:
        self.log.job_verdict(
            f"{job.Namespace}/{job.Name}", job.Queue, verb, plugin, outcome, reason, self.clock()
        )

    def queue_verdict(
        self, queue: QueueInfo, plugin: str, outcome: Outcome, reason: Reason | None
    ) -> None:
        self.log.queue_verdict(queue.Name, plugin, outcome, reason, self.clock())

    def fault(self, fault: Fault, subject: object, cause: BaseException | None) -> None:
        if isinstance(subject, TaskInfo):
            self.log.task_fault(subject, fault)
        elif isinstance(subject, JobInfo):
            self.log.job_fault(f"{subject.Namespace}/{subject.Name}", subject.Queue, fault)
        elif isinstance(subject, QueueInfo):
            self.log.queue_fault(subject.Name, fault)


class EventsSubscriber(DecisionSink):
    """PodGroup Events on a change of verdict (``explainEvents``, app/events.py)."""

    def __init__(self, events: PodGroupEvents) -> None:
        self.job_decided = events.job_verdict  # type: ignore[method-assign]


class FaultSubscriber(DecisionSink):
    """The failure policy's bookkeeping: counted, logged, shown in ``/readyz``."""

    def __init__(self, faults: PluginFaults) -> None:
        self.faults = faults

    def fault(self, fault: Fault, subject: object, cause: BaseException | None) -> None:
        self.faults.record(fault, cause)
