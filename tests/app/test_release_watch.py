"""Evidence that the calling Volcano differs from volcanoVersion: each signal from the captured
Volcano 1.15 bodies and the protocol examples of each dialect."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from app.config import load_config_text
from app.extender import Extender
from app.metrics import Metrics
from app.session import SessionManager
from tests.examples import FIXTURES, example_bytes

CAPTURED_1_15 = (FIXTURES / "volcano-1.15" / "onSessionOpen.request.json").read_bytes()


def extender(version: str) -> tuple[Extender, Metrics]:
    config = load_config_text(
        f'volcanoVersion: "{version}"\ntiers: [{{plugins: [{{name: overcommit}}]}}]', "t.yaml"
    )
    metrics = Metrics(CollectorRegistry())
    return Extender(config, SessionManager(config, metrics), metrics), metrics


def signals(metrics: Metrics) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in metrics.release_mismatch.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                found[sample.labels["signal"]] = sample.value
    return found


@pytest.mark.parametrize(
    ("version", "body", "expected"),
    [
        ("1.15", CAPTURED_1_15, set()),
        ("1.14", CAPTURED_1_15, {"task_field_from_newer_release"}),
        ("1.16", CAPTURED_1_15, {"task_field_missing"}),
        ("1.13", CAPTURED_1_15, {"task_field_from_newer_release", "podgroup_shape", "queue_shape"}),
        ("1.16", example_bytes("head", "onSessionOpen.request.json"), set()),
        ("1.9", example_bytes("v1.9", "onSessionOpen.request.json"), set()),
        (
            "1.15",
            example_bytes("v1.9", "onSessionOpen.request.json"),
            {"podgroup_shape", "queue_shape", "task_field_missing"},
        ),
    ],
    ids=[
        "1.15 body, 1.15 configured",
        "1.15 body, 1.14 configured",
        "1.15 body, 1.16 configured",
        "1.15 body, 1.13 configured",
        "head example, 1.16 configured",
        "1.9 example, 1.9 configured",
        "1.9 example, 1.15 configured",
    ],
)
def test_session_signals(version: str, body: bytes, expected: set[str]) -> None:
    ext, metrics = extender(version)
    assert ext.handle("onSessionOpen", body) == b"{}"  # it keeps answering
    assert set(signals(metrics)) == expected
    assert set(ext.release_watch.evidence) == expected


def test_verbs_the_release_cannot_send(caplog: pytest.LogCaptureFixture) -> None:
    ext, metrics = extender("1.12")
    body = (FIXTURES / "volcano-1.15" / "allocateFunc.request.json").read_bytes()
    job = (FIXTURES / "volcano-1.15" / "jobEnqueueable.request.json").read_bytes()
    with caplog.at_level("ERROR", logger="caldera.release"):
        ext.handle("allocate", body)
        ext.handle("allocate", body)
        ext.handle("jobEnqueued", job)
    assert signals(metrics) == {"allocate_verb": 2, "jobEnqueued_verb": 1}
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "release mismatch (allocate_verb)",
        "release mismatch (jobEnqueued_verb)",
    ]  # logged once per session and signal, counted every time


def test_a_release_that_has_the_verb_reports_nothing() -> None:
    ext, metrics = extender("1.16")
    job = (FIXTURES / "volcano-1.15" / "jobEnqueueable.request.json").read_bytes()
    ext.handle("jobEnqueued", job)
    assert signals(metrics) == {}
