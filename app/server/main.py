"""The app factory: ``create_app(options)`` builds the :class:`~app.server.runtime.Runtime` that
serves the :class:`~app.server.options.ServeOptions`, hands it to the lifespan (which starts and
stops it) and mounts the routes."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import __version__
from app.cluster_state.cluster_mode import ClusterSessionState
from app.server.logs import request_id
from app.server.openapi import components, verb_paths
from app.server.options import ServeOptions
from app.server.record import RecordingExtender
from app.server.routes import capabilities, debug, docs, health, metrics
from app.server.routes import shadow as shadow_routes
from app.server.routes.verbs import Answers, verb_routes
from app.server.runtime import Runtime
from app.shadow.service import ShadowedAnswers
from schemas.responses import ErrorResponse

DESCRIPTION = (
    "Caldera hosts Volcano scheduler plugins behind Volcano's `extender` plugin. Each POST verb"
    " takes and returns exactly the JSON bodies of Volcano's extender protocol (Go field"
    " names); GET endpoints are for operators."
)


def new_request_id() -> str:
    """16 hex digits (64 random bits) naming a request in the log when the client sent none.
    Mersenne Twister, not the OS: it only has to be unlikely to repeat, and ``uuid4`` costs a
    system call per request."""
    return f"{_random_bits(64):016x}"


_random_bits = random.Random().getrandbits


async def with_request_id(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` with the request's ``X-Request-Id`` (or a new one) in the log context, and
    echo it on the response."""
    rid = ""
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            rid = value.decode("latin-1")[:128]
            break
    rid = rid or new_request_id()
    token = request_id.set(rid)
    header = (b"x-request-id", rid.encode("latin-1"))

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), header]
        await send(message)

    try:
        await app(scope, receive, send_with_id)
    finally:
        request_id.reset(token)


class RequestIdMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware overhead): set the request id and echo it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await with_request_id(self.app, scope, receive, send)


class VerbDispatcher:
    """Sends the verbs' POSTs straight to their endpoints, everything else to FastAPI's stack.

    A verb call sits inside Volcano's scheduling cycle and carries no query, cookie or form:
    FastAPI's own stack (error, telemetry, body-limit and exception middleware, the async exit
    stack, the router's match over every route) cost about 20 us of the ~30 us an
    onSessionClose takes in process. The endpoint already answers every error as JSON
    (``app/server/routes/verbs.py``). Every other request, and a verb path under another method
    (405), goes through FastAPI's stack as before."""

    def __init__(self, verbs: dict[str, ASGIApp], rest: ASGIApp) -> None:
        self.verbs = verbs
        self.rest = rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = self.verbs.get(scope["path"])
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self.rest(scope, receive, send)


class CalderaApp(FastAPI):
    """FastAPI with :class:`VerbDispatcher` between the middleware added with
    ``add_middleware`` and FastAPI's own stack: such a middleware (the request id, and any
    tracing or authentication added later) wraps every request, the verbs included
    (tests/app/server/test_dispatcher.py). It sits outside FastAPI's error handling, so it must
    answer its own errors; pure ASGI middleware costs the verbs nothing measurable."""

    verb_endpoints: dict[str, ASGIApp]
    runtime: Runtime
    """What the app serves with, read by the operator routes through ``runtime_of``."""

    def build_middleware_stack(self) -> ASGIApp:
        added = self.user_middleware
        self.user_middleware = []
        try:
            fastapi_stack = super().build_middleware_stack()
        finally:
            self.user_middleware = added
        app: ASGIApp = VerbDispatcher(self.verb_endpoints, fastapi_stack)
        for cls, args, kwargs in reversed(added):
            app = cls(app, *args, **kwargs)
        return app

    def openapi(self) -> dict[str, Any]:
        """FastAPI's schema of the routes it serves, with the verbs' paths and bodies added: the
        verbs are plain ASGI endpoints (:class:`VerbDispatcher`), which FastAPI does not see."""
        if self.openapi_schema is None:
            schema = get_openapi(
                title=self.title,
                version=self.version,
                description=self.description,
                routes=self.routes,
            )
            schema["paths"] = {**verb_paths(), **schema.get("paths", {})}
            schema.setdefault("components", {}).setdefault("schemas", {}).update(components())
            self.openapi_schema = schema
        return self.openapi_schema


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """An HTTP error FastAPI's routing raises (an unknown path, a wrong method) as JSON."""
    detail = {404: "no such endpoint", 405: "method not allowed"}.get(
        exc.status_code, str(exc.detail)
    )
    error = ErrorResponse(error=f"{detail}: {request.method} {request.url.path}")
    return Response(
        msgspec.json.encode(error),
        status_code=exc.status_code,
        media_type="application/json",
        headers=dict(exc.headers or {}),
    )


@asynccontextmanager
async def lifespan(app: CalderaApp) -> AsyncIterator[None]:
    """The app's runtime runs while the app serves."""
    try:
        await app.runtime.start()
        yield
    finally:
        await app.runtime.stop()


def verb_answers(runtime: Runtime) -> Answers:
    """What the verbs' endpoints call: the extender, each exchange also written to disk with
    ``serve --record`` and offered to the shadow configuration with ``serve --shadow``."""
    answers: Answers = runtime.extender
    cluster = isinstance(runtime.session_state, ClusterSessionState)
    if runtime.recorder is not None:
        answers = RecordingExtender(runtime.extender, runtime.recorder, cluster)
    if runtime.shadow is not None:
        answers = ShadowedAnswers(
            answers, runtime.shadow, runtime.record, runtime.extender, cluster
        )
    return answers


def create_app(options: ServeOptions) -> CalderaApp:
    """The app serving ``options.config``: its :class:`~app.server.runtime.Runtime`, built from
    ``options`` and started and stopped by the lifespan, and the routes. A request body must
    arrive within ``options.body_timeout_seconds``."""
    runtime = Runtime(options)
    app = CalderaApp(
        title="Caldera",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        exception_handlers={StarletteHTTPException: http_error},
        redoc_url=None,
        docs_url=None,  # app/server/routes/docs.py: the same page, with a note for offline browsers
    )
    app.runtime = runtime
    routes = verb_routes(
        verb_answers(runtime),
        runtime.metrics,
        options.config.body_limit,
        options.body_timeout_seconds,
        runtime.snapshot,
    )
    app.router.routes.extend(routes)
    app.verb_endpoints = {route.path: route.app for route in routes}
    app.include_router(capabilities.router)
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(debug.router)
    app.include_router(shadow_routes.router)
    app.include_router(docs.router)
    app.add_middleware(RequestIdMiddleware)
    return app
