"""HTTP/1.1 connection guards: bounds uvicorn's httptools protocol does not set by itself.

uvicorn bounds how long a connection may sit idle *between* requests (``timeout_keep_alive``),
but not a connection that never sends a request, nor how long or how large a request head may
grow: a client sending one header byte a second, or a megabyte of headers, would hold its
connection and buffer for ever. :class:`GuardedHttpToolsProtocol` adds, per connection:

- an idle bound from the moment the connection opens (the keep-alive bound, as between
  requests);
- a deadline for the request head, from its first byte to the end of its headers
  (``header_seconds``): 408 and close when it passes;
- a size bound on the request head (``max_head_bytes``): 431 and close, checked while it
  arrives, so the buffer never grows far past it;
- JSON instead of uvicorn's plain-text page for a request the parser cannot read (a bad chunk
  size, a body longer than its Content-Length that runs into the next request line): 400 and
  close, as uvicorn does.

The body's own deadline is the app's (``app/server/body.py``), where the request's verb is known.
Every refusal here closes the connection: after a broken or abandoned frame nothing that follows
on it can be trusted to start a request.

A connection closed while its client is still sending a request (a 408 at a deadline, a 431, a
400, an answer before the body's end) closes lingering (:class:`_LingeringTransport`): the
answer is followed by a FIN, what the client still sends is read and dropped until it closes
too or :data:`LINGER_SECONDS` pass, and only then is the socket closed. Closed at once, the
kernel answers the client's next byte with a reset, and a reset makes the client's kernel
drop the answer it had not read yet: the client never learns why (seen in
tests/service/test_connections.py under load).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.server.buffers import BodyBuffers
from schemas.responses import ErrorResponse

logger = logging.getLogger("caldera.connections")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_seconds: float
    """From a request's first byte to the end of its headers."""
    max_head_bytes: int
    """Request line plus headers."""
    max_body_bytes: int = 0
    """``maxRequestBytes``: a POST declaring a ``Content-Length`` up to this is read straight
    into one buffer of that size (:class:`DirectBody`); 0 turns that off."""
    body_bytes_by_path: Mapping[str, int] = field(default_factory=dict)
    """The paths whose bodies have a limit of their own: onSessionOpen's ``maxSnapshotBytes``.
    A body is preallocated only within its own path's limit, so a snapshot-sized body posted
    to another verb is refused by the app before it is received."""

    def body_limit(self, path: str) -> int:
        return self.body_bytes_by_path.get(path, self.max_body_bytes)


DIRECT_BODY = "caldera.direct_body"

LINGER_SECONDS = 2.0
"""How long a connection closed mid-request keeps reading (and dropping) what its client still
sends after the answer, unless the client closes first."""
"""The ASGI scope extension under which a request's :class:`DirectBody` is offered."""


class DirectBody:
    """A request body received straight into one buffer of its declared length.

    uvicorn hands the app each socket read as its own message: the transport's read copied to
    ``bytes``, the parser's span copied again for ``on_body``, appended to a bytearray, copied
    once more for the message, and reading paused after 64 KiB until the app asks for more; the
    app then copies each message into its buffer. For a 75 MiB snapshot that is five copies of
    the body and some 300 event-loop round trips. Here the bytes that come with the head are
    copied once, into place, and the rest is received by the transport directly into the
    buffer (:class:`_DirectBodyReader`): no copy, no parser pass, as many bytes per read as the
    socket holds. The app's ``receive()`` returns once the whole body is in (or the client went
    away) and the app takes the buffer (:meth:`take`, ``app/server/body.py``). Memory is bounded as
    before: only a length within ``maxRequestBytes`` is preallocated, and the app's body
    deadline still runs while it waits. A body of 32 MiB or more is received into the buffer
    the last one left, when nothing holds that any more (``app/server/buffers.py``)."""

    __slots__ = ("_view", "buffer", "received")

    def __init__(self, length: int, buffers: BodyBuffers) -> None:
        self.buffer = buffers.get(length)
        self._view = memoryview(self.buffer)
        self.received = 0

    def take(self) -> bytearray:
        """The complete body, handed over: this object lets go of it, so that once the request
        is answered nothing holds the buffer and the next large body may reuse it
        (``app/server/buffers.py``)."""
        buffer = self.buffer
        self._view.release()
        del self.buffer, self._view
        return buffer

    def write(self, chunk: bytes) -> int:
        """Copy what fits of ``chunk`` into place; returns how many bytes were taken."""
        taken = min(len(chunk), len(self.buffer) - self.received)
        end = self.received + taken
        self._view[self.received : end] = chunk if taken == len(chunk) else chunk[:taken]
        self.received = end
        return taken

    def remaining(self) -> memoryview:
        """Where the next bytes of the body go: never empty while the body is incomplete."""
        return self._view[self.received :]

    @property
    def complete(self) -> bool:
        return self.received == len(self.buffer)


class _DirectBodyReader(asyncio.BufferedProtocol):
    """Stands in for a connection's protocol while the rest of a declared-length body arrives.

    The transport receives into :meth:`DirectBody.remaining`, sized to the body, so it can never
    read into the next request; when the body is complete the connection's own protocol is put
    back (:meth:`GuardedHttpToolsProtocol._end_direct_read`) and the reader lets go of the body
    (uvloop keeps the last buffered protocol's methods after the swap, and with them the reader:
    holding on would keep a 75 MiB body alive into the next request). A transport that delivers
    through ``data_received`` instead (it decides per read, and may finish a read already
    started under the previous protocol) is served too: what belongs to the body is copied into
    place and the rest handed back with the connection. Everything else a transport may call is
    the connection's business and forwarded to it."""

    __slots__ = ("_direct", "_owner")

    def __init__(self, owner: GuardedHttpToolsProtocol, direct: DirectBody) -> None:
        self._owner = owner
        self._direct: DirectBody | None = direct

    def get_buffer(self, sizehint: int) -> memoryview:
        assert self._direct is not None, "the transport asked a finished reader for a buffer"
        return self._direct.remaining()

    def buffer_updated(self, nbytes: int) -> None:
        direct = self._direct
        assert direct is not None, "the transport wrote into a finished reader's buffer"
        direct.received += nbytes
        if direct.complete:
            self._direct = None
            self._owner._end_direct_read()

    def data_received(self, data: bytes) -> None:
        direct = self._direct
        if direct is None:  # a read the transport began before the swap back
            self._owner.data_received(data)
            return
        taken = direct.write(data)
        if direct.complete:
            self._direct = None
            self._owner._end_direct_read()
            if taken < len(data):
                self._owner.data_received(data[taken:])

    def eof_received(self) -> bool | None:
        return self._owner.eof_received()  # type: ignore[func-returns-value]

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._owner.pause_writing()

    def resume_writing(self) -> None:
        self._owner.resume_writing()


class _Draining(asyncio.Protocol):
    """A lingering connection's protocol: drops what arrives, closes at the client's EOF, and
    hands the end of the connection to its own protocol."""

    def __init__(self, owner: GuardedHttpToolsProtocol, timer: asyncio.TimerHandle) -> None:
        self._owner = owner
        self._timer = timer

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._timer.cancel()
        self._owner.connection_lost(exc)


class _LingeringTransport:
    """The connection's transport as its protocol (and uvicorn's) sees it: every call passes
    through, but :meth:`close` while the client is still sending a request lingers (module
    docstring)."""

    def __init__(self, transport: asyncio.Transport, owner: GuardedHttpToolsProtocol) -> None:
        self._transport = transport
        self._owner = owner
        self._closing = False

    @property
    def wrapped(self) -> asyncio.Transport:
        """The event loop's transport underneath."""
        return self._transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        transport = self._transport
        if transport.is_closing() or not self._owner.client_still_sending():
            transport.close()
            return
        try:
            if not transport.can_write_eof():  # TLS: no half-close
                transport.close()
                return
            transport.write_eof()  # after what is buffered: the answer, then FIN
            timer = self._owner.loop.call_later(LINGER_SECONDS, transport.close)
            transport.set_protocol(_Draining(self._owner, timer))
            transport.resume_reading()
        except (OSError, RuntimeError):
            transport.close()


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing; the refusal is already recorded."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds above. Built per server by
    :func:`guarded_protocol`, which sets :attr:`limits`."""

    limits: ClassVar[ConnectionLimits]
    buffers: ClassVar[BodyBuffers]
    """The server's kept buffer for large bodies, shared by its connections."""

    _head_timer: asyncio.TimerHandle | None = None
    _refusal: tuple[int, str] | None = None
    _reading_head = True
    _head_received = 0
    """Bytes received while a head was incomplete: bounds what the parser buffers."""
    _head_parsed = 0
    """Request line and header bytes the parser has handed over for the current request."""
    _direct: DirectBody | None = None
    """The current request's body buffer, when it is read straight into one."""

    # --- connection lifetime -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(cast(asyncio.Transport, _LingeringTransport(transport, self)))
        # A connection that never sends a byte is as idle as one between two requests.
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def client_still_sending(self) -> bool:
        """Whether the client is in the middle of a request: part of a head, or a body not yet
        complete (closing now could reset the connection under the answer)."""
        return not self._reading_head or self._head_received > 0

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_received += len(data)
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._reading_head:
            if self._head_received > self.limits.max_head_bytes:
                self._refuse(431, self._too_large())
        elif self._direct is not None and not self._direct.complete and not self.flow.read_paused:
            self._begin_direct_read(self._direct)

    # --- a declared-length body, received straight into its buffer ---------------------------

    def _begin_direct_read(self, direct: DirectBody) -> None:
        """The head (and whatever of the body came with it) is parsed: the transport receives
        the rest into ``direct`` itself. Not while reading is paused (a pipelined request waits
        for the one before it), where the parser's ``on_body`` keeps copying into place."""
        self._swap_protocol(_DirectBodyReader(self, direct))

    def _end_direct_read(self) -> None:
        """The body is complete: the connection is this protocol's again, with a parser that
        expects the next request (the one that read the head still counts the body's bytes it
        never saw), and the request's message is complete."""
        self._swap_protocol(self)
        self.parser = self._new_parser()
        self.on_message_complete()

    def _swap_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        # Both loops take the new protocol's read path from the next read: asyncio's transports
        # look at every read, uvloop's set_protocol restarts reading with the path it picks. A
        # read already under way still ends in data_received, which the reader also serves.
        self.transport.set_protocol(protocol)

    def _new_parser(self) -> httptools.HttpRequestParser:
        parser = httptools.HttpRequestParser(self)
        with contextlib.suppress(AttributeError):  # httptools < 0.6.3; as uvicorn's __init__
            parser.set_dangerous_leniencies(lenient_data_after_close=True)
        return parser

    # --- parser callbacks --------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_parsed = 0
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.limits.header_seconds, self._head_too_slow)

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._cancel_head_timer()
        self._reading_head = False
        super().on_headers_complete()
        self._direct = None
        if not self.limits.max_body_bytes or self.scope.get("method") != "POST":
            return
        length = _declared_length(self.headers)
        if length and length <= self.limits.body_limit(self.scope["path"]):
            # The task running the app is created but has not started: the scope it will see
            # is this dict.
            self._direct = DirectBody(length, self.buffers)
            extensions: dict[str, object] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
            extensions[DIRECT_BODY] = self._direct

    def on_body(self, body: bytes) -> None:
        direct = self._direct
        if direct is None:
            super().on_body(body)
        elif not self.cycle.response_complete:
            direct.write(body)  # the parser frames the body: it all fits

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._direct = None
        self._reading_head = True
        self._head_received = 0

    # --- refusals ----------------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        """uvicorn calls this from the except block around the parser: the parser's own reason
        (or a refusal recorded by a callback) says more than its fixed message."""
        if self._refusal is not None:
            status, message = self._refusal
        else:
            cause = sys.exc_info()[1]
            status, message = 400, f"invalid HTTP request: {cause or msg}"
        self._refuse(status, message)

    def _count(self, size: int) -> None:
        self._head_parsed += size
        if self._head_parsed > self.limits.max_head_bytes:
            self._refusal = (431, self._too_large())
            raise _Refused

    def _too_large(self) -> str:
        return (
            f"request line and headers exceed {self.limits.max_head_bytes} bytes"
            " (CALDERA_MAX_HEADER_BYTES)"
        )

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self._refuse(
                408,
                f"request headers not complete within {self.limits.header_seconds:g} s"
                " (CALDERA_HEADER_TIMEOUT_SECONDS)",
            )

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with a JSON error and close: nothing after a broken head can be
        read as the start of a request."""
        self._cancel_head_timer()
        logger.info("refused a connection's request: %s", message)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started:
                # A response is on its way out: another one written now would interleave with
                # it, so the connection is just closed.
                self.transport.close()
                return
            # The request this frame broke (or the one before it) goes unanswered: its app
            # sees a disconnect, and whatever it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        body = msgspec.json.encode(ErrorResponse(error=message))
        self.transport.write(
            b"".join(
                [
                    STATUS_LINE[status],
                    b"content-type: application/json\r\n",
                    b"content-length: %d\r\n" % len(body),
                    b"connection: close\r\n\r\n",
                    body,
                ]
            )
        )
        self.transport.close()


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """One plain ``Content-Length`` and no ``Transfer-Encoding``; anything else (chunked, a
    repeated or malformed length) is left to the parser and the app to judge."""
    length = None
    for name, value in headers:
        if name == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif name == b"transfer-encoding":
            return None
    return length


def guarded_protocol(
    limits: ConnectionLimits, buffers: BodyBuffers | None = None
) -> type[GuardedHttpToolsProtocol]:
    """The protocol class to hand to ``uvicorn.Config(http=...)`` for ``limits``: one per server,
    with its own kept body buffer."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {"limits": limits, "buffers": buffers or BodyBuffers()},
    )
