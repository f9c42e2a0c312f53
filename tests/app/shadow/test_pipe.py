"""app/shadow/pipe.py: a batch's bodies written by ``writev`` from their own buffers and read
back exactly, through a real pipe smaller than what goes through it."""

from __future__ import annotations

import os
import threading

import pytest

from app.shadow.pipe import IOV_MAX, read_exactly, write_all

CASES = [
    ("one body", [b"x" * 1000]),
    ("empty bodies among others", [b"", b"ab", b"", bytearray(b"cde"), b""]),
    ("more buffers than one writev takes", [bytes([i % 251]) * 3 for i in range(IOV_MAX * 2 + 7)]),
    (
        "bodies larger than the pipe, the writer waiting for the reader",
        [os.urandom(300_000), os.urandom(70_001)],
    ),
]


@pytest.mark.parametrize("bodies", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_the_bodies_arrive_whole_and_in_order(bodies: list[bytes]) -> None:
    reader, writer = os.pipe()
    try:
        got: list[bytearray] = []
        # The pipe holds 64 KiB: the writer blocks until this reads, as the shadow's process does.
        thread = threading.Thread(
            target=lambda: got.extend(read_exactly(reader, len(b)) for b in bodies), daemon=True
        )
        thread.start()
        write_all(writer, bodies)
        thread.join(10)
        assert not thread.is_alive()
        assert got == [bytearray(b) for b in bodies]
    finally:
        os.close(reader)
        os.close(writer)


def test_a_writer_gone_before_the_last_byte_is_an_end_of_file() -> None:
    reader, writer = os.pipe()
    os.write(writer, b"abc")
    os.close(writer)
    try:
        with pytest.raises(EOFError, match="3 of 5 bytes"):
            read_exactly(reader, 5)
    finally:
        os.close(reader)


def test_a_write_the_kernel_cuts_short_goes_on_where_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A blocking pipe takes a whole ``writev`` unless a signal cuts it short: then it returns
    what it wrote, and the rest must follow from there."""
    real_writev = os.writev

    def cut_short(fd: int, buffers: list[memoryview]) -> int:
        out = b"".join(bytes(b) for b in buffers)[:1001]  # an odd size: buffers cut midway
        return real_writev(fd, [out])

    monkeypatch.setattr("app.shadow.pipe.os.writev", cut_short)
    bodies = [os.urandom(2500), b"", os.urandom(3), os.urandom(4000)]
    reader, writer = os.pipe()
    try:
        write_all(writer, bodies)  # 6.5 KB: the pipe holds it all
        os.close(writer)  # a byte missing is an end of file, not a wait
        assert [read_exactly(reader, len(b)) for b in bodies] == [bytearray(b) for b in bodies]
        assert os.read(reader, 1) == b""  # and no byte too many
    finally:
        os.close(reader)


@pytest.mark.parametrize(
    ("said", "taken"), [(1024, 1024), (-1, 16)], ids=["Linux", "no limit known"]
)
def test_writev_takes_what_the_system_says_or_posix_least(
    monkeypatch: pytest.MonkeyPatch, said: int, taken: int
) -> None:
    """``sysconf`` answers -1 where no limit is known: slicing by it would send no buffer at
    all and ``write_all`` would never end."""
    from app.shadow import pipe as shadow_pipe

    monkeypatch.setattr("app.shadow.pipe.os.sysconf", lambda name: said)
    assert shadow_pipe._iov_max() == taken
