"""app/server/buffers.py: the buffer of the last large body is reused only when nothing else holds
it and its allocation fits the next body."""

from __future__ import annotations

import queue
from collections.abc import Callable

import msgspec
import pytest

from app.server.buffers import BodyBuffers

LARGE = 4096
FIRST = LARGE * 4


def received(buffers: BodyBuffers, length: int, fill: int) -> bytearray:
    """A body of ``length`` bytes written into the buffer the server would use."""
    buffer = buffers.get(length)
    assert len(buffer) == length
    buffer[:] = bytes([fill]) * length
    return buffer


def test_a_body_below_the_threshold_never_uses_the_kept_buffer() -> None:
    buffers = BodyBuffers(large=LARGE)
    for fill in range(3):
        received(buffers, LARGE - 1, fill)
    assert buffers.reused == 0


# name, the next body's length after a FIRST-byte body, whether the kept buffer serves it
SIZES = [
    ("same size", FIRST, True),
    ("a little smaller", FIRST - 100, True),
    ("half", FIRST // 2, True),
    ("an eighth larger", FIRST + FIRST // 8, True),
    ("less than half", FIRST // 2 - 1, False),
    ("more than an eighth larger", FIRST + FIRST // 4, False),
]


@pytest.mark.parametrize(("name", "length", "reused"), SIZES, ids=[s[0] for s in SIZES])
def test_the_kept_buffer_serves_a_body_whose_size_keeps_its_allocation(
    name: str, length: int, reused: bool
) -> None:
    buffers = BodyBuffers(large=LARGE)
    first = received(buffers, FIRST, 1)
    del first
    second = received(buffers, length, 2)
    assert buffers.reused == int(reused)
    assert bytes(second) == bytes([2]) * length
    del second
    # Whichever served it is kept now, and serves the next body of its size.
    received(buffers, length, 3)
    assert buffers.reused == int(reused) + 1


def _plain(buffer: bytearray) -> Callable[[], bytes]:
    return lambda: bytes(buffer[:64])


def _view(buffer: bytearray) -> Callable[[], bytes]:
    view = memoryview(buffer)[100:164]
    return lambda: bytes(view)


def _raw(buffer: bytearray) -> Callable[[], bytes]:
    buffer[:20] = b'{"a": [1, 2, 3, 4]} '
    decoded = msgspec.json.decode(memoryview(buffer)[:19], type=dict[str, msgspec.Raw])
    return lambda: bytes(decoded["a"])


def _queued(buffer: bytearray) -> Callable[[], bytes]:
    pending: queue.Queue[bytearray] = queue.Queue()  # as serve --record's writer thread's
    pending.put(buffer)
    return lambda: bytes(pending.queue[0][:64])


HOLDERS = [
    ("the request still being answered", _plain),
    ("a memoryview of the body", _view),
    ("a msgspec.Raw decoded from the body", _raw),
    ("the recorder's queue", _queued),
]


@pytest.mark.parametrize(("name", "hold"), HOLDERS, ids=[h[0] for h in HOLDERS])
def test_a_body_something_still_holds_is_never_overwritten(
    name: str, hold: Callable[[bytearray], Callable[[], bytes]]
) -> None:
    buffers = BodyBuffers(large=LARGE)
    first = received(buffers, FIRST, 1)
    read = hold(first)
    seen = read()
    del first
    for fill in (2, 3):
        received(buffers, FIRST, fill)
    assert buffers.reused == 0 and read() == seen
    # Once the holder lets go, the kept buffer serves the next body again.
    del read
    received(buffers, FIRST, 4)
    assert buffers.reused == 1


def test_the_kept_size_and_each_outcome_are_reported_after_every_large_body() -> None:
    sizes: list[int] = []
    outcomes: list[str] = []
    buffers = BodyBuffers(large=LARGE, kept=sizes.append, outcome=outcomes.append)
    received(buffers, LARGE - 1, 0)  # small: nothing kept, nothing reported
    received(buffers, FIRST, 1)
    received(buffers, FIRST - 10, 2)  # reused, resized
    received(buffers, FIRST - 10, 3)  # reused as it is
    held = received(buffers, FIRST // 4, 4)  # less than half: replaced
    received(buffers, FIRST // 4, 5)  # the kept one is held: a fresh one, the kept size stays
    assert sizes == [FIRST, FIRST - 10, FIRST - 10, FIRST // 4]
    assert outcomes == ["first", "reused", "reused", "refit", "held"]
    assert len(held) == FIRST // 4
