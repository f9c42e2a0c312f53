"""read_body against a scripted ASGI receive: the declared-length buffer, the streamed limit,
and bodies that do not match their Content-Length."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.errors import BadLength, BodyTimeout, BodyTooLarge, Disconnected
from app.server.body import read_body


def scope(length: int | None) -> dict[str, Any]:
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    return {"type": "http", "headers": headers}


def receiver(*chunks: bytes, disconnect: bool = False) -> Any:
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    if disconnect:
        messages[-1]["more_body"] = True
        messages.append({"type": "http.disconnect"})

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


async def test_single_message_is_returned_without_copy() -> None:
    body = b'{"task": {}}'
    assert await read_body(scope(len(body)), receiver(body), 100) is body


async def test_chunks_fill_one_buffer() -> None:
    body = await read_body(scope(9), receiver(b"abc", b"def", b"ghi"), 100)
    assert isinstance(body, bytearray) and body == b"abcdefghi"


async def test_chunked_without_length_is_joined() -> None:
    assert await read_body(scope(None), receiver(b"ab", b"cd"), 100) == b"abcd"


async def test_declared_length_over_limit_is_refused_before_reading() -> None:
    async def receive() -> dict[str, Any]:
        raise AssertionError("the body must not be read")

    with pytest.raises(BodyTooLarge) as info:
        await read_body(scope(101), receive, 100)
    assert info.value.seen == 101 and "100 bytes" in str(info.value)


async def test_streamed_body_over_limit_stops_at_the_limit() -> None:
    with pytest.raises(BodyTooLarge) as info:
        await read_body(scope(None), receiver(b"x" * 60, b"x" * 60, b"x" * 60), 100)
    assert info.value.seen is None


@pytest.mark.parametrize(
    ("declared", "chunks"),
    [(5, (b"abc",)), (5, (b"abc", b"def")), (9, (b"abc", b"def"))],
    ids=["short single message", "longer than declared", "shorter than declared"],
)
async def test_length_mismatch_is_bad_request(declared: int, chunks: tuple[bytes, ...]) -> None:
    with pytest.raises(BadLength):
        await read_body(scope(declared), receiver(*chunks), 100)


async def test_non_numeric_length_is_bad_request() -> None:
    bad = {"type": "http", "headers": [(b"content-length", b"many")]}
    with pytest.raises(BadLength, match="not a number"):
        await read_body(bad, receiver(b""), 100)


@pytest.mark.parametrize("length", [None, 6])
async def test_client_gone_mid_body(length: int | None) -> None:
    with pytest.raises(Disconnected):
        await read_body(scope(length), receiver(b"abc", disconnect=True), 100)


@pytest.mark.parametrize("length", [None, 100])
async def test_body_that_stalls_is_refused_at_the_deadline(length: int | None) -> None:
    sent = [{"type": "http.request", "body": b"x" * 10, "more_body": True}]

    async def receive() -> dict[str, Any]:
        if sent:
            return sent.pop()
        await asyncio.Event().wait()  # the client went quiet, connection still open
        raise AssertionError("unreachable")

    with pytest.raises(BodyTimeout) as info:
        await read_body(scope(length), receive, 1000, timeout=0.05)
    assert info.value.status == 408 and info.value.closes_connection
    assert "10 bytes received" in str(info.value)


async def test_body_trickling_in_is_bounded_as_a_whole() -> None:
    """One byte every 10 ms never leaves the reader idle for long; the deadline still holds."""

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"type": "http.request", "body": b"x", "more_body": True}

    with pytest.raises(BodyTimeout):
        await read_body(scope(None), receive, 1000, timeout=0.1)
