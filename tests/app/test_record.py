"""app/record.py and app/replay.py in process: layout, permissions, the size cap, the replay
clock and the report. The real server records in tests/service/test_record_replay.py."""

from __future__ import annotations

import contextlib
import json
import logging
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.config import load_config
from app.errors import CalderaError
from app.extender import Extender
from app.record import INDEX, Recorder, RecordingExtender
from app.replay import ReplayError, exchanges, render, replay
from app.session import SessionManager
from tests.examples import CAPTURED_BODIES

FIXTURES = CAPTURED_BODIES / "volcano-1.15"
CREATED = datetime(2026, 1, 1, tzinfo=UTC)
SLA = "tiers: [{plugins: [{name: sla}]}]\n"


def job_body() -> bytes:
    body = json.loads((FIXTURES / "jobEnqueueable.request.json").read_bytes())
    body["job"]["CreationTimestamp"] = CREATED.isoformat().replace("+00:00", "Z")
    return json.dumps(body).encode()


def write_config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "caldera.yaml"
    path.write_text(text)
    return str(path)


def record_in_process(directory: Path, config_text: str, bodies: list[tuple[str, bytes]]) -> None:
    recorder = Recorder(directory)
    config = load_config_from_text(directory.parent, config_text)
    extender = Extender(config, SessionManager(config, clock=recorder.clock))
    recording = RecordingExtender(extender, recorder)
    for verb, body in bodies:
        with contextlib.suppress(CalderaError):  # a refused body is recorded, then raised
            recording.handle(verb, body)
    recorder.close()


def load_config_from_text(tmp_path: Path, text: str):
    return load_config(write_config(tmp_path, text))


def test_layout_and_private_permissions(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    bodies = [
        ("onSessionOpen", (FIXTURES / "onSessionOpen.request.json").read_bytes()),
        ("jobEnqueueable", job_body()),
        ("predicate", b'{"task": 3}'),
        ("onSessionOpen", (FIXTURES / "onSessionOpen.request.json").read_bytes()),
    ]
    record_in_process(directory, SLA, bodies)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    sessions = sorted(p.name for p in directory.iterdir())
    assert sessions == ["session-000001", "session-000002"]
    first = directory / "session-000001"
    assert stat.S_IMODE(first.stat().st_mode) == 0o700
    for path in first.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    lines = [json.loads(line) for line in (first / INDEX).read_text().splitlines()]
    assert [(x["seq"], x["verb"], x["status"]) for x in lines] == [
        (1, "onSessionOpen", 200),
        (2, "jobEnqueueable", 200),
        (3, "predicate", 400),
    ]
    assert (first / lines[1]["request"]).read_bytes() == job_body()
    assert json.loads((first / lines[2]["response"]).read_bytes())["verb"] == "predicate"


def test_a_directory_in_use_gets_a_fresh_run_subdirectory(tmp_path: Path) -> None:
    """Issue 24: after a container restart the emptyDir still holds the last recording, and
    refusing it made the sidecar crash-loop; each start now records beside it."""
    (tmp_path / "old").write_text("x")
    recorder = Recorder(tmp_path)
    try:
        assert recorder.directory.parent == tmp_path
        assert recorder.directory.name.startswith("run-")
        assert (tmp_path / "old").read_text() == "x"
    finally:
        recorder.close()


def test_recording_stops_at_the_cap_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "rec"
    recorder = Recorder(directory, max_bytes=100)
    now = datetime.now(UTC)
    recorder.record("onSessionOpen", now, 200, b"x" * 60, b"{}")
    with caplog.at_level(logging.WARNING, "caldera.record"):
        recorder.record("predicate", now, 200, b"y" * 60, b"{}")
        recorder.record("allocate", now, 200, b"z", b"{}")  # would fit, but recording stopped
    recorder.close()
    assert recorder.stopped
    assert "recording stopped" in caplog.text and "cap of 100 bytes" in caplog.text
    [line] = (directory / "session-000001" / INDEX).read_text().splitlines()
    assert json.loads(line)["verb"] == "onSessionOpen"


def handwritten_recording(directory: Path, at: datetime, answer: bytes) -> None:
    """One jobEnqueueable answered at ``at``: what a server recorded then."""
    session = directory / "session-000000"
    session.mkdir(parents=True)
    (session / "000001-jobEnqueueable.request.json").write_bytes(job_body())
    (session / "000001-jobEnqueueable.response.json").write_bytes(answer)
    line = {
        "seq": 1,
        "verb": "jobEnqueueable",
        "time": at.isoformat(),
        "status": 200,
        "request": "000001-jobEnqueueable.request.json",
        "response": "000001-jobEnqueueable.response.json",
    }
    (session / INDEX).write_text(json.dumps(line) + "\n")


@pytest.mark.parametrize(
    ("waited", "answer"),
    [(timedelta(minutes=5), b'{"status":0}'), (timedelta(hours=2), b'{"status":1}')],
)
def test_replay_gives_plugins_the_recorded_time(
    tmp_path: Path, waited: timedelta, answer: bytes
) -> None:
    """sla permits a job once it has waited its waiting time (the fixture's PodGroup says
    10m): today every job of 2026-01-01 has, so only the recorded clock reproduces the
    abstention 5 minutes after its creation."""
    handwritten_recording(tmp_path / "rec", CREATED + waited, answer)
    report = replay(load_config_from_text(tmp_path, SLA), tmp_path / "rec")
    assert not report.differs, list(render(report))


def test_replay_reports_the_differing_verb_and_exits_1(tmp_path: Path, capsys) -> None:
    handwritten_recording(tmp_path / "rec", CREATED + timedelta(minutes=5), b'{"status":1}')
    assert main(["replay", str(tmp_path / "rec"), "--config", write_config(tmp_path, SLA)]) == 1
    out = capsys.readouterr().out
    assert "jobEnqueueable" in out and "1 differ" in out
    assert 'recorded: 200 {"status":1}' in out and 'replayed: 200 {"status":0}' in out
    assert "1 of 1 answers differ" in out


def test_replay_of_something_that_is_not_a_recording(tmp_path: Path, capsys) -> None:
    with pytest.raises(ReplayError, match="no recorded session"):
        exchanges(tmp_path)
    assert main(["replay", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_replay_warns_when_a_data_source_does_not_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("app.replay.BACKGROUND_SYNC_SECONDS", 0.2)
    handwritten_recording(tmp_path / "rec", CREATED + timedelta(minutes=5), b'{"status":0}')
    missing = tmp_path / "no-such-pdbs.yaml"
    config = f"tiers: [{{plugins: [{{name: sla}}, {{name: pdb, arguments: {{source: file, file: {missing}}}}}]}}]\n"
    report = replay(load_config_from_text(tmp_path, config), tmp_path / "rec")
    assert not report.differs
    err = capsys.readouterr().err
    assert "data source of tiers[0].plugins[1] did not sync" in err


def test_without_record_the_endpoints_call_the_extender_itself(tmp_path: Path) -> None:
    """Recording off is absent, not a flag checked per request: the verb endpoints hold the
    plain Extender and the sessions the plain clock."""
    from app.main import create_app
    from app.routes.verbs import VerbEndpoint
    from plugins.api.base import utc_now

    def verb_endpoints(app: Any) -> list[VerbEndpoint]:
        endpoints = (getattr(route, "endpoint", None) for route in app.router.routes)
        return [e for e in endpoints if isinstance(e, VerbEndpoint)]

    plain = create_app(load_config(None))
    endpoints = verb_endpoints(plain)
    assert endpoints and all(e.extender is plain.state.extender for e in endpoints)
    assert plain.state.sessions.clock is utc_now

    recorder = Recorder(tmp_path / "rec")
    recording = create_app(load_config(None), recorder)
    endpoints = verb_endpoints(recording)
    assert endpoints and all(isinstance(e.extender, RecordingExtender) for e in endpoints)
    recorder.close()


def test_replay_finds_the_one_run_of_a_directory_recorded_into_twice(tmp_path: Path) -> None:
    from app.replay import ReplayError, exchanges

    handwritten_recording(tmp_path / "rec" / "run-20261124T100000Z-1", CREATED, b'{"status":0}')
    assert exchanges(tmp_path / "rec")
    handwritten_recording(tmp_path / "rec" / "run-20261124T110000Z-2", CREATED, b'{"status":0}')
    with pytest.raises(ReplayError, match="holds 2 recordings"):
        exchanges(tmp_path / "rec")
    assert exchanges(tmp_path / "rec" / "run-20261124T110000Z-2")
