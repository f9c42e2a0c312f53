"""app/server/snapshot_health.py: each way a snapshot is not taken, as /readyz describes it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.errors import BadLength, BodyTooLarge, CalderaError, PluginFailure
from app.server.snapshot_health import SnapshotHealth

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def health() -> SnapshotHealth:
    return SnapshotHealth(lambda: NOW)


@pytest.mark.parametrize(
    ("error", "status", "fields"),
    [
        pytest.param(BodyTooLarge(1024, 4096, "maxSnapshotBytes"), "refused",
                     {"code": 413, "bytes": 4096, "limit": 1024, "setting": "maxSnapshotBytes"},
                     id="too large"),
        pytest.param(BadLength("Content-Length 'x' is not a number"), "refused", {"code": 400},
                     id="unreadable"),
        pytest.param(PluginFailure("sla", "onSessionOpen", ValueError("boom")), "failed",
                     {"code": 500}, id="a plugin failed"),
    ],
)  # fmt: skip
def test_a_snapshot_not_taken_is_not_ready(
    error: CalderaError, status: str, fields: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    tracker = health()
    tracker.refused(error)
    assert not tracker.ready
    described = tracker.describe()
    assert described["status"] == status and described["missedInARow"] == 1
    assert described["error"] == str(error)
    for key, value in fields.items():
        assert described[key] == value
    [record] = caplog.records
    assert record.levelname == "ERROR" and "without any of Caldera's plugins" in record.message


def test_no_snapshot_yet_is_ready() -> None:
    tracker = health()
    assert tracker.ready and tracker.describe() == {"status": "none yet"}


def test_a_taken_snapshot_ends_the_run_of_misses() -> None:
    tracker = health()
    tracker.abandoned()
    tracker.refused(BodyTooLarge(1024, None, "maxSnapshotBytes"))
    assert tracker.describe()["missedInARow"] == 2
    assert "bytes" not in tracker.describe()
    tracker.taken(512)
    assert tracker.ready
    assert tracker.describe() == {"status": "taken", "at": NOW.isoformat(), "bytes": 512}
