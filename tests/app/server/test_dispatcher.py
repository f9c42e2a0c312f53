"""The verbs' POSTs go straight to their endpoints (``app.server.main.VerbDispatcher``); everything
else goes through FastAPI's stack. Both keep the request id and answer errors as JSON, and a
middleware added with ``add_middleware`` (tracing, authentication) wraps both."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import httpx
import pytest
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import load_config_text
from app.server.main import CalderaApp, create_app
from app.server.options import ServeOptions


class Seen:
    """A middleware added with ``add_middleware``: records every request it wraps, and whether
    FastAPI's router handled it (Starlette's router marks the scope)."""

    requests: ClassVar[dict[str, bool]] = {}

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            Seen.requests[f"{scope['method']} {scope['path']}"] = "router" in scope


def client() -> tuple[CalderaApp, httpx.AsyncClient]:
    app = create_app(ServeOptions.of(load_config_text("tiers: []", "test.yaml")))
    assert isinstance(app, CalderaApp)
    app.add_middleware(Seen)
    transport = httpx.ASGITransport(app=app)
    return app, httpx.AsyncClient(transport=transport, base_url="http://caldera")


# name, method, path, body, status, through FastAPI's stack
CASES = [
    ("verb POST", "POST", "/onSessionClose", b"{}", 200, False),
    ("verb POST with a bad body", "POST", "/predicate", b"{", 400, False),
    ("verb under GET", "GET", "/predicate", b"", 405, True),
    ("unknown POST", "POST", "/no-such-verb", b"{}", 404, True),
    ("operator GET", "GET", "/healthz", b"", 200, True),
]


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "status", "through_fastapi"),
    CASES,
    ids=[c[0] for c in CASES],
)
async def test_only_verb_posts_skip_fastapi_and_added_middleware_wraps_all(
    name: str, method: str, path: str, body: bytes, status: int, through_fastapi: bool
) -> None:
    Seen.requests.clear()
    _, http = client()
    async with http:
        response = await http.request(method, path, content=body)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert re.fullmatch(r"[0-9a-f]{16}", response.headers["x-request-id"])
    assert Seen.requests == {f"{method} {path}": through_fastapi}


async def test_a_verb_echoes_the_callers_request_id() -> None:
    _, http = client()
    async with http:
        response = await http.post(
            "/onSessionClose", content=b"{}", headers={"X-Request-Id": "volcano-1"}
        )
    assert response.headers["x-request-id"] == "volcano-1"


def test_every_verb_route_has_a_direct_endpoint() -> None:
    app, _ = client()
    posts: dict[str, Any] = {
        route.path: route.app
        for route in app.router.routes
        if isinstance(route, Route) and "POST" in (route.methods or ())
    }
    assert posts == app.verb_endpoints and "/predicate" in posts and "/allocate" in posts
