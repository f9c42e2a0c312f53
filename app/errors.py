"""What can go wrong answering a verb, as one small hierarchy handled in one place (the route).

Each error knows its HTTP status, its metric outcome and the JSON body it is answered with:
every error Caldera returns is JSON, never a plain-text page.

- :class:`RequestError` (4xx): the caller's body cannot be served — too large, too slow, a
  lying Content-Length, malformed JSON, a wrong type in a field a configured plugin reads.
- :class:`PluginFailure` (500): a hosted plugin raised or broke the plugin contract; names the
  plugin and the verb. Volcano then applies ``extender.ignorable``.
- :class:`AnswerError` (500): an answer Volcano could not accept (over its 10 MiB read limit).
"""

from __future__ import annotations

from schemas.responses import ErrorResponse


class CalderaError(Exception):
    status: int = 500
    outcome: str = "error"
    """The ``reason`` label of ``caldera_request_bodies_refused_total`` for 4xx answers."""
    closes_connection: bool = False
    """Answer with ``Connection: close``."""

    def answer(self, verb: str) -> ErrorResponse:
        return ErrorResponse(error=str(self), verb=verb)


class RequestError(CalderaError):
    """A body Caldera cannot read: answered 400 naming the field."""

    status = 400
    outcome = "bad_request"


class BodyTooLarge(RequestError):
    status = 413
    outcome = "too_large"

    def __init__(self, limit: int, seen: int | None, setting: str = "maxRequestBytes") -> None:
        self.limit = limit
        self.seen = seen
        self.setting = setting
        size = f"{seen} bytes" if seen is not None else "more than the limit"
        super().__init__(
            f"request body of {size} exceeds {setting} = {limit} bytes; raise"
            f" {setting} in the Caldera configuration for clusters this large"
        )

    def answer(self, verb: str) -> ErrorResponse:
        return ErrorResponse(error=str(self), verb=verb, limit=self.limit)


class BadLength(RequestError):
    """A Content-Length that is not a number or does not match the body."""


class BodyTimeout(RequestError):
    """The body did not arrive in time: a stalled or trickling client. The connection is closed
    with the answer, since the rest of that body may still be on its way."""

    status = 408
    outcome = "timeout"
    closes_connection = True

    def __init__(self, seconds: float, received: int) -> None:
        super().__init__(
            f"request body not complete within {seconds:g} s ({received} bytes received;"
            " CALDERA_BODY_TIMEOUT_SECONDS)"
        )


class PluginFailure(CalderaError):
    """A hosted plugin raised, or answered outside the plugin contract (``kind``: ``raised``,
    ``wrong_type``, ``over_budget``)."""

    logged = False
    """Already logged where it happened (app/plugin_faults.py, rate-limited)."""

    def __init__(self, plugin: str, verb: str, cause: BaseException, kind: str = "raised") -> None:
        self.plugin = plugin
        self.verb = verb
        self.cause = cause
        self.kind = kind
        what = f"{type(cause).__name__}: {cause}" if kind == "raised" else f"({kind}) {cause}"
        super().__init__(f"plugin {plugin} failed in {verb}: {what}")

    def answer(self, verb: str) -> ErrorResponse:
        return ErrorResponse(error=str(self), verb=self.verb, plugin=self.plugin)


class AnswerError(CalderaError):
    """An answer Volcano would refuse to read."""


class StaleView(CalderaError):
    """``sessionState: cluster`` with ``onStaleState: fail``: the session opened on a view of the
    cluster that is stale (app/cluster_state/staleness.py); answered 503, and Volcano applies
    ``extender.ignorable``."""

    status = 503
    outcome = "stale"


class Disconnected(Exception):
    """The client went away before the body was complete: nobody to answer."""
