"""Compare mode wired into the service: onSessionOpen compares off the verb's path, allocate and
onSessionClose feed the overlay, and the differences reach the metric, the log and
/debug/session (the watch itself is replaced by a store filled in the test)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

from app.cluster_state.compare import Difference
from app.cluster_state.compare_mode import SessionStateComparison
from app.cluster_state.derive import Settings
from app.config import load_config_text
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.pdb.kube import ClusterConfig, object_key
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import captured_in_a_cluster
from tests.app.cluster_state.test_compare import matching_objects
from tests.examples import example_bytes


def _unused() -> ClusterConfig:
    raise AssertionError("no cluster in this test")


def _synced(comparison: SessionStateComparison) -> None:
    comparison.watch.reflectors = comparison.store.reflectors(_unused)
    for reflector in comparison.watch.reflectors:
        reflector.status.synced = True


def _fill(comparison: SessionStateComparison, objects: dict[str, list[dict[str, Any]]]) -> None:
    for name, store in comparison.store.stores().items():
        store.replace({object_key(o): o for o in objects.get(name, [])})


async def _compared(comparison: SessionStateComparison) -> None:
    assert comparison._running is not None
    await asyncio.wait_for(comparison._running, 10)
    await asyncio.sleep(0)  # the done callback runs on the loop


async def test_compare_mode_end_to_end(caplog: pytest.LogCaptureFixture) -> None:
    config = load_config_text('volcanoVersion: "1.14"\nsessionState: compare\n', "c.yaml")
    app = create_app(ServeOptions.of(config))
    comparison = app.runtime.session_state
    assert isinstance(comparison, SessionStateComparison)
    _fill(comparison, matching_objects())
    _synced(comparison)
    transport = httpx.ASGITransport(app=app)
    snapshot = captured_in_a_cluster()
    async with httpx.AsyncClient(transport=transport, base_url="http://caldera") as client:
        # A quiet cluster: the derived state is Volcano's.
        assert (await client.post("/onSessionOpen", content=snapshot)).status_code == 200
        await _compared(comparison)
        assert comparison.last is not None and comparison.last["differences"] == 0

        # Volcano allocates worker-0 to node1 and the session commits it...
        allocate = example_bytes("volcano-1.14", "allocateFunc.request.json")
        assert (await client.post("/allocate", content=allocate)).status_code == 200
        assert (await client.post("/onSessionClose", content=b"{}")).status_code == 200
        assert len(comparison.store.overlay) == 1

        # ...so the next session's derived state has it Binding on node1, where this (replayed)
        # snapshot still says Pending: the difference is counted, logged and shown.
        with caplog.at_level(logging.INFO, logger="caldera.session_state"):
            assert (await client.post("/onSessionOpen", content=snapshot)).status_code == 200
            await _compared(comparison)
        by_kind = comparison.last["byKind"]  # type: ignore[index]
        assert by_kind["task.Status"] == 1 and by_kind["node.Used"] >= 1
        # The capture's pods carry no resourceVersion and the store's do: every task is
        # in flight (test_compare.py tells in flight from not on objects of its own).
        last = comparison.last
        assert last is not None
        assert last["inFlight"] == sum(last["byKindInFlight"].values()) > 0
        assert any(
            "kind task.Status" in r.message
            and f"({last['byKindInFlight']['task.Status']} in flight)" in r.message
            and "sent 1, derived 8" in r.message
            for r in caplog.records
        )
        debug = (await client.get("/debug/session")).json()
        section = debug["sessionState"]
        assert section["mode"] == "compare" and section["synced"] is True
        assert section["lastComparison"]["byKind"] == by_kind
        assert section["sessions"] == {"compared": 2}
        assert section["objects"]["pods"] == 2
        scraped = (await client.get("/metrics")).text
        assert 'caldera_session_state_differences_total{kind="task.Status"} 1.0' in scraped
        assert (
            'caldera_session_state_differences_in_flight_total{kind="task.Status"} 1.0' in scraped
        )
        assert 'caldera_session_state_sessions_total{outcome="compared"} 2.0' in scraped


async def test_sessions_before_the_watch_lists_are_not_compared() -> None:
    counted: list[str] = []
    comparison = SessionStateComparison(Settings(), outcome=counted.append)
    comparison.compare_with(OnSessionOpenRequest(), 1)
    assert counted == ["not_synced"] and comparison.last is None


def test_reported_values_are_numbers_only() -> None:
    """A pod's or node's strings (annotations, labels) can hold secrets."""
    counts: dict[str, int] = {}
    in_flight: dict[str, int] = {}
    comparison = SessionStateComparison(
        Settings(),
        count=lambda k, n: counts.update({k: n}),
        count_in_flight=lambda k, n: in_flight.update({k: n}),
    )
    comparison.record(
        7,
        [
            Difference("task.Pod", "ns/pg/u", ".metadata.annotations.token", "s3cret", "other"),
            Difference("job.Priority", "ns/pg", "", 10, 20),
            Difference("node.missing", "n1", "", "present", None, in_flight=True),
        ],
        0.01,
    )
    assert counts == {"job.Priority": 1, "node.missing": 1, "task.Pod": 1}
    assert in_flight == {"node.missing": 1}
    assert comparison.last is not None
    shown = {d["kind"]: (d["sent"], d["derived"]) for d in comparison.last["first"]}
    assert shown == {
        "task.Pod": ("differs", "differs"),
        "job.Priority": (10, 20),
        "node.missing": ("present", None),
    }
    assert comparison.last["byKindInFlight"] == {"node.missing": 1}
    assert "s3cret" not in repr(comparison.describe())
