"""PodGroup Events on a change of Caldera's verdict (app/events.py), with a sink that records."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import CalderaConfig
from app.events import (
    ADMITTED,
    BURST,
    QUEUE,
    REFILL_SECONDS,
    REJECTED,
    KubeEventSink,
    PodGroupEvents,
)
from app.framework import Framework, Slot
from app.metrics import Metrics
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api.base import Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.reasons import Reason
from schemas.api import JobInfo, PodGroup
from schemas.k8s import ObjectMeta
from tests.app.doubles import SENDS_JOB_ENQUEUED, Votes, framework
from tests.events_api import EventsApi

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
IDLE = Reason("insufficient-idle", "needs 40 CPU with 8 CPU already admitted, 12 CPU idle")
QUOTA = Reason("quota-exceeded", "quota compute of namespace team-a: cpu 6 requested of 4")


class Sink:
    def __init__(self, fail: Exception | None = None) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = fail
        self.closed = False

    async def create(self, event: dict[str, Any]) -> None:
        if self.fail is not None:
            raise self.fail
        self.created.append(event)

    async def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patched.append((namespace, name, patch))

    async def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.seconds = 1000.0

    def __call__(self) -> float:
        return self.seconds


def job(name: str = "train-42") -> JobInfo:
    meta = ObjectMeta(name=name, namespace="team-a", uid=f"uid-{name}")
    return JobInfo(Name=name, Namespace="team-a", PodGroup=PodGroup(metadata=meta))


async def recorder(sink: Sink, clock: Clock | None = None) -> PodGroupEvents:
    events = PodGroupEvents(sink, clock=lambda: T0, monotonic=clock or Clock(), instance="pod-1")
    await events.start()
    return events


async def test_a_rejected_job_gets_one_warning_naming_the_plugin_and_its_numbers() -> None:
    sink = Sink()
    events = await recorder(sink)
    for _ in range(3):  # the same verdict every cycle: one Event
        events.job_verdict(job(), Vote.REJECT, "overcommit", IDLE)
    await events.drain()
    [event] = sink.created
    assert event["type"] == "Warning" and event["reason"] == REJECTED
    assert event["message"] == f"overcommit: {IDLE.message}"
    assert event["involvedObject"] == {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": "train-42",
        "namespace": "team-a", "uid": "uid-train-42"}  # fmt: skip
    assert event["metadata"]["namespace"] == "team-a"
    assert event["metadata"]["name"].startswith("train-42.")
    assert (event["count"], event["firstTimestamp"]) == (1, "2026-11-26T10:00:00Z")
    assert event["source"] == {"component": "caldera"} and event["reportingInstance"] == "pod-1"
    await events.stop()
    assert sink.closed


async def test_a_change_of_reason_and_an_admission_are_events_a_job_never_held_is_not() -> None:
    sink = Sink()
    events = await recorder(sink)
    events.job_verdict(job("fine"), Vote.PERMIT, "", None)
    events.job_verdict(job(), Vote.REJECT, "overcommit", IDLE)
    events.job_verdict(job(), Vote.REJECT, "resourcequota", QUOTA)
    events.job_verdict(job(), Vote.ABSTAIN, "", None)
    await events.drain()
    assert [(e["reason"], e["type"]) for e in sink.created] == [
        (REJECTED, "Warning"), (REJECTED, "Warning"), (ADMITTED, "Normal")]  # fmt: skip
    assert sink.created[1]["message"].startswith("resourcequota: quota compute")
    await events.stop()


async def test_an_identical_event_within_ten_minutes_raises_its_count() -> None:
    sink, clock = Sink(), Clock()
    events = await recorder(sink, clock)
    for verdict in (Vote.REJECT, Vote.PERMIT, Vote.REJECT):
        events.job_verdict(job(), verdict, "overcommit", IDLE)
    await events.drain()
    assert [e["reason"] for e in sink.created] == [REJECTED, ADMITTED]
    [(namespace, name, patch)] = sink.patched
    assert (namespace, name) == ("team-a", sink.created[0]["metadata"]["name"])
    assert patch == {"count": 2, "lastTimestamp": "2026-11-26T10:00:00Z"}
    clock.seconds += 601  # past the window: a new Event
    events.job_verdict(job(), Vote.PERMIT, "", None)
    events.job_verdict(job(), Vote.REJECT, "overcommit", IDLE)
    await events.drain()
    assert len(sink.created) == 4 and len(sink.patched) == 1
    assert events.describe()["aggregated"] == 1
    await events.stop()


async def test_each_podgroup_has_a_burst_of_25_refilled_one_per_five_minutes() -> None:
    sink, clock = Sink(), Clock()
    events = await recorder(sink, clock)
    codes = [Reason(f"code-{i}", f"reason {i}") for i in range(BURST + 2)]
    for reason in codes:  # every one a change of reason
        events.job_verdict(job(), Vote.REJECT, "p", reason)
    await events.drain()
    assert len(sink.created) == BURST and events.describe()["rateLimited"] == 2
    events.job_verdict(job("other"), Vote.REJECT, "p", IDLE)  # another PodGroup's own bucket
    clock.seconds += REFILL_SECONDS
    events.job_verdict(job(), Vote.REJECT, "p", IDLE)
    await events.drain()
    assert len(sink.created) == BURST + 2
    await events.stop()


async def test_a_full_queue_and_a_failing_api_server_are_counted_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = Sink(fail=RuntimeError("403 Forbidden: events is forbidden"))
    events = PodGroupEvents(sink, clock=lambda: T0)
    for i in range(QUEUE + 3):  # not started: nothing drains the queue
        events.job_verdict(job(f"j{i}"), Vote.REJECT, "p", IDLE)
    assert events.describe()["queueFull"] == 3
    with caplog.at_level(logging.WARNING, logger="caldera.events"):
        await events.start()
        await events.drain()
    assert events.describe()["failed"] == QUEUE
    assert "403 Forbidden" in (events.describe()["lastError"] or "")
    assert len([r for r in caplog.records if "not sent" in r.getMessage()]) == 1
    await events.stop()


async def test_the_framework_reports_how_each_vote_ended() -> None:
    sink = Sink()
    events = await recorder(sink)
    built = framework([("sla", Votes(Vote.ABSTAIN)), ("overcommit", Votes(Vote.REJECT))])
    fw = Framework(
        [[Slot(s.option, s.plugin, s.hooks) for s in tier] for tier in built.tiers],
        SENDS_JOB_ENQUEUED, Metrics(), events=events,
    )  # fmt: skip
    assert fw.vote(BY_VERB["jobEnqueueable"], job()) == Vote.REJECT
    await events.drain()
    [event] = sink.created
    assert event["message"] == "overcommit: rejects it (jobEnqueueable)"  # no reason given
    await events.stop()


async def test_off_by_default_and_on_when_configured_with_its_counts_in_debug_session() -> None:
    assert create_app(ServeOptions.of(CalderaConfig())).runtime.events is None
    on = create_app(
        ServeOptions.of(CalderaConfig(explainEvents=True, explainEventsKubeconfig="/nonexistent"))
    )
    assert isinstance(on.runtime.events, PodGroupEvents)
    transport = httpx.ASGITransport(app=on)
    async with httpx.AsyncClient(transport=transport, base_url="http://caldera") as client:
        session = (await client.get("/debug/session")).json()
    assert session["podGroupEvents"] == {"sent": 0, "aggregated": 0, "rateLimited": 0,
                                         "queueFull": 0, "failed": 0, "lastError": None}  # fmt: skip


async def test_the_kubernetes_sink_creates_then_patches_as_the_api_server_expects(
    tmp_path: Path,
) -> None:
    api = EventsApi()
    await api.start()
    try:
        events = PodGroupEvents(KubeEventSink(api.kubeconfig(tmp_path / "kubeconfig")))
        await events.start()
        for verdict in (Vote.REJECT, Vote.PERMIT, Vote.REJECT):
            events.job_verdict(job(), verdict, "overcommit", IDLE)
        await events.drain()
        await events.stop()
    finally:
        await api.stop()
    assert events.describe()["failed"] == 0, events.describe()
    (m1, p1, _, created), (m2, _, _, _), (m3, p3, kind, patch) = api.requests
    assert (m1, p1, m2, m3) == ("POST", "/api/v1/namespaces/team-a/events", "POST", "PATCH")
    assert created["involvedObject"]["kind"] == "PodGroup" and created["reason"] == REJECTED
    assert p3 == f"/api/v1/namespaces/team-a/events/{created['metadata']['name']}"
    assert kind == "application/strategic-merge-patch+json" and patch["count"] == 2


async def test_a_failing_api_server_is_a_degraded_feature_until_an_event_goes_through() -> None:
    """With the app's feature health attached (app/server/runtime.py), each send reports its
    outcome: the failure (made an ERROR once by app/server/features.py), then the recovery."""
    sink = Sink(fail=RuntimeError("403 Forbidden"))
    events = await recorder(sink)
    outcomes: list[str | None] = []
    events.health = outcomes.append
    events.job_verdict(job("a"), Vote.REJECT, "p", IDLE)
    await events.drain()
    sink.fail = None
    events.job_verdict(job("b"), Vote.REJECT, "p", IDLE)
    await events.drain()
    assert outcomes == ["RuntimeError: 403 Forbidden", None]
    await events.stop()


def test_the_kubernetes_sink_says_at_start_when_it_has_no_kubeconfig(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    problem = KubeEventSink(str(missing)).problem()
    assert problem is not None and str(missing) in problem
