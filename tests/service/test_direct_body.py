"""The protocol writes a POST body of declared length straight into one buffer
(``app.server.connections.DirectBody``): what comes with the head through the parser, the rest
received by the transport into the buffer itself while a stand-in protocol holds the connection; and
``app.server.body.read_body`` takes it. Every other request is read from uvicorn's messages as
before. Driven here through the guarded protocol with a transport that swaps protocols and picks its
read path as asyncio's and uvloop's do, the bytes fed in pieces as a socket would deliver them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from app.errors import CalderaError, Disconnected
from app.server.body import read_body
from app.server.buffers import BodyBuffers
from app.server.connections import (
    DIRECT_BODY,
    ConnectionLimits,
    DirectBody,
    _DirectBodyReader,
    guarded_protocol,
)

LIMIT = 1 << 20


class Transport(asyncio.Transport):
    """A socket's transport as uvloop's behaves: it delivers to whichever protocol is current,
    into a buffer of the protocol's (``get_buffer``/``buffer_updated``, at most ``read_size``
    bytes a read) when that protocol is a BufferedProtocol, and as ``bytes`` through
    ``data_received`` otherwise; the path is picked when reading starts, which set_protocol
    does again (asyncio's transports pick per read, which this cannot tell apart)."""

    def __init__(self, read_size: int = 1 << 16) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.protocol: asyncio.BaseProtocol | None = None
        self.buffered = False
        """The read path chosen when reading last started (uvloop picks it then)."""
        self.read_size = read_size
        self.buffered_reads = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol
        self.resume_reading()  # uvloop restarts reading on a new protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self.protocol is not None
        return self.protocol

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        protocol = self.protocol
        self.buffered = isinstance(protocol, asyncio.BufferedProtocol) and not isinstance(
            protocol, asyncio.Protocol
        )

    def deliver(self, data: bytes) -> None:
        """What arrived on the socket, read as the current read path reads."""
        view = memoryview(data)
        while view:
            protocol = self.protocol
            if self.buffered and isinstance(protocol, asyncio.BufferedProtocol):
                target = protocol.get_buffer(-1)
                n = min(len(target), len(view), self.read_size)
                assert n > 0, "get_buffer returned an empty buffer"
                target[:n] = view[:n]
                self.buffered_reads += 1
                protocol.buffer_updated(n)
                view = view[n:]
            else:
                protocol.data_received(bytes(view[: self.read_size]))  # type: ignore[union-attr]
                view = view[self.read_size :]


class Recorder:
    """The app: reads each body under LIMIT and remembers what it got (with ``copy``, a copy,
    so that it holds no buffer after the request)."""

    def __init__(self, copy: bool = False) -> None:
        self.copy = copy
        self.bodies: list[bytes | bytearray] = []
        self.refusal: CalderaError | None = None
        self.disconnected = False
        self.direct: DirectBody | None = None

    @property
    def body(self) -> bytes | bytearray | None:
        return self.bodies[-1] if self.bodies else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.direct = scope.get("extensions", {}).get(DIRECT_BODY)
        try:
            body = await read_body(scope, receive, LIMIT, timeout=2.0)
            self.bodies.append(bytes(body) if self.copy else body)
        except CalderaError as exc:
            self.refusal = exc
        except Disconnected:
            self.disconnected = True
            return
        headers = [(b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


DEFAULT_LIMITS = ConnectionLimits(5.0, 65536, LIMIT)


class Connection:
    def __init__(
        self,
        buffers: BodyBuffers | None = None,
        read_size: int = 1 << 16,
        limits: ConnectionLimits = DEFAULT_LIMITS,
    ) -> None:
        self.app = Recorder()
        config = Config(app=self.app, http=guarded_protocol(limits, buffers))
        config.load()
        self.protocol = config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=ServerState(), app_state={}
        )
        self.transport = Transport(read_size)
        self.transport.set_protocol(self.protocol)
        self.protocol.connection_made(self.transport)

    async def send(self, *pieces: bytes) -> None:
        for piece in pieces:
            await asyncio.sleep(0)  # the app may run between two socket reads
            self.transport.deliver(piece)
        for _ in range(20):
            await asyncio.sleep(0)

    async def drop(self) -> None:
        self.transport.get_protocol().connection_lost(None)
        for _ in range(5):
            await asyncio.sleep(0)


async def serve(head: bytes, pieces: list[bytes]) -> Recorder:
    connection = Connection()
    await connection.send(head, *pieces)
    await connection.drop()
    return connection.app


BODY = bytes(range(256)) * 64  # 16 KiB


def post(headers: str) -> bytes:
    return f"POST /predicate HTTP/1.1\r\nhost: x\r\n{headers}\r\n".encode()


def chunked(body: bytes) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(body[i : i + 5000]), body[i : i + 5000]) for i in range(0, len(body), 5000)] + [b"0\r\n\r\n"]  # fmt: skip


# name, request head, the pieces after it, whether the body is read straight into one buffer
CASES = [
    (
        "declared length, in pieces",
        post(f"content-length: {len(BODY)}\r\n"),
        [BODY[:100], BODY[100:9000], BODY[9000:]],
        True,
    ),
    (
        "declared length, with the head",
        post(f"content-length: {len(BODY)}\r\n") + BODY[:7],
        [BODY[7:]],
        True,
    ),
    ("chunked", post("transfer-encoding: chunked\r\n"), chunked(BODY), False),
    ("declared length above maxRequestBytes", post(f"content-length: {LIMIT + 1}\r\n"), [], False),
    ("no body", post("content-length: 0\r\n"), [], False),
]


@pytest.mark.parametrize(("name", "head", "pieces", "direct"), CASES, ids=[c[0] for c in CASES])
async def test_body_is_read_into_one_buffer_only_when_its_length_is_declared_and_allowed(
    name: str, head: bytes, pieces: list[bytes], direct: bool
) -> None:
    app = await serve(head, pieces)
    assert (app.direct is not None) == direct
    if name == "declared length above maxRequestBytes":
        assert app.refusal is not None and app.refusal.status == 413
        return
    assert app.refusal is None
    assert app.body == (b"" if name == "no body" else BODY)
    if direct:
        assert app.direct is not None and isinstance(app.body, bytearray)


@pytest.mark.parametrize(
    ("path", "direct"), [("/onSessionOpen", True), ("/predicate", False), ("/other", False)]
)
async def test_a_body_is_preallocated_only_within_its_own_paths_limit(
    path: str, direct: bool
) -> None:
    """maxSnapshotBytes lets the snapshot's path take more than maxRequestBytes; a body that
    large posted to any other verb is not received into a buffer of its size."""
    connection = Connection(limits=ConnectionLimits(5.0, 65536, 1000, {"/onSessionOpen": LIMIT}))
    head = f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(BODY)}\r\n\r\n"
    await connection.send(head.encode(), BODY)
    await connection.drop()
    assert (connection.app.direct is not None) == direct


async def test_body_cut_short_by_the_client_is_a_disconnect_not_a_buffer() -> None:
    app = await serve(post(f"content-length: {len(BODY)}\r\n"), [BODY[:1000]])
    assert app.direct is not None and app.direct.received == 1000
    assert app.disconnected and app.body is None and app.refusal is None


def request(body: bytes, path: str = "/predicate") -> bytes:
    return f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body


async def test_rest_of_the_body_is_received_into_the_buffer_and_the_connection_handed_back() -> (
    None
):
    connection = Connection(read_size=4096)
    first, second = BODY, bytes(reversed(BODY))
    await connection.send(request(first)[:500], request(first)[500:])
    assert connection.transport.buffered_reads == 4  # 16 KiB minus what came with the head
    assert connection.transport.get_protocol() is connection.protocol
    # The same connection reads its next request: the parser was replaced with one that
    # expects a request line, not the body's bytes it never saw.
    await connection.send(request(second))
    assert connection.app.bodies == [first, second]
    assert connection.app.refusal is None and not connection.transport.closed


async def test_a_transport_that_still_calls_data_received_gets_the_body_and_the_next_request() -> (
    None
):
    """A read already under way when the protocol was swapped comes as bytes: what belongs to
    the body goes into place and the pipelined request after it goes back to the connection."""
    connection = Connection(read_size=1 << 20)
    head = request(BODY)[:300]
    await connection.send(head)
    reader = connection.transport.get_protocol()
    assert reader is not connection.protocol
    connection.transport.buffered = False
    await connection.send(request(BODY)[300:] + request(b'{"next": 1}'))
    assert connection.app.bodies == [BODY, b'{"next": 1}']


async def test_client_gone_while_the_transport_fills_the_buffer_is_a_disconnect() -> None:
    connection = Connection(read_size=4096)
    await connection.send(request(BODY)[:9000])
    assert connection.transport.get_protocol() is not connection.protocol
    await connection.drop()
    assert connection.app.disconnected and connection.app.bodies == []


async def test_a_large_body_reuses_the_buffer_of_the_last_one_once_nothing_holds_it() -> None:
    buffers = BodyBuffers(large=1024)
    connection = Connection(buffers)
    await connection.send(request(BODY))
    kept = id(connection.app.bodies[0])
    await connection.send(request(BODY[:-100]))
    # The app still holds the first body (its list), so the second one got a fresh buffer.
    assert buffers.reused == 0 and id(connection.app.bodies[1]) != kept
    connection.app.bodies.clear()
    await connection.send(request(BODY[:-50]))
    assert buffers.reused == 1 and connection.app.bodies == [BODY[:-50]]
    held = memoryview(connection.app.bodies[0])[:10]
    connection.app.bodies.clear()
    await connection.send(request(BODY))
    assert buffers.reused == 1, "a view of the last body still existed: its buffer is not free"
    assert bytes(held) == BODY[:10]


LARGE_BODIES = (bytes(range(256)) * 3072, bytes(reversed(range(256))) * 3072)


async def _two_bodies_and_a_pipelined_one() -> tuple[list[bytes], list[bytes], int]:
    """A real server socket on the running loop: two 768 KiB bodies on one keep-alive
    connection, then a large body with a small request pipelined behind it in the same write."""
    app = Recorder(copy=True)
    buffers = BodyBuffers(large=256 << 10)
    config = Config(app=app, http=guarded_protocol(ConnectionLimits(5.0, 65536, 16 << 20), buffers))
    config.load()
    state = ServerState()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: config.http_protocol_class(config=config, server_state=state, app_state={}),  # type: ignore[call-arg]
        "127.0.0.1",
        0,
    )
    port = server.sockets[0].getsockname()[1]
    first, second = LARGE_BODIES
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[bytes] = []
    for body in (first, second):
        writer.write(request(body))
        answers.append(await reader.readuntil(b"\r\n\r\n"))
    writer.write(request(first[:-1]) + request(b'{"small": 1}'))
    for _ in range(2):
        answers.append(await reader.readuntil(b"\r\n\r\n"))
    writer.close()
    server.close()
    await server.wait_closed()
    return [bytes(b) for b in app.bodies], answers, buffers.reused


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_real_transport_receives_large_bodies_into_place_and_keeps_reading(
    loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio's selector transport and uvloop's both serve the stand-in reader: the bodies
    arrive whole, the connection reads the requests after them, the second large body reuses
    the first one's buffer (the app keeps copies, so nothing holds it)."""
    reads: list[int] = []
    received = _DirectBodyReader.buffer_updated

    def counted(self: _DirectBodyReader, nbytes: int) -> None:
        reads.append(nbytes)
        received(self, nbytes)

    monkeypatch.setattr(_DirectBodyReader, "buffer_updated", counted)
    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        bodies, answers, reused = uvloop.run(_two_bodies_and_a_pipelined_one())
    else:
        bodies, answers, reused = asyncio.run(_two_bodies_and_a_pipelined_one())
    first, second = LARGE_BODIES
    assert bodies == [first, second, first[:-1], b'{"small": 1}']
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers) and len(answers) == 4
    assert reused >= 1
    assert reads, "the bodies never reached the stand-in reader: only the parser's path ran"
