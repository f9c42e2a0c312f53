"""app/server/record.py and app/commands/replay.py in process: layout, permissions, the size cap,
the replay clock and the report. The real server records in tests/service/test_record_replay.py."""

from __future__ import annotations

import contextlib
import json
import logging
import stat
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.cluster_state.derive import derive
from app.cluster_state.encode import encode_state
from app.commands.cli import main
from app.commands.replay import (
    BACKGROUND_SYNC_SECONDS,
    ReplayError,
    exchanges,
    recordings,
    render,
    replay,
)
from app.config import load_config
from app.errors import CalderaError
from app.extender import Extender
from app.metrics import Metrics
from app.server.record import INDEX, Recorder, RecordingExtender
from app.session import SessionManager
from tests.app.cluster_state.objects import cluster
from tests.app.cluster_state.test_compare import matching_objects
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
    metrics = Metrics()
    extender = Extender(config, SessionManager(config, metrics, clock=recorder.clock), metrics)
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


def test_a_derived_state_is_written_as_the_sessions_open_and_counts_towards_the_cap(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "rec"
    state = derive(cluster(**matching_objects())).snapshot
    written = bytes(encode_state(state))  # Volcano's JSON: the derived nodes with their tasks
    assert b'"Tasks":null' not in written.split(b'"Nodes"')[1]
    size = len(written)
    recorder = Recorder(directory, max_bytes=size + 100)
    now = datetime.now(UTC)
    recorder.record("onSessionClose", now, 200, b"{}", b"{}")  # the session before
    recorder.record_derived(now, state)
    recorder.record("jobEnqueueable", now, 200, b"j" * 40, b"{}")
    recorder.close()  # the writer has encoded the state: its bytes are counted
    assert recorder.written_derived == size and not recorder.stopped
    recorder = Recorder(directory / "again", max_bytes=size + 100)
    recorder.written_derived = size
    with caplog.at_level(logging.WARNING, "caldera.record"):
        recorder.record("predicate", now, 200, b"p" * 200, b"{}")  # over the cap with it
    recorder.close()
    assert recorder.stopped and "cap of" in caplog.text

    lines = [json.loads(x) for x in (directory / "session-000001" / INDEX).read_text().splitlines()]
    assert [(x["verb"], x.get("derived")) for x in lines] == [
        ("onSessionOpen", True), ("jobEnqueueable", None)
    ]  # fmt: skip
    opened = directory / "session-000001" / lines[0]["request"]
    assert opened.read_bytes() == written
    assert (directory / "session-000001" / lines[0]["response"]).read_bytes() == b"{}"


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
        recordings(tmp_path)
    assert main(["replay", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "pdb",
    [
        "{source: file, file: MISSING}",
        "{source: kubernetes, kubeconfig: MISSING}",
    ],
    ids=["a budgets file that is not there", "a kubeconfig that is not there"],
)
def test_replay_fails_fast_and_clearly_when_a_data_source_cannot_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pdb: str
) -> None:
    """Issue 34: with pdb and no cluster, replay waited 30 s and went on with guesses. The
    first failed sync ends it: exit 2, one sentence naming the plugin, the error and the way
    out; no answer is compared."""
    handwritten_recording(tmp_path / "rec", CREATED + timedelta(minutes=5), b'{"status":0}')
    missing = tmp_path / "not-there.yaml"
    config = write_config(
        tmp_path,
        f"tiers: [{{plugins: [{{name: sla}}, {{name: pdb, arguments: {pdb.replace('MISSING', str(missing))}}}]}}]\n",
    )
    started = time.monotonic()
    assert main(["replay", str(tmp_path / "rec"), "--config", config]) == 2
    assert time.monotonic() - started < BACKGROUND_SYNC_SECONDS / 3
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = [x for x in captured.err.splitlines() if x.startswith("caldera replay:")]
    assert line.startswith(
        "caldera replay: the data source of pdb (tiers[0].plugins[1]) cannot sync: "
    )
    assert str(missing) in line and "source: file" in line
    assert "{'" not in captured.err and "':" not in captured.err, "no Python dict"


class NeverSynced:
    """A data source that neither syncs nor fails (a slow API server)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def ready(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        return {"synced": False, "lastError": None}


def test_replay_warns_when_a_data_source_is_still_syncing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("app.commands.replay.BACKGROUND_SYNC_SECONDS", 0.2)
    monkeypatch.setattr(
        "app.config.build_backgrounds", lambda config: ({(0, 1): NeverSynced()}, [])
    )
    handwritten_recording(tmp_path / "rec", CREATED + timedelta(minutes=5), b'{"status":0}')
    config = "tiers: [{plugins: [{name: sla}, {name: pdb, arguments: {source: file, file: x}}]}]\n"
    report = replay(load_config_from_text(tmp_path, config), tmp_path / "rec")
    assert not report.differs
    err = capsys.readouterr().err
    assert err == (
        "caldera replay: warning: the data source of pdb (tiers[0].plugins[1]) did not sync"
        " in 0.2s; its answers may differ\n"
    )


def test_without_record_the_endpoints_call_the_extender_itself(tmp_path: Path) -> None:
    """Recording off is absent, not a flag checked per request: the verb endpoints hold the
    plain Extender and the sessions the plain clock."""
    from app.server.main import create_app
    from app.server.options import ServeOptions
    from app.server.routes.verbs import VerbEndpoint
    from plugins.api.base import utc_now

    def verb_endpoints(app: Any) -> list[VerbEndpoint]:
        endpoints = (getattr(route, "endpoint", None) for route in app.router.routes)
        return [e for e in endpoints if isinstance(e, VerbEndpoint)]

    options = ServeOptions.of(load_config(None))
    plain = create_app(options)
    endpoints = verb_endpoints(plain)
    assert endpoints and all(e.extender is plain.runtime.extender for e in endpoints)
    assert plain.runtime.sessions.clock is utc_now

    recording = create_app(options.replace(record=str(tmp_path / "rec")))
    endpoints = verb_endpoints(recording)
    assert endpoints and all(isinstance(e.extender, RecordingExtender) for e in endpoints)
    assert recording.runtime.recorder is not None
    recording.runtime.recorder.close()


def test_replay_replays_every_run_of_a_directory_recorded_into_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: the directory's own sessions were replayed and its run-* recordings (one per
    later serve start) silently skipped. Every one is replayed now, each from a fresh start,
    and the output names them; a run's directory replays that run alone."""
    rec = tmp_path / "rec"
    handwritten_recording(rec, CREATED + timedelta(minutes=5), b'{"status":0}')
    handwritten_recording(
        rec / "run-20261124T100000Z-1", CREATED + timedelta(hours=2), b'{"status":1}'
    )
    # the second run's answer differs: replay must reach it to say so
    handwritten_recording(
        rec / "run-20261124T110000Z-2", CREATED + timedelta(hours=2), b'{"status":0}'
    )
    assert recordings(rec) == [rec, rec / "run-20261124T100000Z-1", rec / "run-20261124T110000Z-2"]
    assert main(["replay", str(rec), "--config", write_config(tmp_path, SLA)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "3 recordings (one per serve start), each replayed from a fresh start: . (1 answer),"
        " run-20261124T100000Z-1 (1 answer), run-20261124T110000Z-2 (1 answer)"
    )
    assert "jobEnqueueable        3 answers  1 differ" in out
    assert "    run-20261124T110000Z-2/session-000000/000001 at 2026-01-01T02:00:00+00:00" in out
    assert out[-1] == "1 of 3 answers differ"
    # one run alone
    alone = replay(load_config_from_text(tmp_path, SLA), rec / "run-20261124T100000Z-1")
    assert alone.recordings == [(".", 1)] and not alone.differs
    assert [e.session for e in exchanges(rec / "run-20261124T100000Z-1")] == ["session-000000"]


def test_a_directory_of_runs_alone_replays_them_all(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    handwritten_recording(rec / "run-20261124T100000Z-1", CREATED, b'{"status":0}')
    handwritten_recording(rec / "run-20261124T110000Z-2", CREATED, b'{"status":0}')
    (rec / "run-20261124T120000Z-3").mkdir()  # a start that recorded nothing
    assert recordings(rec) == [rec / "run-20261124T100000Z-1", rec / "run-20261124T110000Z-2"]
    report = replay(load_config_from_text(tmp_path, SLA), rec)
    assert [name for name, _ in report.recordings] == [
        "run-20261124T100000Z-1",
        "run-20261124T110000Z-2",
    ]
