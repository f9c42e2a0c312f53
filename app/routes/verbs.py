"""POST /<verb>: the extender protocol.

Each verb is a plain ASGI endpoint mounted as a Starlette route: no per-request dependency
solving or Request object, because these calls sit inside Volcano's scheduling cycle and the
framework's share of a small call is larger than the work. The endpoint reads the body under the
limit, times it, hands it to :class:`~app.extender.Extender` and sends the bytes back. Their
OpenAPI description is attached separately (``app/openapi.py``).
"""

from __future__ import annotations

import logging
import time

import msgspec
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.body import BadLength, BodyTooLarge, Disconnected, read_body
from app.dialect import VERBS
from app.extender import BadRequest, Extender, ResponseTooLarge
from app.framework import PluginFailure
from app.metrics import Metrics
from schemas.responses import ErrorResponse

logger = logging.getLogger("caldera.verbs")
JSON_HEADER = (b"content-type", b"application/json")


class VerbEndpoint:
    """The ASGI endpoint of one verb."""

    def __init__(self, verb: str, extender: Extender, metrics: Metrics, limit: int) -> None:
        self.verb = verb
        self.extender = extender
        self.metrics = metrics
        self.limit = limit
        self.duration = metrics.request_duration.labels(verb)
        self.size = metrics.request_bytes.labels(verb)
        self.ok = metrics.responses.labels(verb, "200")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        verb = self.verb
        try:
            body = await read_body(scope, receive, self.limit)
        except Disconnected:
            return
        except BodyTooLarge as exc:
            self._refused("too_large", "413")
            logger.warning("refused %s body: %s", verb, exc)
            await self._send(send, 413, ErrorResponse(error=str(exc), verb=verb, limit=self.limit))
            return
        except BadLength as exc:
            self._refused("bad_request", "400")
            await self._send(send, 400, ErrorResponse(error=str(exc), verb=verb))
            return
        self.size.observe(len(body))
        read = time.perf_counter()
        try:
            answer = self.extender.handle(verb, body)
        except BadRequest as exc:
            self._refused("bad_request", "400")
            logger.info("bad %s request: %s", verb, exc)
            await self._send(send, 400, ErrorResponse(error=str(exc), verb=verb))
            return
        except PluginFailure as exc:
            self.metrics.responses.labels(verb, "500").inc()
            logger.error("%s", exc, exc_info=exc.cause)
            error = ErrorResponse(error=str(exc), verb=exc.verb, plugin=exc.plugin)
            await self._send(send, 500, error)
            return
        except (ResponseTooLarge, RuntimeError) as exc:
            self.metrics.responses.labels(verb, "500").inc()
            logger.error("%s failed: %s", verb, exc)
            await self._send(send, 500, ErrorResponse(error=str(exc), verb=verb))
            return
        done = time.perf_counter()
        self.duration.observe(done - started)
        self.ok.inc()
        await send_json(send, 200, answer)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: read %d bytes in %.2f ms, answered in %.2f ms",
                verb,
                len(body),
                (read - started) * 1e3,
                (done - read) * 1e3,
            )

    def _refused(self, reason: str, code: str) -> None:
        self.metrics.bodies_refused.labels(self.verb, reason).inc()
        self.metrics.responses.labels(self.verb, code).inc()

    async def _send(self, send: Send, status: int, error: ErrorResponse) -> None:
        await send_json(send, status, msgspec.json.encode(error))


async def send_json(send: Send, status: int, payload: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [JSON_HEADER, (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def verb_routes(extender: Extender, metrics: Metrics, limit: int) -> list[Route]:
    routes = [
        Route(f"/{verb}", VerbEndpoint(verb, extender, metrics, limit), methods=["POST"], name=verb)
        for verb in VERBS
    ]
    if extender.dialect.legacy_reclaimable_path:
        # v1.6–v1.7 post jobEnqueueable/queueOverused to "<prefix>/" when reclaimableVerb is empty.
        routes.append(
            Route("/", VerbEndpoint("reclaimable", extender, metrics, limit), methods=["POST"])
        )
    return routes
