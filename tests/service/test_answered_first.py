"""onSessionOpen and onSessionClose are answered before their work (app/server/routes/verbs.py): the
snapshot's decode and session build, and its release, run after ``{}`` is sent, so Volcano's
cycle goes on meanwhile; the next call is read only when the work is done, so it is answered
from the new session, never the previous one. A session build the test holds open
(``test-open-waits``, tests/service/fault_server.py) shows both orders without timing."""

from __future__ import annotations

import asyncio
import copy
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from tests.service.conftest import CalderaProcess, start_caldera
from tests.service.test_session_faults import compact, marker, predicate_status, snapshot

ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture
async def gated(tmp_path: Path) -> AsyncIterator[tuple[CalderaProcess, Path]]:
    gate = tmp_path / "gate"
    gate.mkdir()
    config = f"""
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: test-snapshot-marker
  - name: test-open-waits
    arguments: {{dir: "{gate}"}}
"""
    process = await start_caldera(
        config,
        tmp_path,
        {"PYTHONPATH": str(ROOT)},
        [sys.executable, "-m", "tests.service.fault_server"],
    )
    yield process, gate
    (gate / "go").touch()
    assert await process.stop() == 0


def held_open(extra_nodes: int) -> dict[str, object]:
    """A snapshot whose session build ``test-open-waits`` holds until ``gate/go`` exists."""
    body = snapshot(extra_nodes=extra_nodes)
    body["Queues"]["wait"] = copy.deepcopy(next(iter(body["Queues"].values())))
    return body


async def started_building(gate: Path) -> bool:
    """Whether the held build has begun, waiting for it up to 30 s (it begins after the
    answer, so a client can read the answer first)."""
    deadline = time.monotonic() + 30
    while not (gate / "building").exists():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def after_answer_count(process: CalderaProcess, verb: str) -> float:
    prefix = f'caldera_after_answer_seconds_count{{verb="{verb}"}} '
    for line in (await process.client.get("/metrics")).text.splitlines():
        if line.startswith(prefix):
            return float(line.removeprefix(prefix))
    return 0.0


async def test_a_snapshot_is_answered_before_its_session_is_built_and_the_next_call_waits(
    gated: tuple[CalderaProcess, Path],
) -> None:
    process, gate = gated
    client = process.client
    first = snapshot()
    # The first snapshot (none taken yet) is answered after its build.
    assert (await client.post("/onSessionOpen", content=compact(first))).status_code == 200
    assert await after_answer_count(process, "onSessionOpen") == 0
    assert await predicate_status(client) == marker(first)

    held = held_open(extra_nodes=2)
    answered = await client.post("/onSessionOpen", content=compact(held))
    assert (answered.status_code, answered.json()) == (200, {})
    # Answered while the session was still being built: the build cannot end before "go".
    assert not (gate / "built").exists()
    assert await started_building(gate)

    predicate = asyncio.create_task(predicate_status(client))
    await asyncio.sleep(0.3)
    assert not predicate.done(), "a call was answered before the session it belongs to was built"
    (gate / "go").touch()
    assert await asyncio.wait_for(predicate, 30) == marker(held)
    assert (gate / "built").exists()
    assert await after_answer_count(process, "onSessionOpen") == 1

    closed = await client.post("/onSessionClose", content=b"{}")
    assert (closed.status_code, closed.json()) == (200, {})
    assert (await client.get("/debug/session")).json()["open"] is False
    assert await after_answer_count(process, "onSessionClose") == 1
    refused = await client.post("/onSessionClose", content=b"[]")
    assert refused.status_code == 400 and refused.json()["verb"] == "onSessionClose"


async def test_after_a_session_that_asked_nothing_the_next_is_built_when_first_asked(
    gated: tuple[CalderaProcess, Path],
) -> None:
    """An idle cycle (open, then close, nothing asked between) waits for no build: after one,
    the next snapshot is built at its session's first call, or after onSessionClose's answer
    when none comes."""
    process, gate = gated
    client = process.client

    async def cycle(body: dict[str, object]) -> None:
        assert (await client.post("/onSessionOpen", content=compact(body))).status_code == 200
        assert (await client.post("/onSessionClose", content=b"{}")).status_code == 200

    await cycle(snapshot())  # taken (answered after its build: the first)
    await cycle(snapshot())  # answered first and built at once; asked nothing
    held = held_open(extra_nodes=2)
    answered = await client.post("/onSessionOpen", content=compact(held))
    assert (answered.status_code, answered.json()) == (200, {})
    await asyncio.sleep(0.3)
    assert not (gate / "building").exists(), "an idle cycle's snapshot was built before asked"
    # Its close is answered first; the build runs after that answer.
    closed = await client.post("/onSessionClose", content=b"{}")
    assert (closed.status_code, closed.json()) == (200, {})
    health = asyncio.create_task(client.get("/debug/session"))
    assert await started_building(gate)
    assert not (gate / "built").exists()
    (gate / "go").touch()
    assert (await asyncio.wait_for(health, 30)).json()["open"] is False
    assert (gate / "built").exists()
    assert await after_answer_count(process, "onSessionOpen") == 2

    # The session after it asked nothing either: the next one's first call builds it.
    (gate / "go").unlink()
    (gate / "building").unlink()
    (gate / "built").unlink()
    asked = snapshot(extra_nodes=4)
    answered = await client.post("/onSessionOpen", content=compact(asked))
    assert (answered.status_code, answered.json()) == (200, {})
    assert await predicate_status(client) == marker(asked)
    assert await after_answer_count(process, "onSessionOpen") == 3
