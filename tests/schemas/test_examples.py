"""The payload views against every example body: the hand-built protocol examples of all three
dialects (tests/fixtures/protocol-examples) and the bodies captured from Volcano's own
json.Marshal (plugins/api/captured/volcano-1.14 from v1.14.1, plugins/api/captured/volcano-1.15 from
v1.15.1)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from plugins.api import testing
from schemas import requests as rq
from schemas import responses as rs
from schemas.api import TaskStatus
from tests.examples import CAPTURED_BODIES, EXAMPLES, example_bytes, example_json

REQUEST_TYPES = {
    "onSessionOpen": rq.OnSessionOpenRequest,
    "onSessionClose": rq.OnSessionCloseRequest,
    "predicate": rq.PredicateRequest,
    "prioritize": rq.PrioritizeRequest,
    "preemptable": rq.EvictRequest,
    "reclaimable": rq.EvictRequest,
    "jobEnqueueable": rq.JobRequest,
    "jobEnqueued": rq.JobRequest,
    "jobReady": rq.JobRequest,
    "queueOverused": rq.QueueOverusedRequest,
    "allocateFunc": rq.EventHandlerRequest,
    "deallocateFunc": rq.EventHandlerRequest,
}
RESPONSE_TYPES = {
    "predicate": rs.PredicateResponse,
    "prioritize": rs.PrioritizeResponse,
    "preemptable": rs.EvictResponse,
    "reclaimable": rs.EvictResponse,
    "jobEnqueueable": rs.JobEnqueueableResponse,
    "jobEnqueued": rs.Empty,
    "jobReady": rs.JobReadyResponse,
    "queueOverused": rs.QueueOverusedResponse,
    "allocateFunc": rs.EventHandlerResponse,
    "deallocateFunc": rs.EventHandlerResponse,
    "onSessionOpen": rs.Empty,
    "onSessionClose": rs.Empty,
}


# Directories of bodies captured from Volcano's extender plugin, one per release.
CAPTURED_RELEASES = tuple(f"volcano-{release}" for release in testing.CAPTURED_RELEASES)


def request_files() -> list[Path]:
    files = sorted(EXAMPLES.glob("*/*.request.json"))
    for release in CAPTURED_RELEASES:
        files += sorted((CAPTURED_BODIES / release).glob("*.request.json"))
    return files


@pytest.mark.parametrize("path", request_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_request_decodes(path: Path) -> None:
    verb = path.name.split(".")[0]
    decoded = msgspec.json.decode(path.read_bytes(), type=REQUEST_TYPES[verb])
    raw = json.loads(path.read_bytes())
    if verb == "onSessionOpen":
        assert set(decoded.Jobs or {}) == set(raw.get("Jobs") or {})
        assert set(decoded.Nodes or {}) == set(raw.get("Nodes") or {})
        for key, job in (decoded.Jobs or {}).items():
            assert key == job.UID
            assert job.PodGroup is not None
            assert job.PodGroup.metadata.name == raw["Jobs"][key]["Name"]
            assert job.PodGroup.status.phase  # both PodGroup shapes fold into .status
            for uid, task in (job.Tasks or {}).items():
                assert uid == task.UID and task.Status in {s.value for s in TaskStatus}
        for name, queue in (decoded.Queues or {}).items():
            assert queue.Queue is not None and queue.Queue.metadata.name == name
        for name, node in (decoded.Nodes or {}).items():
            assert node.Name == name and node.Allocatable is not None
            for key, task in (node.Tasks or {}).items():
                assert key == f"{task.Namespace}/{task.Name}"
    if verb in ("preemptable", "reclaimable"):
        assert len(decoded.evictees or []) == len(raw["evictees"])


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("head/*.response*.json")), ids=lambda p: p.name
)
def test_head_responses_match_our_response_types(path: Path) -> None:
    verb = path.name.split(".")[0]
    decoded = msgspec.json.decode(path.read_bytes(), type=RESPONSE_TYPES[verb])
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(path.read_bytes())


def test_older_predicate_responses_match() -> None:
    for name in ("predicate.response.pass.json", "predicate.response.reject.json"):
        msgspec.json.decode(example_bytes("v1.9", name), type=rs.PredicateResponseV18)
        msgspec.json.decode(example_bytes("v1.6-v1.7", name), type=rs.PredicateResponseV16)


def test_both_podgroup_shapes_read_the_same() -> None:
    head = msgspec.json.decode(
        example_bytes("head", "onSessionOpen.request.json"), type=rq.OnSessionOpenRequest
    )
    v19 = msgspec.json.decode(
        example_bytes("v1.9", "onSessionOpen.request.json"), type=rq.OnSessionOpenRequest
    )
    for snapshot in (head, v19):
        job = next(iter((snapshot.Jobs or {}).values()))
        assert job.PodGroup is not None
        assert job.PodGroup.spec.min_member == 2
        assert job.PodGroup.spec.min_resources == {
            "cpu": "4",
            "memory": "8Gi",
            "nvidia.com/gpu": "2",
        }
        assert job.PodGroup.spec.queue == "default"
        assert job.PodGroup.metadata.namespace == "team-a"
        assert job.PodGroup.metadata.creationTimestamp is not None
        queue = next(iter((snapshot.Queues or {}).values())).Queue
        assert queue is not None
        assert queue.spec.capability == {"nvidia.com/gpu": "16"}
        assert queue.spec.deserved == {"nvidia.com/gpu": "8"}
        assert queue.status.state == "Open"


def test_resources_are_milli_units_and_pods_units() -> None:
    request = msgspec.json.decode(
        example_bytes("head", "predicate.request.json"), type=rq.PredicateRequest
    )
    assert request.task.Resreq is not None
    scalars = request.task.Resreq.ScalarResources or {}
    assert scalars.get("pods") == 1
    raw = example_json("head", "predicate.request.json")
    assert request.task.Resreq.MilliCPU == raw["task"]["Resreq"]["MilliCPU"]


def test_the_legacy_twins_have_the_canonical_fields_under_go_names() -> None:
    """schemas/legacy.py derives the v1.6–v1.13 shapes from the current ones: the same fields in
    the same order (canonical() relies on it), untagged Go names except a queue's tagged keys."""
    from schemas import api

    for twin, kind in [
        (api.LegacyPodGroupSpec, api.PodGroupSpec),
        (api.LegacyPodGroupStatus, api.PodGroupStatus),
        (api.LegacyQueueSpec, api.QueueSpec),
        (api.LegacyQueueStatus, api.QueueStatus),
    ]:
        assert twin.__struct_fields__ == kind.__struct_fields__
    assert api.LegacyPodGroupSpec.__struct_encode_fields__ == (
        "MinMember", "MinTaskMember", "Queue", "PriorityClassName", "MinResources",
        "NetworkTopology", "SubGroupPolicy",
    )  # fmt: skip
    assert api.LegacyPodGroupStatus.__struct_encode_fields__[-1] == "Conditions"
    assert "ExtendClusters" in api.LegacyQueueSpec.__struct_encode_fields__
    assert api.LegacyQueueSpec.__struct_encode_fields__[:4] == (
        "Weight", "Capability", "Reclaimable", "guarantee",
    )  # fmt: skip
