"""Identifiers-mode calls: bodies that name their objects, answered from cluster mode's state.

The extender protocol's identifiers mode (docs/proposals/extender-identifiers.md; Volcano's side
is the patch in protocol/volcano-identifiers) sends ``{"session": ..., "task": <uid>, ...}``
instead of Volcano's objects. In ``sessionState: cluster`` Caldera already derives the session's
objects from the API server; this module looks each named object up in them
(:class:`~app.cluster_state.session_objects.SessionObjects`, which also replays the session's
allocate and deallocate events on its copy) and asks the framework exactly as
:class:`~app.extender.Extender` does with the objects it decodes, so a plugin cannot tell the two
apart. What differs on the wire:

- ``GET /capabilities`` says which bodies Caldera reads (app/server/routes/capabilities.py);
- onSessionOpen carries the session's roster: the session opens on the derived state restricted
  to it (what Volcano's snapshot would have held); without onSessionOpenVerb the session opens at
  its first call, as cluster mode does today, on the whole derived state;
- the batched predicate (``extender.batchPredicateVerb``) is served at ``/batchPredicate`` by the
  predicate's endpoint (its body has ``nodes`` where the per-node one has ``node``) and answered
  ``{"failedNodes": {name: {code, reason}}}``;
- preemptable and reclaimable answer the victims as UIDs.

A call that names one object the session does not hold (a job, the task, the node of a
per-node predicate, the queue) is answered 409 ``unknown_object``; in a list (the nodes of a
batched predicate or of prioritize, the evictees) such an object is left out: a node Caldera
does not know fails the batched predicate with ``Error``, gets no score (0 for Volcano), and an
evictee is no victim. Both are counted (``caldera_identifiers_unknown_objects_total``), as is
every difference between Volcano's roster and the derived state
(``caldera_identifiers_roster_differences_total``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.session_objects import RosterDifference, SessionObjects, restrict
from app.errors import RequestError, StaleView
from app.framework import Framework
from app.managed import is_interested
from app.metrics import Metrics
from app.session import SessionManager
from app.session_events import SessionListeners
from app.wire import (
    OVERUSED_ANSWER,
    READY_ANSWER,
    VOTE_ANSWER,
    Body,
    body_decoder,
    encode_predicate,
    fit_failure,
)
from plugins.api.base import Vote
from plugins.api.extension_points import BY_VERB, ExtensionPoint, Rule, Verb
from plugins.api.release import Release
from schemas.api import NodeInfo, TaskInfo
from schemas.identifiers import (
    IDENTIFIERS,
    OBJECTS,
    BatchPredicateResponse,
    Capabilities,
    EventIds,
    EvictIds,
    JobIds,
    NodeFailure,
    NodesIds,
    PredicateIds,
    QueueIds,
    SessionIds,
    SessionOpenIds,
    VictimIds,
)
from schemas.requests import OnSessionOpenRequest
from schemas.responses import (
    EventHandlerResponse,
    PredicateResponse,
    PrioritizeResponse,
)

logger = logging.getLogger("caldera.identifiers")

BATCH_PREDICATE_PATH = "/batchPredicate"
"""Where the patched plugin posts the batched predicate when ``extender.batchPredicateVerb`` is
``batchPredicate`` (what ``caldera volcano-config --bodies identifiers`` writes)."""

CLUSTER_CAPABILITIES = Capabilities(bodies=[OBJECTS, IDENTIFIERS], batchPredicate=True)
OBJECTS_ONLY = Capabilities(bodies=[OBJECTS], batchPredicate=False)

_encode = msgspec.json.encode
_UNKNOWN_NODE_CODE = 1  # api.Error: the node is skipped this pass, not unresolvable
_WITHOUT_CLUSTER_STATE = (
    "an identifiers-mode body (its first key is `session`): Caldera reads those only in"
    " sessionState cluster, where it holds the objects they name; this one runs sessionState"
    " {mode} and answers GET /capabilities with objects only (set extender.bodies back to"
    " objects, or run Caldera with sessionState: cluster)"
)


_REQUESTS: dict[Rule, type[Any]] = {
    Rule.OPEN: SessionOpenIds,
    Rule.CLOSE: SessionIds,
    Rule.FIRST_FAILURE: PredicateIds,
    Rule.SCORE_SUM: NodesIds,
    Rule.VICTIMS: EvictIds,
    Rule.VOTE: JobIds,
    Rule.NOTIFY: JobIds,
    Rule.ANY_TRUE: QueueIds,
    Rule.ALL_TRUE: JobIds,
    Rule.EVENT: EventIds,
}
"""The identifiers-mode body of each combination rule's verbs."""
_DECODE = {rule: body_decoder(kind, "identifiers-mode body: ") for rule, kind in _REQUESTS.items()}


def refuse_without_cluster_state(mode: str) -> RequestError:
    return RequestError(_WITHOUT_CLUSTER_STATE.format(mode=mode))


class Host(Protocol):
    """What the calls need from :class:`~app.extender.Extender` (which satisfies this)."""

    sessions: SessionManager
    listeners: SessionListeners
    managed: frozenset[str]
    metrics: Metrics

    @property
    def release(self) -> Release: ...

    @property
    def between_sessions(self) -> bool: ...

    def open_from_cluster(
        self,
        source: ClusterSessionState,
        state: Callable[[], OnSessionOpenRequest | None] | None = None,
    ) -> None: ...

    def end_session(self) -> None: ...

    def held(self, verb: str) -> bytes | None: ...

    def neutral(self, verb: Verb) -> bytes: ...


class IdentifierCalls:
    """Answers identifiers-mode bodies in cluster mode, one method per combination rule."""

    def __init__(self, host: Host, source: ClusterSessionState) -> None:
        self.host = host
        self.source = source
        self.objects: SessionObjects | None = None
        """The open session's objects; None between sessions or when none could be derived."""
        self.calls = 0
        self._handlers: dict[Rule, Callable[[ExtensionPoint, Body], bytes]] = {
            rule: getattr(self, rule.value)
            for rule in _REQUESTS
            if rule not in (Rule.OPEN, Rule.CLOSE)
        }

    def describe(self) -> dict[str, Any]:
        """The /debug/session section: calls answered, and the open session's id and events."""
        objects = self.objects
        return {
            "calls": self.calls,
            "session": objects.session if objects is not None else None,
            "events": objects.events if objects is not None else 0,
        }

    def handle(self, verb: str, body: Body) -> bytes:
        point = BY_VERB[verb]
        request = _DECODE[point.rule](body)
        self.calls += 1
        host = self.host
        if point.rule is Rule.OPEN:
            self._open(request.session, request)
            return b"{}"
        if point.rule is Rule.CLOSE:
            host.end_session()
            self.objects = None
            return b"{}"
        if host.between_sessions or self.objects is None or self.objects.session != request.session:
            # No onSessionOpenVerb (or its call was lost): the session's first call opens it.
            if not host.between_sessions and self.objects is not None:
                logger.warning(
                    "session %s's call came while session %s was open, without onSessionClose:"
                    " the session opens anew",
                    request.session,
                    self.objects.session,
                )
            self._open(request.session, None)
        if (held := host.held(verb)) is not None:
            if point.rule is Rule.FIRST_FAILURE and request.nodes is not None:
                return self._held_batch(held, request.nodes)
            return held
        return self._handlers[point.rule](point, request)

    @staticmethod
    def _held_batch(held: bytes, names: list[str]) -> bytes:
        """A stale view's batched predicate: every node fails as the held per-node answer does
        (releases with allocate events, 1.13 and later, answer the predicate as status/code)."""
        answer = msgspec.json.decode(held, type=PredicateResponse)
        failure = NodeFailure(code=answer.code, reason=answer.status)
        return _encode(BatchPredicateResponse(failedNodes=dict.fromkeys(names, failure)))

    # --- the session --------------------------------------------------------------------------

    def _open(self, session: str, roster: SessionOpenIds | None) -> None:
        self.objects = None

        def state() -> OnSessionOpenRequest | None:
            derived = self.source.open_session()
            if derived is None:
                return None
            if roster is not None:
                derived, difference = restrict(derived, roster)
                if difference:
                    self._roster_differs(session, difference)
            self.objects = SessionObjects(derived, session)
            return derived

        self.host.open_from_cluster(self.source, state)

    def _roster_differs(self, session: str, difference: RosterDifference) -> None:
        counter = self.host.metrics.identifier_roster_differences
        for section, names in difference.missing.items():
            counter.labels(section, "volcano").inc(len(names))
        for section, count in difference.extra.items():
            counter.labels(section, "caldera").inc(count)
        logger.info(
            "session %s: Volcano's roster names %s that Caldera's view lacks, and Caldera's view"
            " has %s more (in flight, or a view gone wrong: the self-audit's and staleness"
            " checks say which)",
            session,
            {section: names[:5] for section, names in difference.missing.items()} or "nothing",
            difference.extra or "none",
        )

    def _session(self) -> SessionObjects:
        if self.objects is None:
            raise StaleView(
                "no session state: "
                + ("; ".join(self.source.not_current()) or "its derivation failed")
            )
        return self.objects

    def _framework(self, point: ExtensionPoint) -> Framework | None:
        framework, _ = self.host.sessions.framework()
        return framework if framework.answers(point) else None

    def _interested(self, task: TaskInfo) -> bool:
        return is_interested(task, self.host.managed)

    def _unknown(self, verb: str, count: int) -> None:
        if count:
            self.host.metrics.identifier_unknown_objects.labels(verb).inc(count)

    # --- one method per combination rule -------------------------------------------------------

    def first_failure(self, point: ExtensionPoint, request: PredicateIds) -> bytes:
        release = self.host.release
        if request.nodes is not None:
            return self._batch_predicate(point, request, request.nodes)
        if not request.node:
            raise RequestError(
                "identifiers-mode predicate: `node` (one node) or `nodes` (the batched"
                " predicate) is required"
            )
        framework = self._framework(point)
        if framework is None:
            return encode_predicate(release, None)
        objects = self._session()
        task = objects.task(request.job, request.task)
        node = objects.node(request.node)
        if not self._interested(task):
            return encode_predicate(release, None)
        return encode_predicate(release, framework.first_failure(point, task, node))

    def _batch_predicate(
        self, point: ExtensionPoint, request: PredicateIds, names: list[str]
    ) -> bytes:
        """The batched predicate: every node asked, the failures by name."""
        failed: dict[str, NodeFailure] = {}
        framework = self._framework(point)
        if framework is not None:
            objects = self._session()
            task = objects.task(request.job, request.task)
            if self._interested(task):
                unknown = 0
                nodes = objects.nodes
                for name in names:
                    node = nodes.get(name)
                    if node is None:
                        unknown += 1
                        failed[name] = NodeFailure(
                            _UNKNOWN_NODE_CODE,
                            f"node {name} is not in Caldera's view of the session",
                        )
                        continue
                    error = framework.first_failure(point, task, node)
                    if error is not None:
                        failed[name] = NodeFailure(*fit_failure(error))
                self._unknown(point.verb, unknown)
        return _encode(BatchPredicateResponse(failedNodes=failed))

    def score_sum(self, point: ExtensionPoint, request: NodesIds) -> bytes:
        framework = self._framework(point)
        if framework is None:
            return self.host.neutral(point.verb)
        objects = self._session()
        task = objects.task(request.job, request.task)
        if not self._interested(task):
            return self.host.neutral(point.verb)
        names = request.nodes or []
        nodes: list[NodeInfo] = [n for name in names if (n := objects.nodes.get(name)) is not None]
        self._unknown(point.verb, len(names) - len(nodes))
        scores = framework.score_sum(point, task, nodes)
        return (
            _encode(PrioritizeResponse(nodeScore=scores))
            if scores
            else self.host.neutral(point.verb)
        )

    def victims(self, point: ExtensionPoint, request: EvictIds) -> bytes:
        framework = self._framework(point)
        if framework is None:
            return self.host.neutral(point.verb)
        objects = self._session()
        evictor = objects.task(request.evictor.job, request.evictor.uid)
        if not self._interested(evictor):
            return self.host.neutral(point.verb)
        named = request.evictees or []
        evictees: list[TaskInfo] = []
        for ids in named:
            job = objects.jobs.get(ids.job)
            task = (job.Tasks or {}).get(ids.uid) if job is not None else None
            if task is not None:
                evictees.append(task)
        self._unknown(point.verb, len(named) - len(evictees))
        decision = framework.victims(point, evictor, evictees)
        if not decision.decided:
            return self.host.neutral(point.verb)
        return _encode(
            VictimIds(status=int(Vote.PERMIT), victims=[task.UID for task in decision.victims])
        )

    def vote(self, point: ExtensionPoint, request: JobIds) -> bytes:
        framework = self._framework(point)
        if framework is None:
            return self.host.neutral(point.verb)
        job = self._session().job(request.job)
        return VOTE_ANSWER[framework.vote(point, job)]

    def notify(self, point: ExtensionPoint, request: JobIds) -> bytes:
        framework = self._framework(point)
        if framework is not None:
            framework.notify(point, self._session().job(request.job))
        return self.host.neutral(point.verb)

    def any_true(self, point: ExtensionPoint, request: QueueIds) -> bytes:
        framework = self._framework(point)
        if framework is None:
            return self.host.neutral(point.verb)
        queue = self._session().queue(request.queue)
        return OVERUSED_ANSWER[framework.any_true(point, queue)]

    def all_true(self, point: ExtensionPoint, request: JobIds) -> bytes:
        framework = self._framework(point)
        if framework is None:
            return self.host.neutral(point.verb)
        job = self._session().job(request.job)
        return READY_ANSWER[framework.all_true(point, job)]

    def event(self, point: ExtensionPoint, request: EventIds) -> bytes:
        """allocate / deallocate: the event replayed on the session's objects (and told to the
        placements' overlay and the self-audit, as a body's task is), then the plugins."""
        if self.objects is None:
            # No state to replay it on (the watches have not listed once: answered as a stale
            # session is); Volcano's statement must not fail for it, as it does not in object mode.
            return self.host.neutral(point.verb)
        task = self.objects.apply(request.job, request.task, request.node, request.status)
        listeners = self.host.listeners
        if point.verb == Verb.ALLOCATE:
            listeners.allocated(task)
        else:
            listeners.deallocated(task)
        framework = self._framework(point)
        if framework is None or not self._interested(task):
            return self.host.neutral(point.verb)
        message = framework.event(point, task)
        return (
            _encode(EventHandlerResponse(errorMessage=message))
            if message
            else self.host.neutral(point.verb)
        )
