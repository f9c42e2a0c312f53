"""Faults in the session protocol, against the real server with test plugins
(tests/service/fault_server.py): verbs without a session, opens without closes and closes
without opens, an onSessionOpen that cannot be decoded or whose plugin fails, a new snapshot
arriving while 16 predicate calls are in flight, a plugin failing in one call, a Caldera bug.

What a failed onSessionOpen leaves: **no session**. Caldera drops the previous snapshot before
decoding the next (so memory holds one at a time), and that is also what Volcano needs: with
``extender.ignorable: false`` a failed onSessionOpen makes the extender inert for the cycle (no
verb is sent), and with ``ignorable: true`` Volcano goes on calling the verbs of a cycle whose
snapshot Caldera never saw. Answering those from the previous cycle's snapshot would be a
silently wrong answer about a cluster that has moved on; without a session the snapshot-bound
plugins abstain (or pass), as they do before the first onSessionOpen, and
``caldera_verbs_without_session_total`` counts every such call.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.examples import CAPTURED, example_json
from tests.service.conftest import CalderaProcess, start_caldera
from tests.service.fault_server import INTERNAL_ERROR_BODY
from tests.service.raw_http import exchange, post

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: test-snapshot-marker
  - name: test-fails
  - name: test-open-fails
"""


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[CalderaProcess]:
    process = await start_caldera(
        CONFIG,
        tmp_path,
        {"PYTHONPATH": str(ROOT)},
        [sys.executable, "-m", "tests.service.fault_server"],
    )
    yield process
    assert await process.stop() == 0


def compact(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def snapshot(extra_nodes: int = 0, extra_jobs: int = 0) -> dict[str, Any]:
    """The captured snapshot, with copies of its first node and job under new names."""
    body: dict[str, Any] = example_json(CAPTURED, "onSessionOpen.request.json")
    node_name, node = next(iter(body["Nodes"].items()))
    for i in range(extra_nodes):
        twin = copy.deepcopy(node)
        twin["Name"] = f"{node_name}-twin-{i}"
        body["Nodes"][twin["Name"]] = twin
    job_id, job = next(iter(body["Jobs"].items()))
    for i in range(extra_jobs):
        twin = copy.deepcopy(job)
        twin["UID"] = f"{job_id}-twin-{i}"
        body["Jobs"][twin["UID"]] = twin
    return body


def marker(body: dict[str, Any]) -> str:
    return f"nodes={len(body['Nodes'])} jobs={len(body['Jobs'])}"


PREDICATE = compact(example_json(CAPTURED, "predicate.request.json"))


async def predicate_status(client: httpx.AsyncClient) -> str:
    response = await client.post("/predicate", content=PREDICATE)
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


async def session(client: httpx.AsyncClient) -> dict[str, Any]:
    info: dict[str, Any] = (await client.get("/debug/session")).json()
    return info


async def sessionless_calls(client: httpx.AsyncClient, verb: str) -> float:
    text = (await client.get("/metrics")).text
    prefix = f'caldera_verbs_without_session_total{{verb="{verb}"}} '
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.removeprefix(prefix))
    return 0.0


async def test_verbs_before_any_session_are_answered_and_counted(server: CalderaProcess) -> None:
    client = server.client
    assert (await session(client))["open"] is False
    # the snapshot-bound marker is not built without a snapshot: the predicate passes
    assert await predicate_status(client) == ""
    assert await predicate_status(client) == ""
    assert await sessionless_calls(client, "predicate") == 2
    # a body that does not decode is a 400, not a sessionless answer (issue 34)
    for bad in (b"{", b'{"task": 1}', b"[]"):
        assert (await client.post("/predicate", content=bad)).status_code == 400
    assert await sessionless_calls(client, "predicate") == 2
    ready = await client.post("/jobReady", content=b'{"job": {"UID": "j"}}')
    assert ready.status_code == 200 and ready.json() == {"status": True}


async def test_a_close_without_an_open_is_harmless(server: CalderaProcess) -> None:
    client = server.client
    for _ in range(2):
        response = await client.post("/onSessionClose", content=b"{}")
        assert response.status_code == 200 and response.json() == {}
    assert (await session(client))["open"] is False
    opened = await client.post("/onSessionOpen", content=compact(snapshot()))
    assert opened.status_code == 200
    assert await predicate_status(client) == marker(snapshot())


async def test_a_second_open_without_a_close_replaces_the_first(server: CalderaProcess) -> None:
    client = server.client
    first, second = snapshot(), snapshot(extra_nodes=3, extra_jobs=2)
    assert (await client.post("/onSessionOpen", content=compact(first))).status_code == 200
    number = (await session(client))["session"]
    assert await predicate_status(client) == marker(first)
    assert (await client.post("/onSessionOpen", content=compact(second))).status_code == 200
    info = await session(client)
    assert info["session"] == number + 1
    assert info["snapshot"]["nodes"] == len(second["Nodes"])
    assert info["snapshot"]["jobs"] == len(second["Jobs"])
    assert await predicate_status(client) == marker(second)


@pytest.mark.parametrize(
    ("case", "status", "outcome"),
    [
        ("undecodable", 400, "refused"),
        ("truncated", 400, "refused"),
        ("cut short", 400, "refused"),
        ("plugin fails", 500, "failed"),
    ],
)
async def test_a_failed_open_leaves_no_session_not_half_of_one(
    server: CalderaProcess, case: str, status: int, outcome: str
) -> None:
    """After a snapshot taken, the next is answered ``{}`` before it is read
    (app/server/routes/verbs.py): one that then fails leaves no session and says so in /readyz. The
    one after a failure is answered after its build, so a failure that repeats is the JSON
    error Volcano logs. A body that is not one JSON object from end to end ("cut short") is
    refused at once."""
    client = server.client
    good = snapshot(extra_nodes=1)
    assert (await client.post("/onSessionOpen", content=compact(good))).status_code == 200
    assert await predicate_status(client) == marker(good)
    if case == "undecodable":
        bad = compact({**snapshot(), "Jobs": ["not", "a", "map"]})
    elif case == "truncated":
        bad = compact(snapshot(extra_nodes=2))[:-10] + b"}"
    elif case == "cut short":
        bad = compact(snapshot(extra_nodes=2))[:-10]
    else:
        poisoned = snapshot(extra_nodes=2)
        poisoned["Queues"]["poison"] = next(iter(poisoned["Queues"].values()))
        bad = compact(poisoned)
    answered_first = await client.post("/onSessionOpen", content=bad)
    if case == "cut short":
        assert answered_first.status_code == 400
    else:
        assert (answered_first.status_code, answered_first.json()) == (200, {})
    ready = await client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["snapshot"]["status"] == outcome
    assert ready.json()["snapshot"]["code"] == status
    if case == "plugin fails":
        assert "test-open-fails" in ready.json()["snapshot"]["error"]
    failed = await client.post("/onSessionOpen", content=bad)
    assert failed.status_code == status
    assert failed.headers["content-type"] == "application/json"
    assert failed.json()["verb"] == "onSessionOpen"
    if case == "plugin fails":
        assert failed.json()["plugin"] == "test-open-fails"
    # Neither the old snapshot nor a partial new one answers: verbs are sessionless.
    assert (await session(client))["open"] is False
    before = await sessionless_calls(client, "predicate")
    assert await predicate_status(client) == ""
    assert await sessionless_calls(client, "predicate") == before + 1
    # The next good onSessionOpen is served whole.
    assert (await client.post("/onSessionOpen", content=compact(good))).status_code == 200
    assert await predicate_status(client) == marker(good)
    assert (await client.get("/readyz")).status_code == 200


async def test_open_during_16_predicates_in_flight_never_mixes_snapshots(
    server: CalderaProcess,
) -> None:
    """Volcano runs up to 16 predicate calls at once; a new snapshot arriving meanwhile (a large
    body, read while the predicates are answered) must be seen whole or not at all."""
    small, large = snapshot(), snapshot(extra_nodes=400, extra_jobs=50)
    expected = {marker(small), marker(large)}
    assert len(expected) == 2
    client = server.client
    assert (await client.post("/onSessionOpen", content=compact(small))).status_code == 200
    seen: list[str] = []
    done = asyncio.Event()

    async def predicates() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as own:
            while not done.is_set():
                seen.append(await predicate_status(own))

    workers = [asyncio.create_task(predicates()) for _ in range(16)]
    try:
        bodies = [compact(large), compact(small)] * 4
        for body in bodies:
            response = await client.post("/onSessionOpen", content=body)
            assert response.status_code == 200
            await asyncio.sleep(0.05)
    finally:
        done.set()
        await asyncio.gather(*workers)
    assert set(seen) == expected, set(seen) - expected
    assert len(seen) > 100


async def test_a_plugin_failing_once_is_a_500_naming_it_and_the_next_call_is_fine(
    server: CalderaProcess,
) -> None:
    response = await exchange(server.url, post("/jobReady", b'{"job": {"UID": "fail"}}'))
    assert response.status == 500
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["plugin"] == "test-fails" and body["verb"] == "jobReady"
    assert "scripted failure" in body["error"]
    again = await exchange(server.url, post("/jobReady", b'{"job": {"UID": "fine"}}'))
    assert again.status == 200 and again.json() == {"status": True}
    metrics = (await server.client.get("/metrics")).text
    assert (
        'caldera_plugin_errors_total{kind="raised",plugin="test-fails",verb="jobReady"} 1.0'
        in metrics
    )


async def test_a_caldera_bug_is_a_json_500_and_the_server_carries_on(
    server: CalderaProcess,
) -> None:
    response = await exchange(server.url, post("/jobReady", INTERNAL_ERROR_BODY))
    assert response.status == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "internal error: KeyError", "verb": "jobReady"}
    assert (await server.client.get("/healthz")).status_code == 200
    again = await exchange(server.url, post("/jobReady", b'{"job": {"UID": "fine"}}'))
    assert again.status == 200
    await asyncio.sleep(0.2)
    assert "a Caldera bug" in server.log()  # the trace is logged for whoever fixes it
