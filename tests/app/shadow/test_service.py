"""The shadow's queue and process (app/shadow/service.py, app/shadow/worker.py): a body that does not fit drops
the whole session and counts it, a file that does not load is a counted failure, and each
finished session's differences are kept."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from prometheus_client import CollectorRegistry

from app.explain import DecisionRecord
from app.shadow.reports import SESSIONS_KEPT
from app.shadow.service import PIPE_BYTES, SEND_AFTER_SECONDS, Shadow, ShadowedAnswers

CONFIG = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 1.0}
"""
NODE = {"Name": "n1", "Idle": {"MilliCPU": 2000, "Memory": 4e9},
        "Allocatable": {"MilliCPU": 2000, "Memory": 4e9}, "Used": {"MilliCPU": 0, "Memory": 0}}  # fmt: skip
SNAPSHOT = json.dumps({"Jobs": {}, "Nodes": {"n1": NODE}, "Queues": {}}).encode()
JOB = json.dumps({"job": {"UID": "u", "Name": "big", "Namespace": "a", "Queue": "q",
                          "PodGroup": {"spec": {"minResources": {"cpu": "8"}}}}}).encode()  # fmt: skip


def shadow(tmp_path: Path, text: str = CONFIG, limit: int = 1 << 20) -> Shadow:
    path = tmp_path / "shadow.yaml"
    path.write_text(text)
    return Shadow(str(path), CollectorRegistry(), limit)


def settled(s: Shadow, until: Any) -> None:
    deadline = time.monotonic() + 10
    while not until() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_shadow_process_has_its_own_process_series_while_it_runs(tmp_path: Path) -> None:
    """Its RSS is about the live process's (operator guide §7), and the live process's
    process_* series do not count it: caldera_shadow_process_* are the child's, and say nothing
    once it has ended (its pid could be another process's by then)."""
    path = tmp_path / "shadow.yaml"
    path.write_text(CONFIG)
    registry = CollectorRegistry()
    s = Shadow(str(path), registry, 1 << 20)
    try:
        rss = registry.get_sample_value("caldera_shadow_process_resident_memory_bytes")
        started = registry.get_sample_value("caldera_shadow_process_start_time_seconds")
        assert rss is not None and rss > 1 << 20
        assert started is not None and started >= time.time() - 60
        assert s._pid() == s._process.pid != os.getpid()
    finally:
        s.stop()
    assert registry.get_sample_value("caldera_shadow_process_resident_memory_bytes") is None


def test_a_session_whose_snapshot_does_not_fit_is_dropped_whole(tmp_path: Path) -> None:
    s = shadow(tmp_path, limit=len(SNAPSHOT) - 1)
    try:
        s.offer("onSessionOpen", SNAPSHOT, b"{}")
        s.offer("jobEnqueueable", JOB, b'{"status":1}')
        assert s.dropped == 1 and s.queued_bytes() == 0  # nothing of that session queued
        settled(s, lambda: s.reports.sessions)
        [session] = s.reports.findings()[0]
        assert "dropped" in session["skipped"] and session["compared"] == {}
        assert s.describe()["droppedSessions"] == 1
    finally:
        s.stop()


def test_the_shadow_compares_a_session_it_can_hold(tmp_path: Path) -> None:
    s = shadow(tmp_path)
    try:
        s.offer("onSessionOpen", SNAPSHOT, b"{}")
        s.offer("jobEnqueueable", JOB, b'{"status":1}')
        settled(s, lambda: s.reports.findings()[1])
        sessions, newest = s.reports.findings()
        assert sessions[0]["compared"] == {"jobEnqueueable": 1}
        [held] = newest
        assert (held.subject, held.change, held.shadow.plugin) == (
            "a/big",
            "would hold it",
            "overcommit",
        )
        # The process says it caught up (Done) after it reports the comparison.
        settled(s, lambda: s.queued_bytes() == 0)
        assert s.queued_bytes() == 0
    finally:
        s.stop()


def test_a_file_that_does_not_load_is_a_counted_failure(tmp_path: Path) -> None:
    s = shadow(tmp_path, "tiers: [{plugins: [{name: nope}]}]\n")
    try:
        settled(s, lambda: s.describe()["status"] != "starting")
        state = s.describe()
        assert state["status"] == "failing" and "nope" in state["problem"]
        assert state["failures"]["load"] == 1
        s.offer("onSessionOpen", SNAPSHOT, b"{}")  # nothing to answer with: no finding, no error
        s.offer("jobEnqueueable", JOB, b'{"status":1}')
        settled(s, lambda: s.queued_bytes() == 0)
        assert s.reports.findings()[1] == []
    finally:
        s.stop()


def test_a_session_with_differences_outlives_the_quiet_sessions_after_it(tmp_path: Path) -> None:
    """Volcano asks about a job only while it is Pending: the one session where the shadow would
    have held it stays kept while the sessions after it find nothing."""
    s = shadow(tmp_path)
    try:
        s.offer("onSessionOpen", SNAPSHOT, b"{}")
        s.offer("jobEnqueueable", JOB, b'{"status":1}')
        for _ in range(SESSIONS_KEPT + 2):
            s.offer("onSessionOpen", SNAPSHOT, b"{}")
        settled(
            s, lambda: s.reports.sessions and s.reports.sessions[-1].number == SESSIONS_KEPT + 3
        )
        sessions, newest = s.reports.findings()
        assert [d["session"] for d in sessions] == [1, 4, 5, 6]
        assert [d.subject for d in newest] == ["a/big"]
        assert [(n, d.change) for n, d in s.reports.differences_of("job", "a/big")] == [
            (1, "would hold it")
        ]
    finally:
        s.stop()


class LiveAnswers:
    """The live configuration's side of :class:`ShadowedAnswers`: admits every job."""

    def handle(self, verb: str, body: bytes) -> bytes:
        return b'{"status":1}' if verb == "jobEnqueueable" else b"{}"

    def routes(self) -> dict[str, str]:
        return {}


def gated(tmp_path: Path, limit: int = 1 << 20) -> tuple[Shadow, ShadowedAnswers]:
    """A shadow whose live sessions never count as quiet: only their close lets it work."""
    path = tmp_path / "shadow.yaml"
    path.write_text(CONFIG)
    s = Shadow(str(path), CollectorRegistry(), limit, quiet_session_seconds=3600.0)
    return s, ShadowedAnswers(LiveAnswers(), s, DecisionRecord())


def test_the_shadow_never_evaluates_while_the_live_side_is_mid_session(tmp_path: Path) -> None:
    s, answers = gated(tmp_path)
    try:
        settled(s, lambda: s.describe()["status"] == "evaluating")
        answers.handle("onSessionOpen", SNAPSHOT)
        answers.handle("jobEnqueueable", JOB)
        # Past the sending thread's bound in time (SEND_AFTER_SECONDS): without the gate the
        # session would be handed over and evaluated by now.
        time.sleep(SEND_AFTER_SECONDS + 0.5)
        assert s.reports.sessions == [] and s.queued_bytes() > 0
        answers.handle("onSessionClose", b"{}")
        settled(s, lambda: s.reports.findings()[1])
        sessions, newest = s.reports.findings()
        assert sessions[0]["compared"] == {"jobEnqueueable": 1}
        assert [d.subject for d in newest] == ["a/big"]
    finally:
        s.stop()


def test_a_shadow_held_off_by_a_busy_live_side_drops_whole_sessions_and_counts_them(
    tmp_path: Path,
) -> None:
    """A session that never ends (back-to-back calls): the shadow's queue fills, the rest of the
    session is dropped and counted, the live answers go on; the next session, which closes, is
    evaluated."""
    admitted = b'{"status":1}'
    s, answers = gated(tmp_path, limit=len(SNAPSHOT + b"{}") + 3 * len(JOB + admitted))
    try:
        answers.handle("onSessionOpen", SNAPSHOT)
        for _ in range(10):
            assert answers.handle("jobEnqueueable", JOB) == admitted
        assert s.dropped == 1 and s.describe()["droppedSessions"] == 1
        assert s.metrics.dropped_sessions._value.get() == 1
        answers.handle("onSessionClose", b"{}")
        settled(s, lambda: s.queued_bytes() == 0)  # the gap before the next period
        answers.handle("onSessionOpen", SNAPSHOT)
        answers.handle("jobEnqueueable", JOB)
        answers.handle("onSessionClose", b"{}")
        settled(s, lambda: len(s.reports.sessions) == 2 and s.reports.sessions[-1].compared)
        first, second = s.reports.findings()[0]
        assert "fell behind" in first["skipped"] and first["compared"] == {"jobEnqueueable": 3}
        assert second["compared"] == {"jobEnqueueable": 1} and "skipped" not in second
        assert s.dropped == 1
    finally:
        s.stop()


def test_the_pipe_to_the_shadow_holds_a_megabyte_where_the_kernel_allows(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_GETPIPE_SZ"):
        pytest.skip("no pipe sizes on this system")
    s = shadow(tmp_path)
    try:
        assert fcntl.fcntl(s._to_child.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    finally:
        s.stop()


def test_a_state_being_handed_over_waits_while_the_live_side_is_in_a_session(
    tmp_path: Path,
) -> None:
    """Cluster mode's state encode stops between two entries while a session is in progress
    (app/shadow/service.py ``_while_live_is_busy``) and goes on once the session closes."""
    s, answers = gated(tmp_path)
    try:
        answers.handle("jobEnqueueable", JOB)  # a session in progress, not quiet yet
        waiting = threading.Thread(target=s._while_live_is_busy, daemon=True)
        waiting.start()
        waiting.join(SEND_AFTER_SECONDS + 0.5)  # past the wait's own bound in time
        assert waiting.is_alive()
        answers.handle("onSessionClose", b"{}")
        waiting.join(2.0)
        assert not waiting.is_alive()
    finally:
        s.stop()


def test_a_message_the_process_does_not_know_ends_it_with_the_reason(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """What follows a message it cannot read could be a batch's raw bodies: the process ends
    rather than guess, says why on stderr, and the parent shows it ended."""
    s = shadow(tmp_path)
    try:
        settled(s, lambda: s.describe()["status"] == "evaluating")
        s._to_child.send_bytes(msgspec.msgpack.encode(["Gossip", 1]))
        settled(s, lambda: s.describe()["status"] == "failing")
        assert s.describe()["problem"] == "the shadow's process ended (exit 1)"
        assert (
            "MessageError: not a message to the shadow's process (Batch, Share, State, Stop):"
            " Invalid value 'Gossip'" in capfd.readouterr().err
        )
    finally:
        s.stop()
