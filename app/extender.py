"""The extender verbs, from request bytes to response bytes, independent of HTTP.

Kept apart from the routes so the same code path is what the service tests, the in-process
benchmarks and the HTTP layer run. Each verb decodes only into the typed views of ``schemas/``
(msgspec skips every key no plugin reads), asks the session's framework, and encodes the answer
in the dialect of the configured Volcano release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from app.config import CalderaConfig
from app.dialect import Dialect
from app.framework import HOOK_VERB, Framework
from app.gcpolicy import SnapshotGC
from app.managed import is_interested
from app.metrics import Metrics
from app.session import SessionManager
from plugins.api import registry
from plugins.api.base import Vote
from schemas.api import TaskInfo
from schemas.requests import (
    EventHandlerEnvelope,
    EventHandlerRequest,
    EvictEnvelope,
    EvictRequest,
    JobEnvelope,
    JobRequest,
    LegacyReclaimablePathRequest,
    OnSessionCloseRequest,
    OnSessionOpenRequest,
    PredicateEnvelope,
    PredicateRequest,
    PrioritizeEnvelope,
    PrioritizeRequest,
    QueueEnvelope,
    QueueOverusedRequest,
)
from schemas.responses import (
    EventHandlerResponse,
    EvictResponse,
    JobEnqueueableResponse,
    JobReadyResponse,
    PrioritizeResponse,
    QueueOverusedResponse,
)

MAX_RESPONSE_BYTES = 10 << 20
"""Volcano wraps every response in ``http.MaxBytesReader(10 << 20)``."""

_T = TypeVar("_T")
Body = bytes | bytearray
"""A request body: bytes, or the buffer a long body was read into."""
_encode = msgspec.json.encode
EMPTY = b"{}"
_ABSTAIN = _encode(EvictResponse(status=0, victims=[]))
_NO_SCORES = _encode(PrioritizeResponse(nodeScore={}))
_NO_ERROR = _encode(EventHandlerResponse())
_ENQUEUE_ABSTAIN = _encode(JobEnqueueableResponse(status=int(Vote.ABSTAIN)))
_OVERUSED = _encode(QueueOverusedResponse(overused=True))
_NOT_OVERUSED = _encode(QueueOverusedResponse(overused=False))
_READY = _encode(JobReadyResponse(status=True))
_NOT_READY = _encode(JobReadyResponse(status=False))


class BadRequest(Exception):
    """A body Caldera cannot read: answered 400 naming the field."""


class ResponseTooLarge(Exception):
    """An answer Volcano would refuse to read."""


def _decoder(kind: type[_T]) -> Callable[[Body], _T]:
    decoder = msgspec.json.Decoder(kind)

    def decode(body: Body) -> _T:
        try:
            return decoder.decode(body)
        except msgspec.ValidationError as exc:
            raise BadRequest(_describe(str(exc))) from None
        except msgspec.DecodeError as exc:
            raise BadRequest(f"malformed JSON: {exc}") from None

    return decode


def _describe(message: str) -> str:
    """msgspec says ``... - at `$.task.Pod```; say ``at task.Pod`` like a key path."""
    return message.replace("`$.", "`").replace("`$`", "the body")


def _at(prefix: str, message: str) -> str:
    """Re-root a message about a nested document at ``prefix``."""
    if "- at `$" in message:
        return message.replace("- at `$", f"- at `{prefix}", 1)
    return f"{message} - at `{prefix}`"


_open = _decoder(OnSessionOpenRequest)
_close = _decoder(OnSessionCloseRequest)
_predicate = _decoder(PredicateRequest)
_prioritize = _decoder(PrioritizeRequest)
_evict = _decoder(EvictRequest)
_job = _decoder(JobRequest)
_queue = _decoder(QueueOverusedRequest)
_event = _decoder(EventHandlerRequest)
_legacy = _decoder(LegacyReclaimablePathRequest)
_ENVELOPES: dict[str, Callable[[Body], object]] = {
    "predicate": _decoder(PredicateEnvelope),
    "node_order": _decoder(PrioritizeEnvelope),
    "preemptable": _decoder(EvictEnvelope),
    "reclaimable": _decoder(EvictEnvelope),
    "job_enqueueable": _decoder(JobEnvelope),
    "job_enqueued": _decoder(JobEnvelope),
    "overused": _decoder(QueueEnvelope),
    "job_ready": _decoder(JobEnvelope),
    "allocate": _decoder(EventHandlerEnvelope),
    "deallocate": _decoder(EventHandlerEnvelope),
}
_task = msgspec.json.Decoder(TaskInfo)


class Extender:
    """Answers every verb for one configuration."""

    def __init__(
        self, config: CalderaConfig, sessions: SessionManager, metrics: Metrics | None = None
    ) -> None:
        self.config = config
        self.dialect = Dialect(config.volcanoVersion)
        self.sessions = sessions
        self.metrics = metrics
        self.managed = frozenset(config.managedResources)
        self.snapshot_gc = SnapshotGC()
        classes = [registry.get(option.name) for option in config.plugin_options()]
        self.snapshot_bound = any(cls is not None and cls.needs_snapshot for cls in classes)
        self._handlers: dict[str, Callable[[Body], bytes]] = {
            "onSessionOpen": self.on_session_open,
            "onSessionClose": self.on_session_close,
            "predicate": self.predicate,
            "prioritize": self.prioritize,
            "preemptable": self.preemptable,
            "reclaimable": self.reclaimable,
            "jobEnqueueable": self.job_enqueueable,
            "jobEnqueued": self.job_enqueued,
            "queueOverused": self.queue_overused,
            "jobReady": self.job_ready,
            "allocate": self.allocate,
            "deallocate": self.deallocate,
        }
        if self.dialect.legacy_reclaimable_path:
            self._handlers["reclaimable"] = self.legacy_reclaimable_path

    def handle(self, verb: str, body: Body) -> bytes:
        """Answer ``verb``; raises BadRequest, PluginFailure or ResponseTooLarge."""
        answer = self._handlers[verb](body)
        if len(answer) > MAX_RESPONSE_BYTES:
            raise ResponseTooLarge(
                f"the {verb} answer is {len(answer)} bytes; Volcano reads at most"
                f" {MAX_RESPONSE_BYTES} (10 MiB) and would fail the call"
            )
        return answer

    def _framework(self, verb: str) -> Framework:
        framework, has_session = self.sessions.framework()
        if not has_session and self.snapshot_bound and self.metrics is not None:
            self.metrics.sessionless.labels(verb).inc()
        return framework

    def _interested(self, task: TaskInfo) -> bool:
        return is_interested(task, self.managed)

    # --- verbs --------------------------------------------------------------------------------

    def on_session_open(self, body: Body) -> bytes:
        # Drop the previous snapshot before decoding the next, so memory holds one at a time;
        # a body that cannot be read then leaves no session open rather than last cycle's.
        self.sessions.close()
        with self.snapshot_gc.building():
            self.sessions.open(_open(body))
        return EMPTY

    def on_session_close(self, body: Body) -> bytes:
        _close(body)
        self.sessions.close()
        return EMPTY

    def _unanswered(self, hook: str, body: Body) -> Framework | None:
        """The framework for ``hook``, or None after validating the body's shape when no
        configured plugin answers it (the answer is then neutral whatever the contents, so the
        body is not built: a 30-pod predicate body costs half as much)."""
        framework = self._framework(HOOK_VERB[hook])
        if framework.implements(hook):
            return framework
        _ENVELOPES[hook](body)
        return None

    def predicate(self, body: Body) -> bytes:
        framework = self._unanswered("predicate", body)
        if framework is None:
            return self.dialect.encode_predicate(None)
        request = _predicate(body)
        if not self._interested(request.task):
            return self.dialect.encode_predicate(None)
        return self.dialect.encode_predicate(framework.predicate(request.task, request.node))

    def prioritize(self, body: Body) -> bytes:
        framework = self._unanswered("node_order", body)
        if framework is None:
            return _NO_SCORES
        request = _prioritize(body)
        if not self._interested(request.task):
            return _NO_SCORES
        scores = framework.node_order(request.task, request.nodes or [])
        return _encode(PrioritizeResponse(nodeScore=scores)) if scores else _NO_SCORES

    def preemptable(self, body: Body) -> bytes:
        return self._evictable("preemptable", body)

    def reclaimable(self, body: Body) -> bytes:
        return self._evictable("reclaimable", body)

    def _evictable(self, hook: str, body: Body) -> bytes:
        framework = self._unanswered(hook, body)
        if framework is None:
            return _ABSTAIN
        request = _evict(body)
        if not self._interested(request.evictor):
            return _ABSTAIN
        raws = request.evictees or []
        evictees: list[TaskInfo] = []
        for index, raw in enumerate(raws):
            try:
                evictees.append(_task.decode(raw))
            except msgspec.ValidationError as exc:
                raise BadRequest(_at(f"evictees[{index}]", str(exc))) from None
        decision = framework.evictable(hook, request.evictor, evictees)
        if not decision.decided:
            return _ABSTAIN
        # Echo the evictees as received: Volcano evicts the objects it decodes from our answer.
        raw_of = {id(task): raw for task, raw in zip(evictees, raws, strict=True)}
        try:
            victims = [raw_of[id(task)] for task in decision.victims]
        except KeyError:
            raise RuntimeError(f"a {hook} plugin returned a task it was not given") from None
        return _encode(EvictResponse(status=int(Vote.PERMIT), victims=victims))

    def job_enqueueable(self, body: Body) -> bytes:
        framework = self._framework("jobEnqueueable")
        if not (framework.implements("job_enqueueable") or framework.implements("job_enqueued")):
            _ENVELOPES["job_enqueueable"](body)
            return _ENQUEUE_ABSTAIN
        job = _job(body).job
        vote = framework.job_enqueueable(job)
        if vote != Vote.REJECT and not self.dialect.has_verb("jobEnqueued"):
            # Before v1.16 no jobEnqueued call follows an admission. Volcano's enqueue action
            # admits a job exactly when the overall vote is not Reject, so account for it now,
            # as the in-tree plugins of those releases did inside JobEnqueueableFn.
            framework.job_enqueued(job)
        return _encode(JobEnqueueableResponse(status=int(vote)))

    def job_enqueued(self, body: Body) -> bytes:
        framework = self._unanswered("job_enqueued", body)
        if framework is not None:
            framework.job_enqueued(_job(body).job)
        return EMPTY

    def queue_overused(self, body: Body) -> bytes:
        framework = self._unanswered("overused", body)
        overused = framework is not None and framework.overused(_queue(body).queue)
        return _OVERUSED if overused else _NOT_OVERUSED

    def job_ready(self, body: Body) -> bytes:
        framework = self._unanswered("job_ready", body)
        ready = framework is None or framework.job_ready(_job(body).job)
        return _READY if ready else _NOT_READY

    def allocate(self, body: Body) -> bytes:
        return self._event("allocate", body)

    def deallocate(self, body: Body) -> bytes:
        return self._event("deallocate", body)

    def _event(self, hook: str, body: Body) -> bytes:
        framework = self._unanswered(hook, body)
        if framework is None:
            return _NO_ERROR
        task = _event(body).task
        if not self._interested(task):
            return _NO_ERROR
        message = framework.event(hook, task)
        return _encode(EventHandlerResponse(errorMessage=message)) if message else _NO_ERROR

    def legacy_reclaimable_path(self, body: Body) -> bytes:
        """v1.6–v1.7: reclaimable, jobEnqueueable and queueOverused share this path."""
        shape = _legacy(body)
        if shape.evictor:
            return self.reclaimable(body)
        if shape.job:
            return self.job_enqueueable(body)
        if shape.queue:
            return self.queue_overused(body)
        raise BadRequest(
            "expected an object with 'evictor' (reclaimable), 'job' (jobEnqueueable) or"
            " 'queue' (queueOverused): Volcano 1.6–1.7 send all three to the reclaimable verb"
        )
