"""The app factory: ``create_app(config)`` wires settings, sessions, metrics and routes, and
starts the plugins' background data sources in the lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import __version__
from app.body import DEFAULT_TIMEOUT as DEFAULT_BODY_TIMEOUT
from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.compare_mode import SessionStateComparison
from app.cluster_state.derive import Settings
from app.config import CalderaConfig
from app.config_watch import (
    DEFAULT_INTERVAL_SECONDS,
    Backgrounds,
    ConfigOrigin,
    ConfigWatch,
    Served,
    build_backgrounds,
)
from app.events import KubeEventSink, PodGroupEvents
from app.explain import DecisionRecord
from app.extender import Extender
from app.features import EVENTS, POLL_SECONDS, RECORD, Features
from app.logs import request_id
from app.metrics import Metrics
from app.openapi import components, verb_paths
from app.plugin_faults import PluginFaults
from app.record import Recorder, RecordingExtender
from app.routes import debug, docs, health, metrics
from app.routes import shadow as shadow_routes
from app.routes.verbs import Answers, verb_routes
from app.runtime import Runtime, Serving
from app.session import SessionManager
from app.shadow import DEFAULT_MAX_QUEUED_BYTES, Shadow, ShadowedAnswers
from app.snapshot_health import SnapshotHealth
from plugins.api.base import Background, utc_now
from schemas.responses import ErrorResponse

logger = logging.getLogger("caldera")

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
    (``app/routes/verbs.py``). Every other request, and a verb path under another method (405),
    goes through FastAPI's stack as before."""

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
    (tests/app/test_dispatcher.py). It sits outside FastAPI's error handling, so it must answer
    its own errors; pure ASGI middleware costs the verbs nothing measurable."""

    verb_endpoints: dict[str, ASGIApp]

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


def feature_health(features: Features, feature: str, problem: str | None) -> None:
    """A feature's latest outcome: a failure (``problem``) or a success."""
    if problem is None:
        features.recovered(feature)
    else:
        features.failed(feature, problem)


async def watch_backgrounds(app: FastAPI, features: Features) -> None:
    """Look at the plugins' data sources every second: one that cannot sync is a degraded
    feature (an ERROR once, the gauge, ``/readyz``), whichever configuration is served."""
    while True:
        features.check_backgrounds(app.state.backgrounds)
        await asyncio.sleep(POLL_SECONDS)


def release_caveat(config: CalderaConfig) -> str:
    """What the start banner adds after "serving Volcano X": nothing when ``volcanoVersion``
    names a stable release, else one short clause (``check-config`` prints the long why)."""
    if config.infers_release:
        return " (volcanoVersion auto: inferred from the first onSessionOpen)"
    if "volcanoVersion" not in config.model_fields_set:
        return " (volcanoVersion is not set: set it to the release you run)"
    if not config.release.is_stable:
        return " (an alpha release)"
    return ""


def create_app(
    config: CalderaConfig,
    recorder: Recorder | None = None,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    origin: ConfigOrigin | None = None,
    watch_interval: float = DEFAULT_INTERVAL_SECONDS,
    shadow_path: str | None = None,
    shadow_max_queued_bytes: int | None = None,
) -> FastAPI:
    """The app for ``config``; with a ``recorder`` (``serve --record``) every exchange is also
    written to disk, and the app closes the recorder when it shuts down. A request body must
    arrive within ``body_timeout`` seconds (``CALDERA_BODY_TIMEOUT_SECONDS``). ``origin``
    names where ``config`` was read from; when that is a file, it is watched every
    ``watch_interval`` seconds (0: not watched) and a valid change applies at the next session
    boundary (``app/config_watch.py``). ``shadow_path`` names a shadow configuration evaluated on
    the same requests off the hot path (``app/shadow.py``)."""
    metrics_ = Metrics()
    origin = origin or ConfigOrigin.of(config)
    backgrounds, _ = build_backgrounds(config)
    clock = recorder.clock if recorder is not None else utc_now
    record = DecisionRecord(config.explainSessions, config.explainEntries)
    features = Features(metrics_.feature_degraded)
    event_sink = KubeEventSink(config.explainEventsKubeconfig)
    events = PodGroupEvents(event_sink, clock=clock) if config.explainEvents else None
    if events is not None:
        features.enabled(EVENTS)
        events.health = functools.partial(feature_health, features, EVENTS)
    if recorder is not None:
        features.enabled(RECORD)
        recorder.on_failure = functools.partial(features.failed, RECORD)
    faults = PluginFaults(metrics_, clock)
    sessions = SessionManager(
        config, metrics_, backgrounds, clock=clock, record=record, events=events, faults=faults
    )
    extender = Extender(config, sessions, metrics_)
    session_state: SessionStateComparison | ClusterSessionState | None = None
    watched = Settings(config.sessionStateSchedulerNames, config.sessionStateDefaultQueue)
    if config.sessionState == "compare":
        session_state = SessionStateComparison(
            watched,
            config.sessionStateKubeconfig,
            count=lambda kind, n: metrics_.session_state_differences.labels(kind).inc(n),
            count_in_flight=lambda kind, n: metrics_.session_state_differences_in_flight.labels(
                kind
            ).inc(n),
            outcome=lambda outcome: metrics_.session_state_sessions.labels(outcome).inc(),
        )
    elif config.sessionState == "cluster":
        session_state = ClusterSessionState(
            watched, config.sessionStateKubeconfig, metrics_.session_state_derive.observe
        )
    extender.session_state = session_state

    def switch(new: CalderaConfig, new_backgrounds: Backgrounds) -> None:
        """Answer from ``new`` from now on: called between sessions only."""
        previous = extender.sessions
        sessions = SessionManager(
            new, metrics_, new_backgrounds, clock=clock, record=record, events=events,
            faults=faults,
        )  # fmt: skip
        sessions.set_release(previous.release)  # an inferred release (auto) carries over
        previous.close()
        extender.reconfigure(new, sessions)
        publish(new, sessions, new_backgrounds)

    def publish(config: CalderaConfig, sessions: SessionManager, backgrounds: Backgrounds) -> None:
        """What the operator endpoints read (/readyz, /metrics, /debug/session)."""
        runtime.publish(config, sessions, backgrounds)
        # The same under app.state's old names, for code that still reads them there.
        app.state.config = config
        app.state.sessions = sessions
        app.state.backgrounds = runtime.backgrounds
        # sessionState cluster: Volcano posts no snapshot, and a cycle that calls nothing but
        # onSessionClose opens no session, so no session is expected every period.
        expected = extender.snapshot_bound and config.sessionState != "cluster"
        metrics_.snapshot_expected.set(1 if expected else 0)

    watch = ConfigWatch(
        origin,
        Served(config, origin.sha256, clock(), backgrounds),
        switch,
        session_open=lambda: extender.sessions.current is not None,
        metrics=metrics_,
        interval=watch_interval,
        clock=clock,
    )
    extender.at_session_boundary = watch.at_session_boundary
    extender.session_opened = watch.session_opened
    extender.session_open_failed = watch.session_open_failed
    metrics_.set_build_info("auto" if config.infers_release else config.release.name)
    metrics_.config_info.labels(origin.source, origin.sha256).set(1)
    metrics_.config_loaded.set(time.time())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        started: list[Background] = []
        looking: asyncio.Task[None] | None = None
        try:
            for background in backgrounds.values():
                await background.start()
                started.append(background)
            logger.info(
                "caldera %s serving Volcano %s%s with plugins: %s; configuration %s (sha256 %s%s)",
                __version__,
                config.release.name,
                release_caveat(config),
                ", ".join(o.name for o in config.plugin_options()) or "none",
                origin.source,
                origin.sha256,
                f", checked for changes every {watch_interval:g} s" if watch.watching else "",
            )
            if events is not None:
                problem = event_sink.problem()
                if problem is not None:
                    features.failed(EVENTS, problem, "no PodGroup Event is sent")
                await events.start()
            if session_state is not None:
                await session_state.start()
            watch.start()
            looking = asyncio.create_task(watch_backgrounds(app, features), name="features")
            yield
        finally:
            if looking is not None:
                looking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await looking
            await watch.stop()
            if session_state is not None:
                await session_state.stop()
            if events is not None:
                await events.stop()  # stops the data sources a live reload retired or staged
            # The served configuration's: the ones started here, unless a reload replaced it.
            in_use = (
                started
                if watch.served.backgrounds is backgrounds
                else list(watch.served.backgrounds.values())
            )
            for background in reversed(in_use):
                try:
                    await background.stop()
                except Exception:
                    logger.exception("stopping a plugin background failed")
            if recorder is not None:
                recorder.close()
            if shadow is not None:
                shadow.stop()

    app = CalderaApp(
        title="Caldera",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        redoc_url=None,
        docs_url=None,  # app/routes/docs.py: the same page, with a note for offline browsers
    )
    snapshot = SnapshotHealth(clock, metrics_.snapshot_taken.set)
    runtime = Runtime(
        metrics_, extender, record, events, faults, snapshot, watch,
        Serving(config, sessions, {}), features, session_state,
    )  # fmt: skip
    app.state.runtime = runtime  # what the operator routes read (app/runtime.py)
    app.state.metrics = metrics_
    app.state.extender = extender
    app.state.record = record
    app.state.events = events
    app.state.session_state = session_state
    app.state.features = features
    app.state.faults = faults
    app.state.config_watch = watch
    app.state.snapshot = snapshot
    publish(config, sessions, backgrounds)
    answers: Answers = extender if recorder is None else RecordingExtender(extender, recorder)
    shadow = None
    if shadow_path is not None:
        shadow = Shadow(
            shadow_path,
            metrics_.registry,
            shadow_max_queued_bytes or DEFAULT_MAX_QUEUED_BYTES,
            live_path=origin.path,
            clock=clock,
            live_sources=lambda: (watch.served.config, watch.served.backgrounds),
        )
        answers = ShadowedAnswers(answers, shadow, record)
    runtime.shadow = shadow
    app.state.shadow = shadow
    routes = verb_routes(answers, metrics_, config.body_limit, body_timeout, snapshot)
    app.router.routes.extend(routes)
    app.verb_endpoints = {route.path: route.app for route in routes}
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(debug.router)
    app.include_router(shadow_routes.router)
    app.include_router(docs.router)
    app.add_middleware(RequestIdMiddleware)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
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

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            schema["paths"] = {**verb_paths(), **schema.get("paths", {})}
            schema.setdefault("components", {}).setdefault("schemas", {}).update(components())
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
