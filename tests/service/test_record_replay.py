"""serve --record through the real server, then caldera replay: the same configuration answers
the same (exit 0), a changed one is shown verb by verb (exit 1); recording changes no answer."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from app.server.record import INDEX
from tests.examples import CAPTURED_BODIES
from tests.service.conftest import (
    STARTUP_TIMEOUT,
    CalderaProcess,
    caldera_command,
    free_port,
    start_caldera,
)

FIXTURES = CAPTURED_BODIES / "volcano-1.15"
CONFIG = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: cdp
- plugins:
  - name: sla
  - name: overcommit
  - name: resourcequota
"""
WITHOUT_ADMISSION = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: priority
  - name: conformance
  - name: cdp
"""
CALLS = [
    ("onSessionOpen", "onSessionOpen.request.json"),
    ("jobEnqueueable", "jobEnqueueable.request.json"),
    ("preemptable", "preemptable.request.json"),
    ("reclaimable", "reclaimable.request.json"),
    ("predicate", "predicate.request.json"),
    ("queueOverused", "queueOverused.request.json"),
    ("onSessionClose", "onSessionClose.request.json"),
]


async def start_recording(workdir: Path, record: Path, *extra: str) -> CalderaProcess:
    port = free_port()
    config = workdir / "caldera.yaml"
    config.write_text(CONFIG)
    command = [
        *caldera_command(),
        *("serve", "--port", str(port), "--config", str(config), "--record", str(record)),
        *extra,
    ]
    log_path = workdir / f"caldera-{port}.log"
    with log_path.open("wb") as log:
        env = {**os.environ, "CALDERA_LOG_FORMAT": "json"}
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = CalderaProcess(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, server.log()
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1.0).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    await server.stop()
    raise AssertionError(f"caldera did not start:\n{server.log()}")


async def exchange(server: CalderaProcess) -> list[tuple[str, int, bytes]]:
    answers = []
    for verb, fixture in [*CALLS, ("predicate", None)]:
        body = (FIXTURES / fixture).read_bytes() if fixture else b'{"task": 3}'
        response = await server.client.post(f"/{verb}", content=body)
        answers.append((verb, response.status_code, response.content))
    return answers


def replay(recorded: Path, config: Path, text: str) -> tuple[int, str]:
    config.write_text(text)
    result = subprocess.run(
        [*caldera_command(), "replay", str(recorded), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, result.stdout + result.stderr


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    return tmp_path / "recording"


async def test_record_then_replay_same_and_changed_config(tmp_path: Path, recorded: Path) -> None:
    server = await start_recording(tmp_path, recorded)
    try:
        answers = await exchange(server)
    finally:
        assert await server.stop() == 0
    log = server.log()
    assert "RECORDING every extender request" in log and "pod specs" in log

    # recording changed no answer: a server without it answers the same bytes
    plain = await start_caldera(CONFIG, tmp_path)
    try:
        assert await exchange(plain) == answers
    finally:
        await plain.stop()

    # the files are what the client received, in order, private
    [session] = sorted(recorded.iterdir())
    lines = [json.loads(line) for line in (session / INDEX).read_text().splitlines()]
    assert [(x["verb"], x["status"]) for x in lines] == [(v, s) for v, s, _ in answers]
    for line, (_, _, content) in zip(lines, answers, strict=True):
        assert (session / line["response"]).read_bytes() == content
        assert (session / line["request"]).stat().st_mode & 0o077 == 0
    assert recorded.stat().st_mode & 0o077 == 0

    code, out = replay(recorded, tmp_path / "same.yaml", CONFIG)
    assert code == 0, out
    assert f"all {len(answers)} answers are the same" in out

    code, out = replay(recorded, tmp_path / "changed.yaml", WITHOUT_ADMISSION)
    assert code == 1, out
    [row] = [line for line in out.splitlines() if line.startswith("jobEnqueueable")]
    assert "1 differ" in row
    assert 'recorded: 200 {"status":1}' in out and 'replayed: 200 {"status":0}' in out
    [row] = [line for line in out.splitlines() if line.startswith("preemptable")]
    assert "all same" in row


async def test_recording_stops_at_the_cap_and_serving_goes_on(
    tmp_path: Path, recorded: Path
) -> None:
    open_bytes = (FIXTURES / "onSessionOpen.request.json").stat().st_size
    server = await start_recording(tmp_path, recorded, "--record-max-bytes", str(open_bytes + 100))
    try:
        answers = await exchange(server)
        assert all(status in (200, 400) for _, status, _ in answers)
    finally:
        assert await server.stop() == 0
    assert "recording stopped" in server.log()
    [session] = sorted(recorded.iterdir())
    verbs = [json.loads(x)["verb"] for x in (session / INDEX).read_text().splitlines()]
    assert verbs == ["onSessionOpen"]
