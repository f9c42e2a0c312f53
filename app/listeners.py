"""The two listeners of ``caldera serve``: the verbs on loopback, the probes and metrics beside.

Caldera trusts whoever reaches the verbs (README, "Security"), so a sidecar serves them on
``127.0.0.1``, where only the scheduler's pod can reach them. The kubelet's probes and
Prometheus reach the pod IP, so ``/livez``, ``/healthz``, ``/readyz`` and ``/metrics`` get a
listener of their own (``--health-host``/``--health-port``, default host ``0.0.0.0``) that
serves nothing else — the pattern of kube-scheduler's separate metrics port and of HAMi's
extender. Both run in one
process on one event loop and share the app (its sessions, metrics and plugin backgrounds); the
second runs no lifespan, so the backgrounds start once.

The verb listener keeps serving the operator endpoints too, so ``curl`` on the sidecar's
loopback still shows everything.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable

import msgspec
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.responses import ErrorResponse

logger = logging.getLogger("caldera")

HEALTH_PATHS = frozenset({"/livez", "/healthz", "/readyz", "/metrics"})
"""What the health listener serves: the kubelet's probes and Prometheus' scrape."""


class HealthListener:
    """The health listener's app: :data:`HEALTH_PATHS` of ``app``, 404 (JSON) for anything
    else — the verbs, ``/debug/*``, ``/docs`` and ``/openapi.json`` included."""

    def __init__(self, app: ASGIApp, verbs_at: str) -> None:
        self.app = app
        self.refusal = msgspec.json.encode(
            ErrorResponse(
                error=f"not served on the health listener (only {', '.join(sorted(HEALTH_PATHS))});"
                f" the extender verbs are on {verbs_at}"
            )
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self.refusal)).encode()),
        ]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": self.refusal})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def exposure_warning(host: str, tls: bool) -> str | None:
    """The warning ``caldera serve`` logs when the verbs are reachable beyond the pod."""
    if is_loopback(host) or tls:
        return None
    return (
        f"the extender verbs listen on {host} without TLS: anyone who can reach this address"
        " can steer scheduling decisions and replace the open session's snapshot. A sidecar"
        " serves them on 127.0.0.1 and the probes and metrics on --health-host/--health-port;"
        " a Caldera shared beyond its pod needs TLS and a NetworkPolicy (README, 'Security')"
    )


async def serve_together(verbs: uvicorn.Server, health: uvicorn.Server) -> None:
    """Run both servers on this loop until SIGTERM/SIGINT, then drain the verb server and stop
    the health one. The health server starts first, so the verb server's signal handlers are
    the ones in force (uvicorn installs its own per server and restores the previous ones on
    exit, re-raising the signal: the health server then hears it too)."""
    health_task = asyncio.create_task(health.serve())
    await asyncio.sleep(0)  # the health server's handlers go in first
    try:
        await verbs.serve()
    finally:
        health.should_exit = True
        await health_task


def run(
    verbs: uvicorn.Server,
    health: uvicorn.Server | None,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None,
) -> None:
    """Serve until a signal (uvloop when installed, as uvicorn picks it)."""
    if health is None:
        verbs.run()
        return
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve_together(verbs, health))
