"""GET /livez and /healthz (the process answers) and /readyz (configuration loaded, plugins
built, every plugin's background data source synced, and the last session snapshot Volcano sent
taken: ``app/snapshot_health.py``).

Each answers HEAD as well as GET: load balancers and ``curl -I`` probe with HEAD, and a 405
there reads as "down". ``/livez`` is the name Kubernetes' own components use for liveness;
``/healthz`` stays for the probes and scripts written against it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from app import __version__
from app.routes.json import json_response

router = APIRouter(tags=["operations"])


async def livez() -> Response:
    return json_response({"status": "ok"})


def probe(path: str, endpoint: Callable[..., Awaitable[Response]], **route: Any) -> None:
    """``path`` for GET and for HEAD (the same answer without its body: Starlette and uvicorn
    drop the body of a HEAD response), each with an operation id of its own."""
    name = path.strip("/")
    for method in ("GET", "HEAD"):
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            operation_id=f"{name}_{name}_{method.lower()}",
            **route,
        )


async def readyz(request: Request) -> Response:
    state = request.app.state
    backgrounds: dict[str, Any] = {}
    ready = state.sessions is not None and state.snapshot.ready
    for key, background in state.backgrounds.items():
        ok = background.ready()
        backgrounds[key] = {"ready": ok, **background.describe()}
        ready = ready and ok
    body = {
        "status": "ready" if ready else "not ready",
        "version": __version__,
        "volcanoVersion": state.sessions.release.name,
        "plugins": [option.name for option in state.config.plugin_options()],
        "backgrounds": backgrounds,
        "snapshot": state.snapshot.describe(),
        "releaseMismatch": dict(state.extender.release_watch.evidence),
        "config": state.config_watch.describe(),
    }
    return json_response(body, status_code=200 if ready else 503)


probe("/livez", livez, summary="Liveness: the process is serving")
probe("/healthz", livez, summary="Liveness: the process is serving (as /livez)")
probe(
    "/readyz",
    readyz,
    summary="Readiness: configuration loaded, plugins built, data synced, last snapshot taken",
    responses={
        503: {
            "description": "Not ready: a plugin's data source has not synced, or the last"
            " onSessionOpen snapshot was not taken (Volcano then schedules without Caldera's"
            " plugins); the body says which"
        }
    },
)
