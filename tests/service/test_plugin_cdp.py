"""cdp through the real server: a Running pod inside its ``volcano.sh/cooldown-time`` after being
scheduled is protected on /preemptable and (from Volcano v1.12) on /reclaimable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import (
    TASK_PENDING,
    config,
    evict,
    scheduled_condition,
    task,
)

COOLDOWN = "volcano.sh/cooldown-time"
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
EVICTOR = task("default", "evictor", "other", status=TASK_PENDING, phase="Pending")


def cooled(
    name: str, scheduled_ago: timedelta, value: str, *, label: bool = False, phase: str = "Running"
) -> dict[str, Any]:
    """A pod scheduled ``scheduled_ago`` with the cooldown as an annotation (or a label)."""
    at = datetime.now(UTC) - scheduled_ago
    labels = {**PREEMPTABLE, COOLDOWN: value} if label else PREEMPTABLE
    annotations = {} if label else {COOLDOWN: value}
    return task("default", name, "test-group", phase=phase, labels=labels,
                annotations=annotations, conditions=[scheduled_condition(at)])  # fmt: skip


async def test_cdp_preemptable_fn(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config("name: cdp", version="1.15"))
    # TestPreemptableFn, with a one-hour margin either side of the clock.
    task1 = cooled("task1", timedelta(seconds=100), "2h")  # protected
    task2 = cooled("task2", timedelta(seconds=100), "600abcde")  # invalid: not enabled
    task3 = cooled("task3", timedelta(hours=3), "2h")  # cooldown over
    answer = await evict(server, "preemptable", EVICTOR, [task1, task2, task3])
    assert answer == {"status": 1, "victims": [task2, task3]}
    # A label wins even when invalid; unitless "600" is disabled; non-Running pods are victims.
    bad_label = task("default", "bad-label", "test-group",
                     labels={COOLDOWN: "oops"}, annotations={COOLDOWN: "2h"},
                     conditions=[scheduled_condition(datetime.now(UTC))])  # fmt: skip
    unitless = cooled("unitless", timedelta(seconds=1), "600")
    pending = cooled("pending", timedelta(seconds=1), "2h", phase="Pending")
    label = cooled("label", timedelta(seconds=1), "2h", label=True)
    answer = await evict(server, "reclaimable", EVICTOR, [bad_label, unitless, pending, label])
    assert answer == {"status": 1, "victims": [bad_label, unitless, pending]}
    # Everything protected: an empty list, still Permit.
    assert await evict(server, "preemptable", EVICTOR, [task1, label]) == {
        "status": 1,
        "victims": [],
    }


async def test_cdp_reclaimable_not_registered_before_v1_12(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config("name: cdp", version="1.11"))
    protected = cooled("protected", timedelta(seconds=1), "2h")
    expired = cooled("expired", timedelta(hours=3), "2h")
    assert await evict(server, "preemptable", EVICTOR, [protected, expired]) == {
        "status": 1,
        "victims": [expired],
    }
    assert await evict(server, "reclaimable", EVICTOR, [protected, expired]) == {
        "status": 0,
        "victims": [],
    }
