"""HTTP/1.1 over a raw socket, for requests no well-behaved client would send: lying lengths,
broken chunks, stalled bodies, giant headers. One response is read, with a deadline."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class RawResponse:
    status: int | None
    """None when the server closed the connection without answering."""
    headers: dict[str, str]
    body: bytes
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def closes(self) -> bool:
        return self.headers.get("connection", "").lower() == "close"


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def post(path: str, body: bytes, *, length: int | None = None, headers: str = "") -> bytes:
    """A POST with ``Content-Length: length`` (the body's own length unless told)."""
    declared = len(body) if length is None else length
    return (
        f"POST {path} HTTP/1.1\r\nHost: caldera\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n{headers}\r\n"
    ).encode() + body


async def read_response(reader: asyncio.StreamReader, timeout: float) -> RawResponse:
    started = time.monotonic()

    async def read() -> RawResponse:
        status_line = await reader.readline()
        if not status_line:
            return RawResponse(None, {}, b"", time.monotonic() - started)
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return RawResponse(status, headers, body, time.monotonic() - started)

    return await asyncio.wait_for(read(), timeout)


async def exchange(
    url: str, data: bytes, *, timeout: float = 10.0, close_write: bool = False
) -> RawResponse:
    """Send ``data`` on a new connection and read one response (status None if the server
    closed without one). ``close_write`` half-closes the connection after sending."""
    reader, writer = await asyncio.open_connection(*address(url))
    try:
        writer.write(data)
        await writer.drain()
        if close_write:
            writer.write_eof()
        return await read_response(reader, timeout)
    finally:
        writer.close()


async def connection_closed(reader: asyncio.StreamReader, timeout: float) -> bool:
    """Whether the server closes the connection within ``timeout`` (reading what it sends)."""
    try:
        async with asyncio.timeout(timeout):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True
