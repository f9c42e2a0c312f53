"""Reading request bodies under their verb's limit (``maxSnapshotBytes`` for onSessionOpen,
``maxRequestBytes`` for every other verb), straight from the ASGI ``receive``.

The limit is checked against ``Content-Length`` before a byte is read, and counted while
streaming when the length is absent (chunked), so an oversized body is never buffered past the
limit. With a declared length the body is read into one preallocated buffer: a 75 MiB snapshot
is not copied again to be joined. Under ``caldera serve`` the server has already written such a
body into a buffer of its length as it arrived (:class:`app.server.connections.DirectBody`); that
buffer is taken as it is (and, once the request is answered, may receive the next large body:
``app/server/buffers.py``).

The whole body must arrive within ``timeout`` seconds of the first read: a client that stalls
mid-body, or sends a byte a second, is answered 408 instead of holding its connection and its
buffer for ever (the HTTP server bounds the idle time and the headers, not the body).
"""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope

from app.errors import BadLength, BodyTimeout, BodyTooLarge, Disconnected
from app.server.connections import DIRECT_BODY, DirectBody

DEFAULT_TIMEOUT = 10.0
"""Seconds for a whole body; ``CALDERA_BODY_TIMEOUT_SECONDS``. A 75 MiB snapshot takes well
under one on loopback, and Volcano gives up after ``extender.httpTimeout`` (1 s by default)."""


def declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                raise BadLength(
                    f"Content-Length {value.decode('latin-1')!r} is not a number"
                ) from None
    return None


async def read_body(
    scope: Scope,
    receive: Receive,
    limit: int,
    timeout: float | None = DEFAULT_TIMEOUT,
    setting: str = "maxRequestBytes",
) -> bytes | bytearray:
    """The body, at most ``limit`` bytes (the configuration key ``setting``, named in the
    refusal), complete within ``timeout`` seconds (None: no bound)."""
    length = declared_length(scope)
    if length is not None and length > limit:
        raise BodyTooLarge(limit, length, setting)
    received = [0]  # bytes so far, for the timeout message
    direct: DirectBody | None = scope.get("extensions", {}).get(DIRECT_BODY)
    if direct is not None and direct.complete and length == len(direct.buffer):
        # Already in (a small body arrives with its head): receive() cannot wait, and arming
        # the deadline would cost more than reading.
        return await _read_direct(receive, direct)
    try:
        async with asyncio.timeout(timeout):
            if direct is not None and length == len(direct.buffer):
                return await _read_direct(receive, direct)
            if length is not None:
                return await _read_declared(receive, length, received)
            return await _read_streamed(receive, limit, received, setting)
    except TimeoutError:
        got = direct.received if direct is not None else received[0]
        raise BodyTimeout(timeout or 0.0, got) from None


async def _read_direct(receive: Receive, direct: DirectBody) -> bytearray:
    """The server wrote the body into ``direct`` as it arrived (``app/server/connections.py``): one
    ``receive()`` returns when it is complete or the client is gone."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise Disconnected
    if message.get("more_body", False) or not direct.complete:
        raise BadLength(
            f"body has {direct.received} bytes, Content-Length says {len(direct.buffer)}"
        )
    return direct.take()


async def _read_streamed(receive: Receive, limit: int, received: list[int], setting: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        received[0] = size
        if size > limit:
            raise BodyTooLarge(limit, None, setting)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _read_declared(receive: Receive, length: int, received: list[int]) -> bytes | bytearray:
    message = await receive()
    if message["type"] == "http.disconnect":
        raise Disconnected
    chunk: bytes = message.get("body", b"")
    if not message.get("more_body", False):  # the usual case for small bodies: no copy at all
        if len(chunk) != length:
            raise BadLength(f"body has {len(chunk)} bytes, Content-Length says {length}")
        return chunk
    buffer = bytearray(length)
    view = memoryview(buffer)
    position = 0
    while True:
        end = position + len(chunk)
        if end > length:
            raise BadLength(f"body is longer than its Content-Length {length}")
        view[position:end] = chunk
        position = received[0] = end
        if not message.get("more_body", False):
            break
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
    if position != length:
        raise BadLength(f"body has {position} bytes, Content-Length says {length}")
    return buffer
