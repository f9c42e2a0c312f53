"""The real server over TCP: every verb, body limits, metrics, clean shutdown on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import socket

import pytest

from tests.examples import CAPTURED, example_bytes, example_json
from tests.service.conftest import StartCaldera, start_caldera

HEAD = "head"

# Captured from Volcano 1.15 where it sends the verb; jobEnqueued is newer (hand-built).
VERB_EXAMPLES = [
    ("onSessionOpen", (CAPTURED, "onSessionOpen.request.json"), {}),
    ("predicate", (CAPTURED, "predicate.request.json"), {"status": "", "code": 0}),
    ("prioritize", (CAPTURED, "prioritize.request.json"), {"nodeScore": {}, "errorMessage": ""}),
    ("preemptable", (CAPTURED, "preemptable.request.json"), {"status": 0, "victims": []}),
    ("reclaimable", (CAPTURED, "reclaimable.request.json"), {"status": 0, "victims": []}),
    ("jobEnqueueable", (CAPTURED, "jobEnqueueable.request.json"), {"status": 0}),
    ("jobEnqueued", (HEAD, "jobEnqueued.request.json"), {}),
    ("queueOverused", (CAPTURED, "queueOverused.request.json"), {"overused": False}),
    ("jobReady", (CAPTURED, "jobReady.request.json"), {"status": True}),
    ("allocate", (CAPTURED, "allocateFunc.request.json"), {"errorMessage": ""}),
    ("deallocate", (CAPTURED, "deallocateFunc.request.json"), {"errorMessage": ""}),
    ("onSessionClose", (CAPTURED, "onSessionClose.request.json"), {}),
]


async def test_every_verb_answers_with_no_plugins(caldera_server: StartCaldera) -> None:
    server = await caldera_server("volcanoVersion: '1.16'\ntiers: []\n")
    for verb, example, expected in VERB_EXAMPLES:
        response = await server.client.post(
            f"/{verb}",
            content=example_bytes(*example),
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 200, (verb, response.text)
        assert response.headers["content-type"] == "application/json"
        assert response.json() == expected, verb


async def test_embedded_default_configuration_serves(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    ready = await server.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


async def test_body_over_limit_refused_from_content_length(caldera_server: StartCaldera) -> None:
    server = await caldera_server("maxRequestBytes: 1000\n")
    response = await server.client.post("/predicate", content=b"x" * 5000)
    assert response.status_code == 413
    body = response.json()
    assert body["limit"] == 1000 and body["verb"] == "predicate"
    assert "1000 bytes" in body["error"]


async def test_body_over_limit_refused_while_streaming(caldera_server: StartCaldera) -> None:
    server = await caldera_server("maxRequestBytes: 1000\n")

    async def chunks():  # no Content-Length: chunked transfer encoding
        for _ in range(50):
            yield b"x" * 100

    response = await server.client.post("/predicate", content=chunks())
    assert response.status_code == 413
    assert response.json()["limit"] == 1000
    metrics = (await server.client.get("/metrics")).text
    assert (
        'caldera_request_bodies_refused_total{reason="too_large",verb="predicate"} 1.0' in metrics
    )


async def test_body_under_limit_chunked_is_read(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    body = example_bytes(HEAD, "predicate.request.json")

    async def chunks():
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = await server.client.post("/predicate", content=chunks())
    assert response.status_code == 200
    assert response.json() == {"status": "", "code": 0}


async def test_bad_input_gets_4xx_with_json(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    malformed = await server.client.post("/predicate", content=b'{"task": ')
    assert malformed.status_code == 400
    assert malformed.json()["verb"] == "predicate"
    wrong_type = await server.client.post("/jobReady", content=b'{"job": []}')
    assert wrong_type.status_code == 400
    assert "job" in wrong_type.json()["error"]
    missing = await server.client.post("/queueOverused", content=b"{}")
    assert missing.status_code == 400
    assert "queue" in missing.json()["error"]
    assert (await server.client.get("/nothing-here")).status_code == 404
    assert (await server.client.get("/predicate")).status_code == 405
    assert (await server.client.get("/predicate")).json()["error"].startswith("method not")


async def test_metrics_after_traffic(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    await server.client.post(
        "/onSessionOpen", content=example_bytes(HEAD, "onSessionOpen.request.json")
    )
    for _ in range(3):
        await server.client.post(
            "/predicate", content=example_bytes(HEAD, "predicate.request.json")
        )
    text = (await server.client.get("/metrics")).text
    assert 'caldera_responses_total{code="200",verb="predicate"} 3.0' in text
    assert 'caldera_request_duration_seconds_count{verb="predicate"} 3.0' in text
    assert 'caldera_request_duration_seconds_bucket{le="0.0001",verb="predicate"}' in text
    assert 'caldera_request_duration_seconds_bucket{le="2.0",verb="predicate"}' in text
    assert 'caldera_snapshot_objects{kind="nodes"} 2.0' in text
    assert 'caldera_snapshot_objects{kind="jobs"} 1.0' in text
    assert "caldera_request_body_bytes_sum" in text
    assert "caldera_session_age_seconds" in text


async def test_the_buffer_kept_for_large_bodies_is_a_metric(caldera_server: StartCaldera) -> None:
    """A body of 32 MiB or more leaves its buffer for the next one (app/server/buffers.py); the
    gauge says how much RSS that keeps between cycles, the counter whether reuse goes on."""
    server = await caldera_server("maxRequestBytes: 67108864\n")
    text = (await server.client.get("/metrics")).text
    assert "caldera_body_buffer_bytes 0.0" in text
    large = b'{"job": {"UID": "j", "Name": "' + b"x" * (33 << 20) + b'"}}'
    for _ in range(2):
        answer = await server.client.post("/jobReady", content=large)
        assert answer.status_code == 200 and answer.json() == {"status": True}
    text = (await server.client.get("/metrics")).text
    (value,) = [
        line.split()[1]
        for line in text.splitlines()
        if line.startswith("caldera_body_buffer_bytes ")
    ]
    assert float(value) == len(large)
    assert 'caldera_body_buffers_total{outcome="first"} 1.0' in text
    assert 'caldera_body_buffers_total{outcome="reused"} 1.0' in text
    assert 'caldera_body_buffers_total{outcome="held"} 0.0' in text


async def test_debug_session_shows_counts_never_contents(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    closed = (await server.client.get("/debug/session")).json()
    assert closed["open"] is False
    await server.client.post(
        "/onSessionOpen", content=example_bytes(HEAD, "onSessionOpen.request.json")
    )
    response = await server.client.get("/debug/session")
    info = response.json()
    assert info["open"] is True
    assert info["snapshot"] == {"jobs": 1, "nodes": 2, "queues": 1, "namespaces": 1, "tasks": 2}
    snapshot = example_json(HEAD, "onSessionOpen.request.json")
    job = next(iter(snapshot["Jobs"].values()))
    for task in job["Tasks"].values():
        for secret in (task["Pod"]["metadata"].get("annotations") or {}).values():
            assert secret not in response.text


async def test_request_id_is_echoed_and_logged(caldera_server: StartCaldera) -> None:
    server = await caldera_server(None)
    response = await server.client.post(
        "/predicate", content=b"{", headers={"X-Request-Id": "req-abc-123"}
    )
    assert response.headers["x-request-id"] == "req-abc-123"
    await asyncio.sleep(0.2)
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    assert any(entry.get("request_id") == "req-abc-123" for entry in lines)


async def test_bad_configuration_stops_startup_with_exit_2(tmp_path) -> None:
    with pytest.raises(RuntimeError, match="exited with 2"):
        await start_caldera("tiers: [{plugins: [{name: no-such-plugin}]}]\n", tmp_path)
    logs = list(tmp_path.glob("caldera-*.log"))
    text = logs[0].read_text()
    assert "tiers[0].plugins[0].name" in text and "no-such-plugin" in text


async def test_clean_shutdown_on_sigterm(tmp_path) -> None:
    server = await start_caldera(None, tmp_path)
    # a keep-alive connection is open while the signal arrives
    await server.client.get("/healthz")
    server.process.send_signal(signal.SIGTERM)
    code = await asyncio.wait_for(asyncio.to_thread(server.process.wait), 15)
    await server.client.aclose()
    assert code == 0
    assert "Shutting down" in server.log() or "shutdown" in server.log().lower()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=1)


async def test_idle_keep_alive_connection_is_reused_like_go_does(
    caldera_server: StartCaldera,
) -> None:
    # Volcano's Go client keeps idle connections 90 s and never retries a POST on one the
    # server closed. uvicorn's own default closes them after 5 s; Caldera keeps them 120 s.
    server = await caldera_server(None)
    host, port = server.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    request = (
        f"POST /onSessionClose HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Content-Length: 2\r\n\r\n{}"
    ).encode()
    try:
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 5)
            assert status.startswith(b"HTTP/1.1 200"), status
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            assert await reader.readexactly(2) == b"{}"
            await asyncio.sleep(6)  # idle past uvicorn's 5 s default
    finally:
        writer.close()
