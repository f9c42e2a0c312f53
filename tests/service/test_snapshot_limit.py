"""The session snapshot's own limit over a real server: a cluster's snapshot above 10 MiB is
taken on the embedded default configuration, every other verb keeps the 10 MiB bound, and a
snapshot that is not taken (too large, abandoned mid-body) shows in /readyz and in the log."""

from __future__ import annotations

import asyncio
import json
from functools import cache

from bench import workloads
from tests.examples import example_bytes
from tests.service.conftest import StartCaldera

MIB = 1 << 20


@cache
def cluster_snapshot() -> bytes:
    """A Volcano-shaped onSessionOpen of 30 nodes and 400 pods (bench/workloads.py): ~16 MiB,
    over the 10 MiB that bounded every body before onSessionOpen had a limit of its own."""
    body = workloads.session_open_body(workloads.make_cluster(30, 400))
    assert len(body) > 10 * MIB
    return body


def error_lines(log: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("level") == "error"]


async def test_the_default_configuration_takes_a_snapshot_over_10_mib(
    caldera_server: StartCaldera,
) -> None:
    server = await caldera_server(None)
    snapshot = cluster_snapshot()
    answer = await server.client.post("/onSessionOpen", content=snapshot)
    assert answer.status_code == 200, answer.text
    ready = await server.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["snapshot"]["status"] == "taken"
    assert ready.json()["snapshot"]["bytes"] == len(snapshot)
    session = (await server.client.get("/debug/session")).json()
    assert session["open"] is True


async def test_other_verbs_keep_max_request_bytes(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    large = b'{"job": {"UID": "j", "Name": "' + b"x" * (11 * MIB) + b'"}}'
    answer = await server.client.post("/jobEnqueueable", content=large)
    assert answer.status_code == 413
    assert answer.json()["limit"] == 10 * MIB
    assert "maxRequestBytes" in answer.json()["error"]
    # A refused call about one job says nothing about the session: still ready.
    assert (await server.client.get("/readyz")).status_code == 200


async def test_a_refused_snapshot_is_not_ready_and_logged_until_one_is_taken(
    caldera_server: StartCaldera,
) -> None:
    server = await caldera_server("maxSnapshotBytes: 1048576\n")
    snapshot = cluster_snapshot()
    for cycle in (1, 2):
        answer = await server.client.post("/onSessionOpen", content=snapshot)
        assert answer.status_code == 413
        assert answer.json()["limit"] == MIB
        assert "exceeds maxSnapshotBytes = 1048576 bytes" in answer.json()["error"]
        ready = await server.client.get("/readyz")
        assert ready.status_code == 503
        described = ready.json()["snapshot"]
        assert described["status"] == "refused"
        assert described["bytes"] == len(snapshot)
        assert described["limit"] == MIB and described["setting"] == "maxSnapshotBytes"
        assert described["missedInARow"] == cycle
        assert "without any of Caldera's plugins" in described["consequence"]
        assert "caldera_snapshot_taken 0.0" in (await server.client.get("/metrics")).text
    errors = error_lines(server.log())
    assert len(errors) == 2, server.log()
    message = str(errors[-1]["message"])
    assert f"the snapshot is {len(snapshot)} bytes, maxSnapshotBytes is 1048576" in message
    assert f"Raise maxSnapshotBytes to at least {len(snapshot)}" in message
    assert "(2 in a row)" in message

    small = example_bytes("head", "onSessionOpen.request.json")
    assert (await server.client.post("/onSessionOpen", content=small)).status_code == 200
    ready = await server.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["snapshot"] == {
        "status": "taken",
        "at": ready.json()["snapshot"]["at"],
        "bytes": len(small),
    }
    metrics = (await server.client.get("/metrics")).text
    assert (
        'caldera_request_bodies_refused_total{reason="too_large",verb="onSessionOpen"} 2.0'
        in metrics
    )
    assert "caldera_snapshot_taken 1.0" in metrics


async def test_a_streamed_snapshot_over_the_limit_names_max_snapshot_bytes(
    caldera_server: StartCaldera,
) -> None:
    server = await caldera_server("maxSnapshotBytes: 1048576\n")

    async def chunks():  # no Content-Length: counted while streaming
        for _ in range(20):
            yield b"x" * (100 * 1024)

    answer = await server.client.post("/onSessionOpen", content=chunks())
    assert answer.status_code == 413
    assert "maxSnapshotBytes" in answer.json()["error"]
    described = (await server.client.get("/readyz")).json()["snapshot"]
    assert described["status"] == "refused" and "bytes" not in described


async def test_a_snapshot_abandoned_mid_body_is_not_ready(caldera_server: StartCaldera) -> None:
    """Volcano's httpTimeout running out mid-transfer: the connection closes under the body."""
    server = await caldera_server(None)
    host, port = server.url.removeprefix("http://").split(":")
    _reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /onSessionOpen HTTP/1.1\r\nHost: caldera\r\nContent-Type: application/json\r\n"
        b"Content-Length: 4000000\r\n\r\n" + b"{" + b" " * 100_000
    )
    await writer.drain()
    await asyncio.sleep(0.2)
    writer.close()
    await writer.wait_closed()
    for _ in range(50):
        ready = await server.client.get("/readyz")
        if ready.status_code == 503:
            break
        await asyncio.sleep(0.1)
    assert ready.status_code == 503
    assert ready.json()["snapshot"]["status"] == "abandoned"
    assert "closed the connection" in str(error_lines(server.log())[-1]["message"])
