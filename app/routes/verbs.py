"""POST /<verb>: the extender protocol. Thin: read the body, time it, hand it to Extender."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import msgspec
from fastapi import APIRouter, Request, Response

from app.body import BadLength, BodyTooLarge, read_body
from app.dialect import VERBS
from app.extender import BadRequest, Extender, ResponseTooLarge
from app.framework import PluginFailure
from app.metrics import Metrics
from app.openapi import verb_openapi
from schemas.responses import ErrorResponse

logger = logging.getLogger("caldera.verbs")


def debug_enabled() -> bool:
    return logger.isEnabledFor(logging.DEBUG)


JSON = "application/json"


def error_response(status: int, error: ErrorResponse) -> Response:
    return Response(msgspec.json.encode(error), status_code=status, media_type=JSON)


def make_endpoint(
    verb: str, extender: Extender, metrics: Metrics, limit: int
) -> Callable[[Request], Awaitable[Response]]:
    duration = metrics.request_duration.labels(verb)
    size = metrics.request_bytes.labels(verb)
    ok = metrics.responses.labels(verb, "200")

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await read_body(request, limit)
        except BodyTooLarge as exc:
            metrics.bodies_refused.labels(verb, "too_large").inc()
            metrics.responses.labels(verb, "413").inc()
            logger.warning("refused %s body: %s", verb, exc)
            return error_response(413, ErrorResponse(error=str(exc), verb=verb, limit=limit))
        except BadLength as exc:
            metrics.bodies_refused.labels(verb, "bad_request").inc()
            metrics.responses.labels(verb, "400").inc()
            return error_response(400, ErrorResponse(error=str(exc), verb=verb))
        size.observe(len(body))
        read = time.perf_counter()
        try:
            answer = extender.handle(verb, body)
        except BadRequest as exc:
            metrics.bodies_refused.labels(verb, "bad_request").inc()
            metrics.responses.labels(verb, "400").inc()
            logger.info("bad %s request: %s", verb, exc)
            return error_response(400, ErrorResponse(error=str(exc), verb=verb))
        except PluginFailure as exc:
            metrics.responses.labels(verb, "500").inc()
            logger.error("%s", exc, exc_info=exc.cause)
            return error_response(
                500, ErrorResponse(error=str(exc), verb=exc.verb, plugin=exc.plugin)
            )
        except (ResponseTooLarge, RuntimeError) as exc:
            metrics.responses.labels(verb, "500").inc()
            logger.error("%s failed: %s", verb, exc)
            return error_response(500, ErrorResponse(error=str(exc), verb=verb))
        done = time.perf_counter()
        duration.observe(done - started)
        ok.inc()
        if debug_enabled():
            logger.debug(
                "%s: read %d bytes in %.2f ms, answered in %.2f ms",
                verb,
                len(body),
                (read - started) * 1e3,
                (done - read) * 1e3,
            )
        return Response(answer, media_type=JSON)

    endpoint.__name__ = verb
    return endpoint


def build_router(extender: Extender, metrics: Metrics, limit: int) -> APIRouter:
    router = APIRouter(tags=["extender"])
    for verb in VERBS:
        router.add_api_route(
            f"/{verb}",
            make_endpoint(verb, extender, metrics, limit),
            methods=["POST"],
            response_class=Response,
            name=verb,
            **verb_openapi(verb),
        )
    if extender.dialect.legacy_reclaimable_path:
        # v1.6–v1.7 post jobEnqueueable/queueOverused to "<prefix>/" when reclaimableVerb is empty.
        router.add_api_route(
            "/",
            make_endpoint("reclaimable", extender, metrics, limit),
            methods=["POST"],
            response_class=Response,
            include_in_schema=False,
        )
    return router
