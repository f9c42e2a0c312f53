"""Connections as Volcano's Go client uses them, and as a careless or hostile one might: a
thousand idle connections, a client sending its head or its body a byte a second, SIGTERM with a
request in flight. The bounds are CALDERA_KEEP_ALIVE_SECONDS, CALDERA_HEADER_TIMEOUT_SECONDS,
CALDERA_BODY_TIMEOUT_SECONDS and CALDERA_SHUTDOWN_SECONDS, shortened here so the test is quick."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.examples import CAPTURED, example_bytes
from tests.service.conftest import CalderaProcess, start_caldera
from tests.service.raw_http import address, connection_closed, post, read_response

IDLE_CONNECTIONS = 1000
KEEP_ALIVE = 3
HEAD_AND_BODY_TIMEOUT = 2
PREDICATE = example_bytes(CAPTURED, "predicate.request.json")


def open_files(process: CalderaProcess) -> int:
    return len(os.listdir(f"/proc/{process.process.pid}/fd"))


def allow_open_files(wanted: int) -> None:
    """The test and the server (which inherits the limit) each hold ``wanted`` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard limit on open files ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


async def served_promptly(server: CalderaProcess, bound: float = 2.0) -> float:
    started = time.monotonic()
    response = await server.client.post("/predicate", content=PREDICATE)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed < bound, f"a normal request took {elapsed:.2f} s"
    return elapsed


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
async def test_idle_and_trickling_clients_do_not_stop_others_and_are_bounded(
    tmp_path: Path,
) -> None:
    allow_open_files(IDLE_CONNECTIONS + 500)
    server = await start_caldera(
        None,
        tmp_path,
        {
            "CALDERA_KEEP_ALIVE_SECONDS": str(KEEP_ALIVE),
            "CALDERA_HEADER_TIMEOUT_SECONDS": str(HEAD_AND_BODY_TIMEOUT),
            "CALDERA_BODY_TIMEOUT_SECONDS": str(HEAD_AND_BODY_TIMEOUT),
        },
    )
    host, port = address(server.url)
    idle: list[asyncio.StreamWriter] = []
    idle_readers: list[asyncio.StreamReader] = []
    try:
        await served_promptly(server)
        baseline = open_files(server)
        for _ in range(IDLE_CONNECTIONS):
            reader, writer = await asyncio.open_connection(host, port)
            idle_readers.append(reader)
            idle.append(writer)

        # A head one byte a second, and a body one byte a second.
        head_reader, head_writer = await asyncio.open_connection(host, port)
        body_reader, body_writer = await asyncio.open_connection(host, port)
        head = post("/predicate", PREDICATE)
        body_writer.write(post("/predicate", b"", length=len(PREDICATE)))

        async def trickle(writer: asyncio.StreamWriter, data: bytes) -> None:
            for byte in data:
                if writer.is_closing():
                    return
                writer.write(bytes([byte]))
                try:
                    await writer.drain()
                except ConnectionError:
                    return
                await asyncio.sleep(1)

        trickling = [
            asyncio.create_task(trickle(head_writer, head)),
            asyncio.create_task(trickle(body_writer, PREDICATE)),
        ]
        await asyncio.sleep(0.5)
        assert open_files(server) >= baseline + IDLE_CONNECTIONS
        for _ in range(5):  # other clients are served while all of that is going on
            await served_promptly(server)

        # Each trickling client is answered 408 in JSON at its deadline, and closed.
        for reader in (head_reader, body_reader):
            response = await read_response(reader, HEAD_AND_BODY_TIMEOUT + 5)
            assert response.status == 408 and response.closes
            assert "not complete within" in response.json()["error"]
        for task in trickling:
            task.cancel()

        # Idle connections are closed after the keep-alive bound, never answered.
        closed = await asyncio.gather(
            *(connection_closed(reader, KEEP_ALIVE + 5) for reader in idle_readers)
        )
        assert all(closed)
        await asyncio.sleep(0.5)
        assert open_files(server) <= baseline + 5
        await served_promptly(server)
    finally:
        for writer in idle:
            writer.close()
        assert await server.stop() == 0


async def test_sigterm_finishes_the_request_in_flight_and_refuses_new_ones(
    tmp_path: Path,
) -> None:
    server = await start_caldera(None, tmp_path, {"CALDERA_SHUTDOWN_SECONDS": "10"})
    host, port = address(server.url)
    reader, writer = await asyncio.open_connection(host, port)
    half = len(PREDICATE) // 2
    writer.write(post("/predicate", PREDICATE[:half], length=len(PREDICATE)))
    await writer.drain()
    await asyncio.sleep(0.2)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    await asyncio.sleep(0.5)
    with pytest.raises(ConnectionRefusedError):  # no longer accepting
        socket.create_connection((host, port), timeout=1).close()
    assert server.process.poll() is None  # still finishing the request in flight
    writer.write(PREDICATE[half:])
    await writer.drain()
    response = await read_response(reader, 5)
    assert response.status == 200 and response.json() == {"status": "", "code": 0}
    assert response.closes  # no further request on this connection
    code = await asyncio.wait_for(asyncio.to_thread(server.process.wait), 10)
    writer.close()
    assert code == 0
    assert time.monotonic() - started < 5


async def test_sigterm_exits_0_within_shutdown_seconds_with_a_stuck_request(
    tmp_path: Path,
) -> None:
    shutdown = 1
    server = await start_caldera(
        None,
        tmp_path,
        {"CALDERA_SHUTDOWN_SECONDS": str(shutdown), "CALDERA_BODY_TIMEOUT_SECONDS": "60"},
    )
    _, writer = await asyncio.open_connection(*address(server.url))
    writer.write(post("/predicate", PREDICATE[:10], length=len(PREDICATE)))  # never finished
    await writer.drain()
    await asyncio.sleep(0.2)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = await asyncio.wait_for(asyncio.to_thread(server.process.wait), shutdown + 10)
    elapsed = time.monotonic() - started
    writer.close()
    assert code == 0
    assert elapsed < shutdown + 2, f"exited {elapsed:.1f} s after SIGTERM"


def _oversized_head(host: str, port: int, size: int) -> bytes:
    """A client that sends a head far over the bound in one go, then reads: the server refuses
    it (431) with most of it still unread in its socket."""
    with socket.create_connection((host, port), timeout=10) as sock:
        with contextlib.suppress(OSError):  # a reset, or the server stops reading
            sock.sendall(b"POST /predicate HTTP/1.1\r\nx-big: " + b"a" * size)
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                received += chunk
        return received


async def test_a_refused_client_reads_its_answer_whatever_it_still_sends(tmp_path: Path) -> None:
    """Closed with bytes of the client's unread, a socket sends a reset instead of its FIN, and
    the reset can overtake the answer: the client sees ConnectionResetError, never the 431.
    The connection lingers instead (app/server/connections.py, LINGER_SECONDS)."""
    server = await start_caldera(None, tmp_path)
    try:
        host, port = address(server.url)
        for _ in range(5):
            received = await asyncio.to_thread(_oversized_head, host, port, 8 << 20)
            assert received.startswith(b"HTTP/1.1 431 "), received[:200]
            assert b"CALDERA_MAX_HEADER_BYTES" in received
        await served_promptly(server)
    finally:
        assert await server.stop() == 0
