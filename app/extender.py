"""The extender verbs, from request bytes to response bytes, independent of HTTP.

Kept apart from the routes so the same code path is what the service tests, the in-process
benchmarks and the HTTP layer run. Every verb is a row of the extension-point table
(``plugins/api/extension_points.py``); its handler is the method named after the row's
combination rule. Each decodes only into the typed views of ``schemas/`` (msgspec skips every key
no plugin reads), asks the session's framework, and encodes the answer for the calling release.
When no configured plugin answers a verb, only the body's envelope is validated and the row's
neutral answer is sent: parts of a body that no configured plugin reads are never validated.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from app import shared_path
from app.cluster_state.audit import SelfAudit
from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.compare_mode import SessionStateComparison
from app.cluster_state.staleness import OnStaleState, held_answer
from app.config import CalderaConfig
from app.errors import AnswerError, PluginFailure, RequestError, StaleView
from app.framework import Framework
from app.gcpolicy import SnapshotGC
from app.identifiers import BATCH_PREDICATE_PATH, IdentifierCalls, refuse_without_cluster_state
from app.managed import is_interested
from app.metrics import Metrics
from app.release_watch import ReleaseWatch
from app.session import SessionManager
from app.session_events import Opened, SessionListeners
from app.wire import (
    NESTED_TOO_DEEPLY,
    OVERUSED_ANSWER,
    READY_ANSWER,
    VOTE_ANSWER,
    Body,
    body_decoder,
    describe_at,
    encode_predicate,
)
from plugins.api.base import Vote
from plugins.api.extension_points import BY_VERB, EXTENSION_POINTS, ExtensionPoint, Rule, Verb
from plugins.api.release import Release
from schemas.api import TaskInfo
from schemas.identifiers import is_identifiers
from schemas.requests import (
    EventHandlerRequest,
    EvictRequest,
    JobRequest,
    LegacyReclaimablePathRequest,
    OnSessionOpenRequest,
    PredicateRequest,
    PrioritizeRequest,
    QueueOverusedRequest,
)
from schemas.responses import (
    EventHandlerResponse,
    EvictResponse,
    PrioritizeResponse,
)

logger = logging.getLogger("caldera.extender")

MAX_RESPONSE_BYTES = 10 << 20
"""Volcano wraps every response in ``http.MaxBytesReader(10 << 20)``."""

Handler = Callable[[Body], bytes]
_encode = msgspec.json.encode
EMPTY = b"{}"

_DECODERS: dict[type[Any], Callable[[Body], Any]] = {}
for _point in EXTENSION_POINTS:
    for _kind in (_point.request, _point.envelope):
        _DECODERS.setdefault(_kind, body_decoder(_kind))
_shared_path_shape = body_decoder(LegacyReclaimablePathRequest)
_task = msgspec.json.Decoder(TaskInfo)

ANSWERED_FIRST = frozenset({Rule.OPEN, Rule.CLOSE})
"""The rules whose verbs may be answered before their work (:meth:`Extender.answers_first`):
their answer is ``{}`` whatever the work finds, and Volcano never reads it."""
_JSON_SPACE = b" \t\r\n"


def _one_object(body: Body) -> bool:
    """The body's first and last non-space bytes are ``{`` and ``}``: what a JSON object
    looks like from its ends, checked without reading the middle."""
    view = memoryview(body)
    start, end = 0, len(view)
    while start < end and view[start] in _JSON_SPACE:
        start += 1
    while end > start and view[end - 1] in _JSON_SPACE:
        end -= 1
    return end - start >= 2 and view[start] == 0x7B and view[end - 1] == 0x7D


_EVICT_HEAD = b'{"evictor":'
_EVICTEES = b',"evictees":['
_NEXT_TASK = b'},{"UID":'
_EVICTEES_END = b"]}"
_NO_EVICTEES = (b',"evictees":null}', b',"evictees":[]}')


def evict_spans(body: Body) -> tuple[memoryview, list[memoryview]] | None:
    """The byte spans of the evictor and of each evictee in a preemptable/reclaimable body as
    Go's ``json.Marshal`` writes it (``{"evictor":{…},"evictees":[{"UID":…},…]}``, compact,
    every TaskInfo starting with its first field, UID), or None for any other layout.

    Only ``bytes.find`` runs over the body; nothing here proves the spans are JSON values. The
    caller decodes every span, and when each is one complete value the body is exactly
    ``{"evictor":V0,"evictees":[V1,…,Vn]}`` (the spans and the separators between them are
    the whole body), so a wrong split (the marker inside a string or a nested object) cannot
    decode and the caller falls back to the general decode."""
    if not body.startswith(_EVICT_HEAD):
        return None
    view = memoryview(body)
    split = body.find(_EVICTEES, len(_EVICT_HEAD))
    if split < 0:
        for tail in _NO_EVICTEES:
            if body.endswith(tail):
                return view[len(_EVICT_HEAD) : len(body) - len(tail)], []
        return None
    if not body.endswith(_EVICTEES_END):
        return None
    evictor = view[len(_EVICT_HEAD) : split]
    start = split + len(_EVICTEES)
    end = len(body) - len(_EVICTEES_END)
    if start == end:
        return evictor, []
    evictees = []
    while (boundary := body.find(_NEXT_TASK, start, end)) >= 0:
        evictees.append(view[start : boundary + 1])
        start = boundary + 2
    evictees.append(view[start:end])
    return evictor, evictees


class Extender:
    """Answers every verb for one configuration."""

    def __init__(self, config: CalderaConfig, sessions: SessionManager, metrics: Metrics) -> None:
        self.metrics = metrics
        self.reconfigure(config, sessions)
        self.listeners = SessionListeners()
        """What follows sessions (app/session.py): the one way anything hears a session open,
        fail to open, place, evict or close."""
        self._session_state: SessionStateComparison | ClusterSessionState | None = None
        self._audit: SelfAudit | None = None
        self.identifiers: IdentifierCalls | None = None
        """Cluster mode: the calls of the identifiers protocol (app/identifiers.py)."""
        """Cluster mode: where each call's objects are offered to the self-audit."""
        self._between_sessions = True
        """Cluster mode: onSessionClose ended the last session (or none opened yet), so the
        next call opens one."""
        self._stale: str | None = None
        """Cluster mode: why the open session's view is stale, when ``onStaleState`` holds or
        fails its answers (app/cluster_state/staleness.py); None: answered as usual."""
        self._snapshot_unread_warned = False
        self._sessionless: str | None = None
        """The verb of the call being answered when no session was open for it."""
        self.snapshot_gc = SnapshotGC()
        self.release_watch = ReleaseWatch(config.release, metrics, infer=config.infers_release)
        # The predicate's neutral answer depends on the release: encode_predicate gives it.
        self._neutral = {
            point.verb: point.neutral for point in EXTENSION_POINTS if point.neutral is not None
        }
        self._handlers: dict[str, Handler] = {
            point.verb: functools.partial(getattr(self, point.rule.value), point)
            for point in EXTENSION_POINTS
        }

    @property
    def session_state(self) -> SessionStateComparison | ClusterSessionState | None:
        """``sessionState: compare``: told of each session's snapshot, allocations and close;
        ``cluster``: also the source of each session's state (:meth:`open_from_cluster`),
        whose self-audit is offered what each call carries."""
        return self._session_state

    @session_state.setter
    def session_state(self, state: SessionStateComparison | ClusterSessionState | None) -> None:
        """Chosen once, at the start: the state's source (cluster mode opens each session from
        it), and a listener to the sessions (compare mode compares each snapshot)."""
        assert self._session_state is None, "the session state's source is chosen once"
        self._session_state = state
        if isinstance(state, ClusterSessionState):
            self._audit = state.audit
            self.identifiers = IdentifierCalls(self, state)
        if state is not None:
            self.listeners.add(state)

    def reconfigure(self, config: CalderaConfig, sessions: SessionManager) -> None:
        """Answer from ``config`` and its ``sessions`` from now on. Called between sessions
        only: a session keeps the framework it opened with."""
        self.config = config
        self.sessions = sessions
        self.managed = frozenset(config.managedResources)
        self.snapshot_bound = any(entry.cls.needs_snapshot for entry in config.entries)

    @property
    def release(self) -> Release:
        """The release answered as: configured, or inferred with ``volcanoVersion: auto``."""
        return self.sessions.release

    def routes(self) -> dict[str, str]:
        """URL path to verb: one per verb, plus the bare prefix for 1.6–1.7 (and ``auto``)."""
        paths: dict[str, str] = {f"/{point.verb}": point.verb for point in EXTENSION_POINTS}
        if self.release.shares_reclaimable_path or self.config.infers_release:
            paths[shared_path.BARE_PREFIX] = Verb.RECLAIMABLE
        if self.identifiers is not None:
            paths[BATCH_PREDICATE_PATH] = Verb.PREDICATE  # its body says which (identifiers.py)
        return paths

    def handle(self, verb: str, body: Body) -> bytes:
        """Answer ``verb``; raises a :class:`~app.errors.CalderaError` when it cannot."""
        self._sessionless = None
        release = self.release
        if not release.has_verb(verb):
            self.sessions.set_release(self.release_watch.check_verb(verb))
        if self.identifiers is not None and is_identifiers(body):
            return self.identifiers.handle(verb, body)
        if isinstance(self._session_state, ClusterSessionState):
            if verb == Verb.ON_SESSION_OPEN:
                return self._snapshot_unread()
            if verb != Verb.ON_SESSION_CLOSE and self._between_sessions:
                self.open_from_cluster(self._session_state)
            if (held := self.held(verb)) is not None:
                return held
        try:
            if verb == Verb.RECLAIMABLE and release.shares_reclaimable_path:
                answer = self.shared_reclaimable_path(body)
            else:
                answer = self._handlers[verb](body)
        except RequestError:
            # Looked for only once a body is refused: the common path pays nothing for it.
            if self.identifiers is None and is_identifiers(body):
                raise self._identifiers_refused() from None
            raise
        if self._sessionless is not None:
            # Only a call that was answered: a body refused with 400 is no sessionless answer.
            self.metrics.sessionless.labels(self._sessionless).inc()
        if len(answer) > MAX_RESPONSE_BYTES:
            raise AnswerError(
                f"the {verb} answer is {len(answer)} bytes; Volcano reads at most"
                f" {MAX_RESPONSE_BYTES} (10 MiB) and would fail the call"
            )
        return answer

    def answers_first(self, verb: str, body: Body) -> bool:
        """Whether the call may be answered before its work is done
        (``app/server/routes/verbs.py``): onSessionOpen and onSessionClose, whose answer is always
        ``{}`` and never read by Volcano, once what can be checked without the work has been
        checked. onSessionClose's body (``{}``) is decoded here, so a bad one is still refused;
        onSessionOpen's only has its envelope checked (non-empty, one JSON object from its first
        byte to its last): the snapshot's decode is the work, and a body that fails it leaves the
        cycle without a session, reported where it is found (``app/server/snapshot_health.py``)."""
        point = BY_VERB[verb]
        if point.rule not in ANSWERED_FIRST:
            return False
        if point.rule is Rule.CLOSE:
            _DECODERS[point.request](body)
            return True
        return _one_object(body)

    def _answering(self, point: ExtensionPoint, body: Body) -> Framework | None:
        """The framework when a configured plugin answers ``point``; otherwise None, after
        checking only the body's envelope (the answer is then neutral whatever the contents,
        so the body is not built: a 30-pod predicate body costs half as much)."""
        framework, has_session = self.sessions.framework()
        if not has_session and self.snapshot_bound:
            self._sessionless = point.verb  # counted by handle once the body has decoded
        if framework.answers(point):
            return framework
        _DECODERS[point.envelope](body)
        return None

    def _interested(self, task: TaskInfo) -> bool:
        return is_interested(task, self.managed)

    # --- one method per combination rule ------------------------------------------------------

    def _identifiers_refused(self) -> RequestError:
        """An identifiers-mode body outside cluster mode (app/identifiers.py)."""
        state = self._session_state
        return refuse_without_cluster_state(state.mode.value if state else "snapshot")

    def open(self, point: ExtensionPoint, body: Body) -> bytes:
        if is_identifiers(body):  # its roster would decode as an empty snapshot
            raise self._identifiers_refused()

        def snapshot() -> OnSessionOpenRequest:
            request: OnSessionOpenRequest = _DECODERS[point.request](body)
            self.sessions.set_release(self.release_watch.check_session(body, request))
            return request

        self.open_session(snapshot, derived=False)
        return EMPTY

    def open_session(
        self, state: Callable[[], OnSessionOpenRequest | None], derived: bool = True
    ) -> None:
        """The one path a session opens by: Volcano's snapshot (onSessionOpen), the cluster
        mode's derived state, or the state a shadow configuration is handed
        (``app/shadow/state.py``). ``state`` returning None (nothing derived yet) leaves no
        session open.

        The previous session is dropped before the next state is built, so memory holds one at
        a time; a body that cannot be read then leaves no session open rather than last
        cycle's, which is also right for Volcano: the verbs of a cycle whose snapshot failed
        must not be answered from the previous cycle's (tests/service/test_session_faults.py)."""
        listeners = self.listeners
        listeners.boundary()
        self.sessions.close()
        with self.snapshot_gc.building():
            request = state()
            if request is None:
                return
            release = self.sessions.release
            try:
                opened = self.sessions.open(request)
            except PluginFailure as exc:
                if not listeners.open_failed(exc):
                    raise
                self.sessions.set_release(release)  # the configuration given way to
                opened = self.sessions.open(request)
        listeners.opened(Opened(opened.number, request, derived))

    def close(self, point: ExtensionPoint, body: Body) -> bytes:
        _DECODERS[point.request](body)
        self.end_session()
        return EMPTY

    def end_session(self) -> None:
        """onSessionClose: the session closed, and the listeners told."""
        self.sessions.close()
        self._between_sessions = True
        self.listeners.closed()

    def neutral(self, verb: Verb) -> bytes:
        """The verb's answer when no configured plugin answers it."""
        return self._neutral[verb]

    # --- sessionState: cluster ----------------------------------------------------------------

    @property
    def between_sessions(self) -> bool:
        """Cluster mode: no session is open, so the next call opens one."""
        return self._between_sessions

    def open_from_cluster(
        self,
        source: ClusterSessionState,
        state: Callable[[], OnSessionOpenRequest | None] | None = None,
    ) -> None:
        """The session's first call: freeze the watched state and open the session on it, as
        :meth:`open` does on Volcano's snapshot (``state``: that state, as an identifiers-mode
        session restricts it to Volcano's roster). Before the watch has listed once the session
        stays without state until onSessionClose, and is answered as a stale one (a sidecar
        restarted while vc-scheduler runs is called before its lists: cluster_mode.py)."""
        self._between_sessions = False
        reasons = source.not_current()
        answering = self.config.onStaleState is OnStaleState.ANSWER
        self._stale = "; ".join(reasons) if reasons and not answering else None
        self.open_session(state or source.open_session)

    def held(self, verb: str) -> bytes | None:
        """A stale session's answer to ``verb`` under ``onStaleState`` (hold: the fail-safe
        one; fail: a 503), or None where the verb is answered as usual (the view is current)."""
        why = self._stale
        if why is None:
            return None
        point = BY_VERB[verb]
        policy = self.config.onStaleState
        reason = f"Caldera's view of the cluster is stale (onStaleState {policy.value})"
        held = held_answer(point, self.release, reason)
        if held is None:
            return None
        if policy is OnStaleState.FAIL:
            raise StaleView(why)
        return held

    def _snapshot_unread(self) -> bytes:
        """An onSessionOpen in cluster mode: Volcano is still configured with the verb. The
        call is a session boundary (the session opens now, from the cluster); its body is not
        read, and Volcano marshalled it for nothing: said once."""
        if not self._snapshot_unread_warned:
            self._snapshot_unread_warned = True
            logger.warning(
                "Volcano posts onSessionOpen's snapshot, which sessionState cluster does not"
                " read: regenerate its extender entry with `caldera volcano-config` (no"
                " onSessionOpenVerb) to spare the scheduler marshalling it every cycle"
            )
        assert isinstance(self.session_state, ClusterSessionState)
        self.open_from_cluster(self.session_state)
        return EMPTY

    def first_failure(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return encode_predicate(self.release, None)
        request: PredicateRequest = _DECODERS[point.request](body)
        if (audit := self._audit) is not None:
            audit.task(request.task)
            audit.nodes((request.node,))
        if not self._interested(request.task):
            return encode_predicate(self.release, None)
        error = framework.first_failure(point, request.task, request.node)
        return encode_predicate(self.release, error)

    def score_sum(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return self._neutral[point.verb]
        request: PrioritizeRequest = _DECODERS[point.request](body)
        if (audit := self._audit) is not None:
            audit.task(request.task)
            audit.nodes(request.nodes or ())
        if not self._interested(request.task):
            return self._neutral[point.verb]
        scores = framework.score_sum(point, request.task, request.nodes or [])
        return (
            _encode(PrioritizeResponse(nodeScore=scores)) if scores else self._neutral[point.verb]
        )

    def victims(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return self._neutral[point.verb]
        evictor, evictees, raws = self._evict_request(point, body)
        if (audit := self._audit) is not None:
            audit.task(evictor)
        if not self._interested(evictor):
            return self._neutral[point.verb]
        decision = framework.victims(point, evictor, evictees)
        if not decision.decided:
            return self._neutral[point.verb]
        # Echo the evictees as received: Volcano evicts the objects it decodes from our answer.
        raw_of = {id(task): raw for task, raw in zip(evictees, raws, strict=True)}
        try:
            victims = [msgspec.Raw(raw_of[id(task)]) for task in decision.victims]
        except KeyError:  # never: the framework makes a foreign victim its plugin's fault
            raise AnswerError(f"the {point.verb} answer has a task Caldera was not given") from None
        return _encode(EvictResponse(status=int(Vote.PERMIT), victims=victims))

    @staticmethod
    def _evict_request(
        point: ExtensionPoint, body: Body
    ) -> tuple[TaskInfo, list[TaskInfo], Sequence[msgspec.Raw | memoryview]]:
        """The evictor, the evictees and each evictee's bytes (for the verbatim echo).

        Volcano's own bodies take one pass: each TaskInfo is decoded once from its span
        (:func:`evict_spans`). Any other layout, and every body that does not decode that way,
        takes the general route, which also words the errors: the body with the evictees kept
        raw, then each evictee."""
        spans = evict_spans(body)
        if spans is not None:
            try:
                return _task.decode(spans[0]), [_task.decode(span) for span in spans[1]], spans[1]
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                pass  # ValidationError is a DecodeError
        request: EvictRequest = _DECODERS[point.request](body)
        raws = request.evictees or []
        evictees: list[TaskInfo] = []
        for index, raw in enumerate(raws):
            try:
                evictees.append(_task.decode(raw))
            except msgspec.ValidationError as exc:
                raise RequestError(describe_at(f"evictees[{index}]", str(exc))) from None
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # invalid UTF-8, say
                raise RequestError(f"malformed JSON: {exc} - at `evictees[{index}]`") from None
            except RecursionError:
                raise RequestError(f"{NESTED_TOO_DEEPLY} - at `evictees[{index}]`") from None
        return request.evictor, evictees, raws

    def vote(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return self._neutral[point.verb]
        request: JobRequest = _DECODERS[point.request](body)
        if (audit := self._audit) is not None:
            audit.job(request.job)
        return VOTE_ANSWER[framework.vote(point, request.job)]

    def notify(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is not None:
            request: JobRequest = _DECODERS[point.request](body)
            framework.notify(point, request.job)
        return self._neutral[point.verb]

    def any_true(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return self._neutral[point.verb]
        request: QueueOverusedRequest = _DECODERS[point.request](body)
        return OVERUSED_ANSWER[framework.any_true(point, request.queue)]

    def all_true(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        if framework is None:
            return self._neutral[point.verb]
        request: JobRequest = _DECODERS[point.request](body)
        if (audit := self._audit) is not None:
            audit.job(request.job)
        return READY_ANSWER[framework.all_true(point, request.job)]

    def event(self, point: ExtensionPoint, body: Body) -> bytes:
        framework = self._answering(point, body)
        request: EventHandlerRequest | None = None
        listeners = self.listeners
        if listeners.follow_placements:  # a derived state follows Volcano's placements
            request = _DECODERS[point.request](body)
            assert request is not None
            if point.verb == Verb.ALLOCATE:
                listeners.allocated(request.task)
            else:
                listeners.deallocated(request.task)
        if framework is None:
            return self._neutral[point.verb]
        if request is None:
            request = _DECODERS[point.request](body)
            assert request is not None
        if not self._interested(request.task):
            return self._neutral[point.verb]
        message = framework.event(point, request.task)
        return (
            _encode(EventHandlerResponse(errorMessage=message))
            if message
            else self._neutral[point.verb]
        )

    def shared_reclaimable_path(self, body: Body) -> bytes:
        """v1.6–v1.7: reclaimable, jobEnqueueable and queueOverused share this path."""
        verb = shared_path.verb_of(_shared_path_shape(body))
        if verb is None:
            raise RequestError(shared_path.UNKNOWN_SHAPE)
        point = BY_VERB[verb]
        handler: Callable[[ExtensionPoint, Body], bytes] = getattr(self, point.rule.value)
        return handler(point, body)
