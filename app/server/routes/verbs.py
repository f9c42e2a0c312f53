"""POST /<verb>: the extender protocol.

Each verb is a plain ASGI endpoint mounted as a Starlette route: no per-request dependency
solving or Request object, because these calls sit inside Volcano's scheduling cycle and the
framework's share of a small call is larger than the work. The endpoint reads the body under the
limit, times it, hands it to :class:`~app.extender.Extender` and sends the bytes back. Their
OpenAPI description is attached separately (``app/server/openapi.py``).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Protocol

import msgspec
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.errors import (
    AnswerError,
    CalderaError,
    Disconnected,
    PluginFailure,
    RequestError,
    StaleView,
)
from app.extender import ANSWERED_FIRST, EMPTY
from app.metrics import Metrics
from app.server.body import DEFAULT_TIMEOUT, read_body
from app.server.logs import Throttle
from app.server.snapshot_health import SnapshotHealth
from app.wire import Body
from plugins.api.extension_points import BY_VERB, Rule

logger = logging.getLogger("caldera.verbs")
JSON_HEADER = (b"content-type", b"application/json")
REFUSAL_LOG_SECONDS = 60.0
"""A refused request of one verb and kind is logged at most once per this many seconds."""
CLOSE_HEADER = (b"connection", b"close")


class Answers(Protocol):
    """What the endpoints call: the Extender, or the recorder wrapped around it
    (``serve --record``)."""

    def handle(self, verb: str, body: Body) -> bytes: ...

    def answers_first(self, verb: str, body: Body) -> bool: ...

    def routes(self) -> dict[str, str]: ...


class AfterAnswer:
    """The work of a call answered before it was done, when it waits for the next call
    (onSessionOpen's build after a session that asked nothing, :meth:`VerbEndpoint._answer_first`):
    one slot shared by every verb's endpoint, run before the next call is answered."""

    def __init__(self) -> None:
        self.work: Callable[[], None] | None = None
        self.asked = True
        """A call other than onSessionOpen and onSessionClose came since the last
        onSessionOpen (True until a session is seen to ask nothing)."""
        self.last_session_asked = True
        """What :attr:`asked` was when the last session closed."""

    def run(self) -> None:
        work, self.work = self.work, None
        if work is not None:
            work()


class VerbEndpoint:
    """The ASGI endpoint of one verb. The snapshot verb (onSessionOpen) also reports each
    outcome to ``snapshot``: a snapshot not taken switches every plugin off for the cycle."""

    def __init__(
        self,
        verb: str,
        extender: Answers,
        metrics: Metrics,
        limit: int,
        body_timeout: float | None,
        snapshot: SnapshotHealth | None,
        after: AfterAnswer,
    ) -> None:
        self.verb = verb
        self.after = after
        self.rule = BY_VERB[verb].rule
        self.extender = extender
        self.metrics = metrics
        self.limit = limit
        self.setting = BY_VERB[verb].body_limit
        self.body_timeout = body_timeout
        self.snapshot = snapshot
        self.duration = metrics.request_duration.labels(verb)
        self.after_answer = metrics.after_answer_duration.labels(verb)
        self.may_answer_first = self.rule in ANSWERED_FIRST
        self.size = metrics.request_bytes.labels(verb)
        self.ok = metrics.responses.labels(verb, "200")
        self.refusals = Throttle(REFUSAL_LOG_SECONDS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        verb = self.verb
        after = self.after
        if self.rule is not Rule.CLOSE:  # onSessionClose answers before it (_answer_first)
            if after.work is not None:
                after.run()
            after.asked = self.rule is not Rule.OPEN  # a new session has asked nothing yet
        try:
            body = await read_body(scope, receive, self.limit, self.body_timeout, self.setting)
            self.size.observe(len(body))
            read = time.perf_counter()
            if (
                self.may_answer_first
                and (self.snapshot is None or self.snapshot.last_taken)
                and self.extender.answers_first(verb, body)
            ):
                await self._answer_first(send, started, body)
                return
            answer = self.extender.handle(verb, body)
        except Disconnected:
            if self.snapshot is not None:
                self.snapshot.abandoned()
            return
        except CalderaError as exc:
            await self._refuse(send, exc)
            return
        except Exception as exc:  # a Caldera bug: still a JSON answer, and the trace in the log
            logger.exception("%s failed unexpectedly", verb)
            await self._refuse(send, AnswerError(f"internal error: {type(exc).__name__}"))
            return
        done = time.perf_counter()
        self.duration.observe(done - started)
        self.ok.inc()
        if self.snapshot is not None:
            self.snapshot.taken(len(body))
        await send_json(send, 200, answer)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: read %d bytes in %.2f ms, answered in %.2f ms",
                verb,
                len(body),
                (read - started) * 1e3,
                (done - read) * 1e3,
            )

    async def _answer_first(self, send: Send, started: float, body: Body) -> None:
        """onSessionOpen and onSessionClose: ``{}`` is sent before the work (the snapshot's
        decode and the session's build; the snapshot's release), so Volcano's cycle goes on
        while it is done instead of waiting for it (bench/README.md, "The snapshot path at
        the floor"). Nothing can come between: the work runs on this thread right after the
        answer, and Volcano's next call is read when it is done.

        A snapshot is answered first only when the last one was taken: one that then fails to
        build leaves no session, as a refused one does (the cycle's calls are answered
        without one), and with its answer sent the failure is reported here, in the log and
        by ``/readyz``. The next snapshot is answered after its build, so a failure that
        repeats reaches Volcano as the JSON error it is, and ``curl`` on a server that has
        taken none yet sees every refusal.

        After a session that asked nothing (an idle cycle), the next snapshot's build waits
        for that session's first call, or for onSessionClose's answer: an idle cycle then
        waits for none of it (:class:`AfterAnswer`)."""
        await send_json(send, 200, EMPTY)
        self.duration.observe(time.perf_counter() - started)
        self.ok.inc()
        after = self.after
        if self.rule is Rule.OPEN:
            if not after.last_session_asked:
                # The last session asked nothing between its open and close (an idle cycle:
                # everything placed, nothing to admit): this one is built when its first call
                # comes, or after onSessionClose's answer, and the idle cycle waits for none
                # of it. A session that asks is built at once, alongside Volcano's own work.
                after.work = functools.partial(self._work, body)
                return
        else:
            after.last_session_asked = after.asked
            after.run()  # the session's build, if nothing asked for it before its close
        self._work(body)

    def _work(self, body: Body) -> None:
        """The call's work after its answer: timed, and its failure reported."""
        began = time.perf_counter()
        try:
            self.extender.handle(self.verb, body)
        except CalderaError as exc:
            self._report(exc, answered=True)
        except Exception as exc:  # a Caldera bug: the trace in the log, the failure counted
            logger.exception("%s failed unexpectedly after its answer", self.verb)
            self._report(AnswerError(f"internal error: {type(exc).__name__}"), answered=True)
        else:
            if self.snapshot is not None:
                self.snapshot.taken(len(body))
        self.after_answer.observe(time.perf_counter() - began)

    async def _refuse(self, send: Send, exc: CalderaError) -> None:
        """Every error is answered here: counted, logged at its level, sent as JSON."""
        self.metrics.responses.labels(self.verb, str(exc.status)).inc()
        self._report(exc)
        await send_json(
            send, exc.status, msgspec.json.encode(exc.answer(self.verb)), exc.closes_connection
        )

    def _report(self, exc: CalderaError, answered: bool = False) -> None:
        """A call's failure counted and logged at its level: refused (:meth:`_refuse`) or, with
        ``answered``, found in the work after a ``{}`` answer (:meth:`_work`)."""
        if isinstance(exc, RequestError):
            self.metrics.bodies_refused.labels(self.verb, exc.outcome).inc()
        if self.snapshot is not None:
            self.snapshot.refused(exc, answered)  # the error it is for Volcano's cycle
        elif isinstance(exc, RequestError | StaleView):
            # WARNING: a body Caldera refuses is a call Volcano made in vain (its cycle goes on
            # without that answer), which an operator wants to see; once a minute per verb and
            # kind, since a client repeating it would repeat it on every call.
            held = self.refusals.allow(exc.outcome)
            if held is not None:
                logger.warning(
                    "refused %s request (%d %s): %s%s",
                    self.verb,
                    exc.status,
                    exc.outcome,
                    exc,
                    f" ({held} more like it in the last minute)" if held else "",
                )
        elif isinstance(exc, PluginFailure):
            if not exc.logged:  # a hook's fault is logged, rate-limited, where it happened
                logger.error("%s", exc, exc_info=exc.cause)
        else:
            logger.error("%s failed: %s", self.verb, exc)


async def send_json(send: Send, status: int, payload: bytes, close: bool = False) -> None:
    headers = [JSON_HEADER, (b"content-length", str(len(payload)).encode())]
    if close:
        headers.append(CLOSE_HEADER)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def verb_routes(
    extender: Answers,
    metrics: Metrics,
    body_limit: Callable[[str], int],
    body_timeout: float | None = DEFAULT_TIMEOUT,
    snapshot: SnapshotHealth | None = None,
) -> list[Route]:
    """One route per path; ``body_limit(verb)`` bounds each verb's body (``maxSnapshotBytes``
    for onSessionOpen, ``maxRequestBytes`` for the rest)."""
    after = AfterAnswer()
    return [
        Route(
            path,
            VerbEndpoint(
                verb,
                extender,
                metrics,
                body_limit(verb),
                body_timeout,
                snapshot if BY_VERB[verb].rule is Rule.OPEN else None,
                after,
            ),
            methods=["POST"],
        )
        for path, verb in extender.routes().items()
    ]
