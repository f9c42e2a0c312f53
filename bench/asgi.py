"""Driving the ASGI app in process, for ``bench run``'s and ``bench.hotpath``'s in-process rows:
no sockets, no uvicorn parsing; a non-200 answer is an error."""

from __future__ import annotations

import time
from typing import Any


async def drive(app: Any, path: str, body: bytes, n: int) -> list[float]:
    """POST ``body`` to ``path`` of the ASGI ``app`` ``n`` times, in process; the seconds of
    each call. The body arrives as one chunk, as the server's direct body read delivers it."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }
    times = []
    delivered = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(msg: dict[str, Any]) -> None:
        if msg["type"] == "http.response.start":
            status.append(msg["status"])

    for _ in range(n):
        delivered = False
        status.clear()
        t0 = time.perf_counter()
        await app(dict(scope), receive, send)
        times.append(time.perf_counter() - t0)
        if status != [200]:
            raise RuntimeError(f"{path}: status {status}")
    return times
