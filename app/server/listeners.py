"""The two listeners of ``caldera serve``: the verbs on loopback, the probes and metrics beside.

Caldera trusts whoever reaches the verbs (README, "Security"), so a sidecar serves them on
``127.0.0.1``, where only the scheduler's pod can reach them. The kubelet's probes and
Prometheus reach the pod IP, so ``/livez``, ``/healthz``, ``/readyz`` and ``/metrics`` get a
listener of their own (``--health-host``/``--health-port``, default host ``0.0.0.0``) that serves nothing else
— the pattern of kube-scheduler's separate metrics port and of HAMi's extender. Both run in one
process and share the app (its sessions, metrics and plugin backgrounds); the second runs no
lifespan, so the backgrounds start once.

The health listener runs on a thread and event loop of its own: a plugin hook runs on the verbs'
loop and may take seconds (a slow hook is a fault, app/plugin_faults.py, but it has already
taken its time), and the kubelet's liveness probe must not wait for it, or it restarts a sidecar
that was only slow. The other way, every hook off the verbs' loop, costs each verb a hand-off to
a worker thread and back (bench/README.md, "Probes during a slow hook"); the probes' thread costs
the verbs nothing. What the probes read is written on the verbs' loop and read whole (a dict
copy, a lock where several values must agree).

The verb listener keeps serving the operator endpoints too, so ``curl`` on the sidecar's
loopback still shows everything.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import threading
import time
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

    def __init__(
        self, app: ASGIApp, verbs_at: str, verbs_serving: Callable[[], bool] = lambda: True
    ) -> None:
        self.app = app
        self.verbs_serving = verbs_serving
        """Whether the verbs' listener accepts calls. It starts after this one (its lifespan
        starts the runtime), so until then ``/readyz`` says not ready: a ready pod whose verbs
        port refuses connections would fail Volcano's calls."""
        self.refusal = msgspec.json.encode(
            ErrorResponse(
                error=f"not served on the health listener (only {', '.join(sorted(HEALTH_PATHS))});"
                f" the extender verbs are on {verbs_at}"
            )
        )
        self.starting = msgspec.json.encode(
            {
                "status": "not ready",
                "reason": f"the extender verbs' listener on {verbs_at} is not serving yet",
            }
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["path"] == "/readyz" and not self.verbs_serving():
            await self._reply(scope, send, 503, self.starting)
        elif scope["path"] in HEALTH_PATHS:
            await self.app(scope, receive, send)
        else:
            await self._reply(scope, send, 404, self.refusal)

    @staticmethod
    async def _reply(scope: Scope, send: Send, status: int, body: bytes) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body}
        )


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


STARTUP_FAILURE = 3
"""uvicorn's exit status when a listener cannot bind its address (README: exit 3)."""


class OncePerProcess(logging.Filter):
    """Passes uvicorn's "Started/Finished server process" once: both listeners' servers say it,
    and the process started once."""

    MESSAGES = ("Started server process [%d]", "Finished server process [%d]")

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in self.MESSAGES:
            if record.msg in self.seen:
                return False
            self.seen.add(record.msg)
        return True


class HealthThread(threading.Thread):
    """The health listener's server on a thread and event loop of its own. uvicorn installs
    no signal handlers off the main thread: the verbs' server hears SIGTERM, and stopping it
    stops this one (:meth:`stop`)."""

    def __init__(
        self,
        server: uvicorn.Server,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None,
    ) -> None:
        super().__init__(name="caldera-health", daemon=True)
        self.server = server
        self.loop_factory = loop_factory
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=self.loop_factory) as runner:
                runner.run(self.server.serve())
        except BaseException as exc:  # SystemExit when the port cannot be bound
            self.failed = exc

    def wait_started(self, timeout: float = 30.0) -> bool:
        """Whether the listener is serving (False: it stopped, or did not start in time)."""
        deadline = time.monotonic() + timeout
        while not self.server.started and self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.server.started

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.join(timeout)


def run(
    verbs: uvicorn.Server,
    health: uvicorn.Server | None,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None,
) -> None:
    """Serve until a signal (uvloop when installed, as uvicorn picks it): the verbs on this
    thread, the health listener on its own (:class:`HealthThread`), started first."""
    if health is None:
        verbs.run()
        return
    once = OncePerProcess()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(once)
    thread = HealthThread(health, loop_factory)
    thread.start()
    if not thread.wait_started():
        thread.stop()
        if isinstance(thread.failed, SystemExit):
            raise thread.failed  # uvicorn's own exit (3: the port could not be bound)
        logger.error("the health listener did not start: %s", thread.failed or "timed out")
        return  # verbs.started stays False: serve exits 1
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(verbs.serve())
    finally:
        thread.stop()
        uvicorn_log.removeFilter(once)
