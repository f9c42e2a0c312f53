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

The body's own deadline is the app's (``app/body.py``), where the request's verb is known.
Every refusal here closes the connection: after a broken or abandoned frame nothing that follows
on it can be trusted to start a request.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from typing import ClassVar

import msgspec
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

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


DIRECT_BODY = "caldera.direct_body"
"""The ASGI scope extension under which a request's :class:`DirectBody` is offered."""


class DirectBody:
    """A request body written by the protocol straight into one buffer of its declared length.

    uvicorn hands the app each socket read as its own message: the parser's bytes appended to a
    bytearray, copied again to ``bytes`` for the message, and reading paused after 64 KiB until
    the app asks for more; the app then copies each message into its buffer. For a 75 MiB
    snapshot that is four copies of the body and some 300 event-loop round trips. Here the
    parser's bytes are copied once, into place, as they arrive; the app's ``receive()`` returns
    once the whole body is in (or the client went away) and the app takes :attr:`buffer`
    (``app/body.py``). Memory is bounded as before: only a length within ``maxRequestBytes`` is
    preallocated, and the app's body deadline still runs while it waits."""

    __slots__ = ("_view", "buffer", "received")

    def __init__(self, length: int) -> None:
        self.buffer = bytearray(length)
        self._view = memoryview(self.buffer)
        self.received = 0

    def write(self, chunk: bytes) -> None:
        end = self.received + len(chunk)
        self._view[self.received : end] = chunk  # the parser frames the body: end <= length
        self.received = end

    @property
    def complete(self) -> bool:
        return self.received == len(self.buffer)


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing; the refusal is already recorded."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds above. Built per server by
    :func:`guarded_protocol`, which sets :attr:`limits`."""

    limits: ClassVar[ConnectionLimits]

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
        super().connection_made(transport)
        # A connection that never sends a byte is as idle as one between two requests.
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_received += len(data)
        super().data_received(data)
        if (
            self._reading_head
            and self._head_received > self.limits.max_head_bytes
            and not self.transport.is_closing()
        ):
            self._refuse(431, self._too_large())

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
        if length and length <= self.limits.max_body_bytes:
            # The task running the app is created but has not started: the scope it will see
            # is this dict.
            self._direct = DirectBody(length)
            extensions: dict[str, object] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
            extensions[DIRECT_BODY] = self._direct

    def on_body(self, body: bytes) -> None:
        direct = self._direct
        if direct is None:
            super().on_body(body)
        elif not self.cycle.response_complete:
            direct.write(body)

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


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class to hand to ``uvicorn.Config(http=...)`` for ``limits``."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
