"""Evidence that the calling Volcano differs from volcanoVersion: each signal from the captured
Volcano 1.15 bodies and the protocol examples of each dialect."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from app.config import load_config_text
from app.extender import Extender
from app.metrics import Metrics
from app.session import SessionManager
from tests.examples import CAPTURED_BODIES, example_bytes

CAPTURED_1_15 = (CAPTURED_BODIES / "volcano-1.15" / "onSessionOpen.request.json").read_bytes()


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
    body = (CAPTURED_BODIES / "volcano-1.15" / "allocateFunc.request.json").read_bytes()
    job = (CAPTURED_BODIES / "volcano-1.15" / "jobEnqueueable.request.json").read_bytes()
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
    job = (CAPTURED_BODIES / "volcano-1.15" / "jobEnqueueable.request.json").read_bytes()
    ext.handle("jobEnqueued", job)
    assert signals(metrics) == {}


# --- volcanoVersion: auto -----------------------------------------------------------------------


def auto_extender() -> Extender:
    config = load_config_text(
        "volcanoVersion: auto\ntiers: [{plugins: [{name: overcommit}]}]", "t.yaml"
    )
    metrics = Metrics()
    return Extender(config, SessionManager(config, metrics), metrics)


@pytest.mark.parametrize(
    ("body", "inferred", "said"),
    [
        (CAPTURED_1_15, "1.15", "tasks carry DRAResreq"),
        (example_bytes("head", "onSessionOpen.request.json"), "1.16", "PodAnnotations"),
        (example_bytes("v1.9", "onSessionOpen.request.json"), "1.8", "follows the oldest, 1.8"),
    ],
    ids=["captured 1.15", "head example", "1.9 example (1.8-1.9 look alike)"],
)
def test_auto_infers_the_release_from_the_snapshot(body: bytes, inferred: str, said: str) -> None:
    ext = auto_extender()
    assert ext.release.name == "1.15"  # the newest stable until a snapshot says otherwise
    ext.handle("onSessionOpen", body)
    assert ext.release.name == inferred
    assert ext.sessions.current is not None
    assert ext.sessions.current.ssn.release.name == inferred  # the plugins were built for it
    assert said in ext.release_watch.inferred
    assert ext.release_watch.evidence == {}  # inferring is not a mismatch


def test_auto_answers_predicate_in_the_inferred_shape() -> None:
    ext = auto_extender()
    ext.handle("onSessionOpen", example_bytes("v1.9", "onSessionOpen.request.json"))
    answer = ext.handle("predicate", example_bytes("v1.9", "predicate.request.json"))
    assert answer == b'{"status":[]}'


def test_auto_a_verb_raises_the_floor_for_the_next_session() -> None:
    ext = auto_extender()
    job = (CAPTURED_BODIES / "volcano-1.15" / "jobEnqueueable.request.json").read_bytes()
    ext.handle("onSessionOpen", CAPTURED_1_15)
    ext.handle("jobEnqueued", job)
    assert ext.release.name == "1.16" and "jobEnqueued" in ext.release_watch.inferred
    ext.handle("onSessionOpen", CAPTURED_1_15)
    assert ext.release.name == "1.16"  # the verb proved more than the snapshot can


def test_auto_follows_1_6_to_the_shared_reclaimable_path() -> None:
    ext = auto_extender()
    assert "/" in ext.routes()  # registered up front: the release is not known yet
    v16 = example_bytes("v1.9", "onSessionOpen.request.json").replace(
        b'"Capacity":', b'"Capability":'
    )
    ext.handle("onSessionOpen", v16)
    assert ext.release.name == "1.6" and "Capability" in ext.release_watch.inferred
    job = example_bytes("v1.9", "jobEnqueueable.request.json")
    assert ext.handle("reclaimable", job) in (b'{"status":1}', b'{"status":0}', b'{"status":-1}')
