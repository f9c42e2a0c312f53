"""The protocol writes a POST body of declared length straight into one buffer
(``app.connections.DirectBody``) and ``app.body.read_body`` takes it; every other request is read
from uvicorn's messages as before. Driven here through the guarded protocol with a fake
transport, the bytes fed in pieces as a socket would deliver them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from app.body import read_body
from app.connections import DIRECT_BODY, ConnectionLimits, DirectBody, guarded_protocol
from app.errors import CalderaError, Disconnected

LIMIT = 1 << 20


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class Recorder:
    """The app: reads the body under LIMIT and remembers what it got."""

    def __init__(self) -> None:
        self.body: bytes | bytearray | None = None
        self.refusal: CalderaError | None = None
        self.disconnected = False
        self.direct: DirectBody | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.direct = scope.get("extensions", {}).get(DIRECT_BODY)
        try:
            self.body = await read_body(scope, receive, LIMIT, timeout=2.0)
        except CalderaError as exc:
            self.refusal = exc
        except Disconnected:
            self.disconnected = True
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def serve(head: bytes, pieces: list[bytes]) -> Recorder:
    app = Recorder()
    config = Config(app=app, http=guarded_protocol(ConnectionLimits(5.0, 65536, LIMIT)))
    config.load()
    protocol = config.http_protocol_class(  # type: ignore[call-arg]
        config=config, server_state=ServerState(), app_state={}
    )
    transport = Transport()
    protocol.connection_made(transport)
    protocol.data_received(head)
    for piece in pieces:
        await asyncio.sleep(0)  # the app may run between two socket reads
        protocol.data_received(piece)
    for _ in range(20):
        await asyncio.sleep(0)
    protocol.connection_lost(None)
    for _ in range(5):
        await asyncio.sleep(0)
    return app


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
        assert app.direct is not None and app.body is app.direct.buffer


async def test_body_cut_short_by_the_client_is_a_disconnect_not_a_buffer() -> None:
    app = await serve(post(f"content-length: {len(BODY)}\r\n"), [BODY[:1000]])
    assert app.direct is not None and app.direct.received == 1000
    assert app.disconnected and app.body is None and app.refusal is None
