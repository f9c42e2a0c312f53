"""The parts of uvicorn's httptools protocol that app/server/connections.py builds on, checked for
the versions pyproject.toml pins (uvicorn 0.54.x, httptools 0.9.x).

GuardedHttpToolsProtocol overrides uvicorn's protocol and reads its state: none of it is
uvicorn's public API, so a new uvicorn may rename or reshape it without notice. Each case names
what connections.py relies on; when one fails after an upgrade, read the new
``uvicorn/protocols/http/httptools_impl.py`` before changing the pin."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import httptools
import pytest
import uvicorn
from uvicorn.config import Config
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from app.server.connections import ConnectionLimits, GuardedHttpToolsProtocol, guarded_protocol


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.eof_written = False
        self.protocol: Any = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_written = True

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol


async def app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def connected() -> tuple[httptools_impl.HttpToolsProtocol, Transport]:
    config = Config(app=app, http=guarded_protocol(ConnectionLimits(5.0, 65536, 1 << 20)))
    config.load()
    protocol = config.http_protocol_class(  # type: ignore[call-arg]
        config=config, server_state=ServerState(), app_state={}
    )
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


def test_the_pinned_versions_are_installed() -> None:
    """pyproject.toml pins the minor versions these tests were written against."""
    assert uvicorn.__version__.startswith("0.54."), uvicorn.__version__
    assert httptools.__version__.startswith("0.9."), httptools.__version__


def test_the_guarded_protocol_subclasses_uvicorns() -> None:
    assert issubclass(GuardedHttpToolsProtocol, httptools_impl.HttpToolsProtocol)


@pytest.mark.parametrize(
    "method",
    ["connection_made", "connection_lost", "data_received", "on_message_begin", "on_url",
     "on_header", "on_headers_complete", "on_body", "on_message_complete", "send_400_response",
     "timeout_keep_alive_handler"],
)  # fmt: skip
def test_the_overridden_and_called_methods_exist(method: str) -> None:
    """Methods the guard overrides (and calls through super()) or calls itself."""
    assert callable(getattr(httptools_impl.HttpToolsProtocol, method, None)), method


def test_send_400_response_takes_the_message() -> None:
    parameters = list(
        inspect.signature(httptools_impl.HttpToolsProtocol.send_400_response).parameters
    )
    assert parameters == ["self", "msg"]


def test_status_line_maps_codes_to_bytes() -> None:
    """_refuse writes STATUS_LINE[status] for 400, 408, 413 and 431."""
    for status in (400, 408, 413, 431):
        line = httptools_impl.STATUS_LINE[status]
        assert isinstance(line, bytes) and line.startswith(b"HTTP/1.1 %d " % status)


async def test_connection_state_the_guard_reads() -> None:
    """After connection_made: the loop, the transport, a parser, flow control with
    read_paused, the keep-alive timeout and its task (the guard re-arms it for a silent
    connection)."""
    protocol, transport = await connected()
    assert protocol.transport.wrapped is transport  # type: ignore[attr-defined]
    assert isinstance(protocol.loop, asyncio.AbstractEventLoop)
    assert isinstance(protocol.parser, httptools.HttpRequestParser)
    assert protocol.flow.read_paused is False
    assert isinstance(protocol.timeout_keep_alive, int | float)
    assert isinstance(protocol.timeout_keep_alive_task, asyncio.TimerHandle)
    protocol.connection_lost(None)


async def test_request_state_the_guard_reads() -> None:
    """After a head is parsed: scope (path, method, extensions), the headers list of byte
    pairs, and the cycle with response_complete/response_started/disconnected/message_event."""
    protocol, transport = await connected()
    protocol.data_received(b"POST /onSessionOpen HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n")
    assert protocol.scope["path"] == "/onSessionOpen" and protocol.scope["method"] == "POST"
    assert (b"content-length", b"2") in protocol.headers
    cycle = protocol.cycle
    for attribute in ("response_complete", "response_started", "disconnected"):
        assert isinstance(getattr(cycle, attribute), bool), attribute
    assert isinstance(cycle.message_event, asyncio.Event)
    protocol.data_received(b"{}")
    for _ in range(5):
        await asyncio.sleep(0)
    assert transport.written.startswith(b"HTTP/1.1 200")
    protocol.connection_lost(None)


async def test_a_close_mid_request_lingers_and_an_idle_close_does_not() -> None:
    """app/server/connections.py _LingeringTransport: closed while the client is still sending
    (here, part of a head), the answer is followed by a FIN and what arrives is dropped until the
    client's EOF; closed between requests, the socket closes at once."""
    protocol, transport = await connected()
    protocol.data_received(b"POST /predicate HTTP/1.1\r\nhost:")  # a head, incomplete
    protocol.transport.close()
    assert transport.eof_written and not transport.closed
    assert protocol.transport.is_closing()
    draining = transport.protocol
    draining.data_received(b" more of the head")  # dropped, no parser error
    assert draining.eof_received() is None  # the transport then closes itself
    draining.connection_lost(None)

    protocol, transport = await connected()
    protocol.transport.close()
    assert transport.closed and not transport.eof_written
    protocol.connection_lost(None)
