"""GET /livez and /healthz (the process answers) and /readyz (configuration loaded, plugins
built, every plugin's background data source synced, the last session snapshot Volcano sent
taken: ``app/server/snapshot_health.py``, and with ``sessionState: cluster`` every watched
collection listed once).

Each answers HEAD as well as GET: load balancers and ``curl -I`` probe with HEAD, and a 405
there reads as "down". ``/livez`` is the name Kubernetes' own components use for liveness;
``/healthz`` stays for the probes and scripts written against it.

An optional feature that does not work (``app/server/features.py``) is listed under ``features`` and
makes the status ``degraded``, still 200: it must not keep the scheduler from starting; a data
source that has not synced holds readiness back only during the start's grace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from app import __version__
from app.cluster_state.cluster_mode import ClusterSessionState
from app.server.routes.json import json_response
from app.server.runtime import runtime_of

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
    state = runtime_of(request)
    served = state.served
    backgrounds: dict[str, Any] = {}
    ready = state.snapshot.ready
    # A data source that has not synced holds readiness back during the start's grace only
    # (the startupProbe then holds vc-scheduler back); after it, it is a degraded feature
    # and the scheduler may start: app/server/features.py.
    waiting = state.features.in_grace()
    state.features.check_backgrounds(served.backgrounds)
    for key, background in served.backgrounds.items():
        ok = background.ready()
        backgrounds[key] = {"ready": ok, **background.describe()}
        ready = ready and (ok or not waiting)
    # sessionState cluster: without the watched state every session would be answered
    # sessionless, so the watches' first LIST holds readiness back (no grace: it is the state).
    cluster = state.session_state
    stale = False
    if isinstance(cluster, ClusterSessionState):
        # Stale: sessions are answered from a view that no longer moves, as onStaleState says
        # (app/cluster_state/staleness.py). 503 like the first LIST's wait; after the start it
        # only marks the pod unready (a readiness probe restarts nothing), which is the signal.
        stale = bool(cluster.staleness.stale())
        ready = ready and cluster.ready and not stale
    features = state.features.describe()
    status = ("degraded" if features else "ready") if ready else "stale" if stale else "not ready"
    body = {
        "status": status,
        "version": __version__,
        "volcanoVersion": served.sessions.release.name,
        "plugins": [option.name for option in served.config.plugin_options()],
        "backgrounds": backgrounds,
        "snapshot": state.snapshot.describe(),
        "releaseMismatch": dict(state.extender.release_watch.evidence),
        "config": state.config_watch.describe(),
        "features": features,
        # A plugin's faults never make the pod unready: its onError decides what they cost.
        "pluginErrors": state.faults.describe(),
    }
    if isinstance(cluster, ClusterSessionState):
        body["sessionState"] = {
            "mode": cluster.mode,
            "synced": cluster.synced,
            **cluster.staleness.describe(),
            "objects": cluster.store.sizes(),
            "watches": cluster.watch.describe(),
        }
    if state.shadow is not None:  # shown, never part of readiness: it cannot affect serving
        body["shadow"] = state.shadow.describe()
    return json_response(body, status_code=200 if ready else 503)


probe("/livez", livez, summary="Liveness: the process is serving")
probe("/healthz", livez, summary="Liveness: the process is serving (as /livez)")
probe(
    "/readyz",
    readyz,
    summary="Readiness: configuration loaded, plugins built, data synced, last snapshot taken",
    responses={
        503: {
            "description": "Not ready: a plugin's data source has not synced, the last"
            " onSessionOpen snapshot was not taken (Volcano then schedules without Caldera's"
            " plugins), or with sessionState cluster the watches have not listed yet or one has"
            " been broken past sessionStateMaxStaleness (status stale); the body says which"
        }
    },
)
