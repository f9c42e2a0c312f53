"""A guard on the fields our views rely on: every key a view declares must really appear in the
bodies Volcano's own json.Marshal produced, for each captured release (tests/fixtures/volcano-1.14
from v1.14.1, tests/fixtures/volcano-1.15 from v1.15.1). msgspec defaults a missing key silently,
so a field renamed upstream would otherwise read as zero."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from schemas import api, k8s
from schemas.requests import EvictRequest, OnSessionOpenRequest
from tests.examples import FIXTURES
from tests.schemas.test_examples import CAPTURED_RELEASES, REQUEST_TYPES
from tests.schemas.walk import declared, walk

# One directory per Volcano release whose extender plugin produced the bodies.
CAPTURED = [FIXTURES / release for release in CAPTURED_RELEASES]

# Keys a view declares on purpose although Volcano 1.14 and 1.15 do not send them: other releases'
# spellings, and Kubernetes fields that are legitimately absent from minimal objects.
NOT_CAPTURED = {
    "PodGroup": {
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "labels",
        "annotations",
        "Spec",
        "Status",
    },
    "Queue": {"name", "uid", "creationTimestamp", "labels", "annotations", "Spec", "Status"},
    "NodeInfo": {"Capability"},
    "DisruptionBudget": {"MaxUnavilable"},
}
# The views whose every field must be seen in the captures (the ones Volcano itself defines).
VOLCANO_VIEWS = [
    api.TaskInfo,
    api.JobInfo,
    api.NodeInfo,
    api.Resource,
    api.QueueInfo,
    api.NodeState,
    api.PodGroup,
    api.Queue,
]


def captured_seen(captured: Path) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for path in sorted(captured.glob("*.request.json")):
        verb = path.name.split(".")[0]
        kind = REQUEST_TYPES[verb]
        raw = json.loads(path.read_bytes())
        walk(raw, kind, seen)
        if kind is EvictRequest:
            for evictee in raw.get("evictees") or []:
                walk(evictee, api.TaskInfo, seen)
    return seen


def test_every_release_has_captures() -> None:
    for captured in CAPTURED:
        assert (captured / "onSessionOpen.request.json").is_file(), f"no captures in {captured}"


@pytest.mark.parametrize("captured", CAPTURED, ids=lambda p: p.name)
@pytest.mark.parametrize("view", VOLCANO_VIEWS, ids=lambda v: v.__name__)
def test_every_declared_volcano_key_is_in_the_captures(view: type, captured: Path) -> None:
    seen = captured_seen(captured)
    expected = declared(view) - NOT_CAPTURED.get(view.__name__, set())
    missing = expected - seen.get(view.__name__, set())
    assert not missing, f"{view.__name__} keys never seen in {captured.name} bodies: {missing}"


def test_walk_detects_a_missing_key() -> None:
    raw = {"Jobs": {"a/b": {"UID": "a/b", "Namespace": "a"}}}
    seen = walk(raw, OnSessionOpenRequest)
    assert seen["JobInfo"] == {"UID", "Namespace"}
    assert "Priority" in declared(api.JobInfo) - seen["JobInfo"]
    assert k8s.ObjectMeta.__name__ not in seen
