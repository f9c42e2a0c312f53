"""Cluster mode's staleness and its held answers (app/cluster_state/staleness.py, issue 49)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from app.cluster_state.staleness import Staleness, held_answer
from plugins.api.extension_points import BY_VERB, EXTENSION_POINTS
from plugins.api.release import Release
from plugins.pdb.kube import ReflectorStatus


@dataclass
class FakeReflector:
    name: str
    status: ReflectorStatus = field(default_factory=ReflectorStatus)
    config: Any = None


def staleness(*reflectors: FakeReflector, now: list[float], limit: float = 30.0) -> Staleness:
    return Staleness(lambda: reflectors, limit, "/etc/kc", monotonic=lambda: now[0])  # type: ignore[arg-type,return-value]


def failing(reflector: FakeReflector, since: float, errors: int = 3) -> None:
    reflector.status.failing_since = since
    reflector.status.errors_in_a_row = errors
    reflector.status.last_error = "ConnectError: refused"


# (case, seconds each of pods and nodes has been failing (None: working), stale collections)
CASES = [
    ("every watch works, however quiet", None, None, []),
    ("a blip within the limit", 29.0, None, []),
    ("one watch broken past the limit", 31.0, 2.0, ["pods"]),
    ("both past it", 31.0, 45.0, ["pods", "nodes"]),
]


@pytest.mark.parametrize(("case", "pods", "nodes", "stale"), CASES, ids=[c[0] for c in CASES])
def test_stale_is_a_watch_broken_past_the_limit(
    case: str, pods: float | None, nodes: float | None, stale: list[str]
) -> None:
    now = [100.0]
    watches = FakeReflector("pods"), FakeReflector("nodes")
    for reflector, seconds in zip(watches, (pods, nodes), strict=True):
        if seconds is not None:
            failing(reflector, now[0] - seconds)
    view = staleness(*watches, now=now)
    reasons = view.stale()
    assert bool(reasons) is bool(stale), case
    said = " ".join(reasons)
    for collection in ("pods", "nodes"):
        assert (f"{collection} for " in said) is (collection in stale), case
    assert len(view.broken()) == (pods is not None) + (nodes is not None)
    described = view.describe()
    assert described["stale"] is bool(stale)
    if stale:
        assert described["reason"].startswith(
            "the cluster view is stale: watches of an API server not reached yet"
            " (sessionStateKubeconfig /etc/kc) failing past sessionStateMaxStaleness 30s: pods"
        )


def test_the_change_is_logged_once_each_way(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    pods = FakeReflector("pods")
    view = staleness(pods, now=now)
    failing(pods, 50.0)
    with caplog.at_level(logging.WARNING, logger="caldera.session_state"):
        for _ in range(3):
            assert view.stale()
        pods.status.failing_since = None
        for _ in range(3):
            assert not view.stale()
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    assert "ConnectError: refused" in caplog.records[0].getMessage()


RELEASES = [Release(1, 16), Release(1, 9), Release(1, 7)]
HELD = {
    # verb: the decoded held answer, or None where the verb is answered as usual
    "onSessionOpen": None,
    "onSessionClose": None,
    # not {}: Volcano reads a missing nodeScore as an error and places nothing from the gradient
    "prioritize": {"nodeScore": {}, "errorMessage": ""},
    "preemptable": {"status": 1, "victims": []},
    "reclaimable": {"status": 1, "victims": []},
    "jobEnqueueable": {"status": -1},
    "jobEnqueued": {},
    "queueOverused": {"overused": True},
    "jobReady": {"status": False},
    "allocate": None,
    "deallocate": None,
}
"""Each is the answer that admits, places and evicts nothing: Permit with no victims ends the
extender's tier with none, Reject keeps the job out, an overused queue is skipped, a job that
is not ready is not committed."""


@pytest.mark.parametrize("verb", [p.verb for p in EXTENSION_POINTS if p.verb != "predicate"])
def test_each_verb_held(verb: str) -> None:
    held = held_answer(BY_VERB[verb], Release(1, 16), "stale")
    assert (msgspec.json.decode(held) if held is not None else None) == HELD[verb]


@pytest.mark.parametrize("release", RELEASES, ids=[r.name for r in RELEASES])
def test_the_predicate_is_held_as_a_failure_in_each_release_shape(release: Release) -> None:
    held = held_answer(BY_VERB["predicate"], release, "Caldera's view is stale")
    assert held is not None
    answer = msgspec.json.decode(held)
    text = msgspec.json.encode(answer).decode()
    assert "Caldera's view is stale" in text  # not the pass answer of any shape
    if "code" in answer:
        assert answer["code"] == 3  # unresolvable: preemption does not try the node either


def test_every_verb_has_a_held_answer_said() -> None:
    assert set(HELD) | {"predicate"} == {p.verb for p in EXTENSION_POINTS}
