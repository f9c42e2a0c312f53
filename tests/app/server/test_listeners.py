"""The health listener's app (app/server/listeners.py ``HealthListener``): the probes and /metrics
of the wrapped app, a JSON 404 for anything else, and /readyz not ready until the verbs' listener
serves."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from app.server.listeners import HealthListener


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"status": "ready"}'})


def call(listener: HealthListener, path: str, method: str = "GET") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "path": path, "method": method}
    asyncio.run(listener(scope, receive, send))  # type: ignore[arg-type]
    return sent[0]["status"], sent[1]["body"]


CASES = [
    # (name, path, method, verbs serving, status, what the body says)
    ("readyz once the verbs serve", "/readyz", "GET", True, 200, "ready"),
    ("readyz before the verbs serve", "/readyz", "GET", False, 503, "not serving yet"),
    ("HEAD readyz before the verbs serve", "/readyz", "HEAD", False, 503, ""),
    ("livez before the verbs serve", "/livez", "GET", False, 200, "ready"),
    ("metrics before the verbs serve", "/metrics", "GET", False, 200, "ready"),
    ("a verb", "/predicate", "POST", True, 404, "the extender verbs are on 127.0.0.1:8090"),
    ("debug", "/debug/explain", "GET", True, 404, "not served on the health listener"),
]


@pytest.mark.parametrize(
    ("path", "method", "serving", "status", "says"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_health_listener(path: str, method: str, serving: bool, status: int, says: str) -> None:
    listener = HealthListener(_inner, "127.0.0.1:8090", verbs_serving=lambda: serving)
    got_status, body = call(listener, path, method)
    assert got_status == status
    if says:
        assert says in body.decode()
        json.loads(body)  # JSON always
    else:
        assert body == b""
