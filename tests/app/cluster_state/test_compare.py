"""Compare mode on Volcano v1.14.1's captured onSessionOpen body and objects built to match it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.cluster_state.compare import compare, counts_by_kind
from app.cluster_state.derive import derive
from app.cluster_state.overlay import Placement
from schemas.api import TaskStatus
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import (
    captured_in_a_cluster,
    cluster,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    quota,
)


def captured() -> OnSessionOpenRequest:
    return msgspec.json.decode(captured_in_a_cluster(), type=OnSessionOpenRequest)


def matching_objects(**changes: Any) -> dict[str, Any]:
    """The objects Volcano's mock cache held when the body was captured (the capture's pods
    carry no schedulerName: here they have Volcano's)."""
    objects: dict[str, Any] = {
        "pods": [
            pod(
                "worker-0",
                group="pg-pending",
                requests={"cpu": "1", "memory": "1G"},
                annotations={"volcano.sh/task-spec": "worker"},
                labels={"volcano.sh/task-spec": "worker"},
            ),
            pod(
                "runner-0",
                group="pg-running",
                phase="Running",
                node="node1",
                requests={"cpu": "1", "memory": "1G"},
                labels={"volcano.sh/preemptable": "true"},
            ),
        ],
        "nodes": [node("node1"), node("node2")],
        "podgroups": [
            podgroup(
                "pg-pending",
                priority_class="high-priority",
                annotations={"volcano.sh/sla-waiting-time": "10m"},
                min_resources={"cpu": "1", "memory": "1G"},
            ),
            podgroup("pg-running", priority_class="low-priority", phase="Running"),
        ],
        "queues": [queue("q1", capability={"cpu": "8", "memory": "16Gi"}, guarantee={})],
        "quotas": [quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"})],
        "priority_classes": [
            priority_class("high-priority", 1000),
            priority_class("low-priority", 100),
        ],
    }
    objects.update(changes)
    # The capture's runner-0 has a container named "" (Volcano's test builder).
    objects["pods"][1]["spec"]["containers"][0]["name"] = ""
    return objects


def test_objects_matching_the_captured_body_show_no_difference() -> None:
    derived = derive(cluster(**matching_objects())).snapshot
    assert compare(captured(), derived) == []


def _pods(**runner: Any) -> list[dict[str, Any]]:
    fields: dict[str, Any] = dict(
        group="pg-running",
        phase="Running",
        node="node1",
        requests={"cpu": "1", "memory": "1G"},
        labels={"volcano.sh/preemptable": "true"},
    )
    fields.update(runner)
    return [
        pod(
            "worker-0",
            group="pg-pending",
            requests={"cpu": "1", "memory": "1G"},
            annotations={"volcano.sh/task-spec": "worker"},
            labels={"volcano.sh/task-spec": "worker"},
        ),
        pod("runner-0", **fields),
    ]


DIFFERENCE_CASES = [
    (
        "runner finished: its status, its job's Allocated, its node's Used, Idle and Tasks",
        dict(pods=_pods(phase="Succeeded")),
        {
            "task.Status": 1,
            "task.Pod": 1,
            "job.Allocated": 3,
            "node.Used": 3,
            "node.Idle": 3,
            "node.Tasks": 1,
        },
    ),
    (
        "a priority class changed value",
        dict(
            priority_classes=[
                priority_class("high-priority", 999),
                priority_class("low-priority", 100),
            ]
        ),
        {"job.Priority": 1},
    ),
    (
        "a node Volcano did not send",
        dict(nodes=[node("node1"), node("node2"), node("node3")]),
        {"node.extra": 1},
    ),
    (
        "a queue the cluster does not have drops its jobs",
        dict(queues=[]),
        {"job.missing": 2, "queue.missing": 1},
    ),
    (
        "quota used reported",
        dict(quotas=[quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"}, {"cpu": "1"})]),
        {"namespace.QuotaStatus": 1},
    ),
]


@pytest.mark.parametrize(
    ("changes", "kinds"), [c[1:] for c in DIFFERENCE_CASES], ids=[c[0] for c in DIFFERENCE_CASES]
)
def test_deliberate_differences_are_reported_by_kind(
    changes: dict[str, Any], kinds: dict[str, int]
) -> None:
    derived = derive(cluster(**matching_objects(**changes))).snapshot
    # Less the schedulerName the capture's pods lack (test_objects_matching_the_captured_body…).
    baseline = {
        (d.object, d.path)
        for d in compare(captured(), derive(cluster(**matching_objects())).snapshot)
    }
    changed = [d for d in compare(captured(), derived) if (d.object, d.path) not in baseline]
    assert counts_by_kind(changed) == kinds


def test_a_difference_names_the_object_the_path_and_both_values() -> None:
    derived = derive(cluster(**matching_objects(pods=_pods(phase="Succeeded")))).snapshot
    differences = {(d.kind, d.object, d.path): d for d in compare(captured(), derived)}
    status = differences[("task.Status", "ns1/pg-running/ns1-runner-0", "")]
    assert (status.sent, status.derived) == (32, 128)
    used = differences[("node.Used", "node1", ".MilliCPU")]
    assert (used.sent, used.derived) == (1000, 0)
    assert used.describe() == {
        "kind": "node.Used",
        "object": "node1",
        "path": ".MilliCPU",
        "sent": 1000,
        "derived": 0,
        # The capture's pods carry no resourceVersion, the cluster's do: not the same versions.
        "inFlight": True,
    }


# --- in flight: an object changed between Volcano's snapshot and Caldera's freeze -------------


def _at(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


def _state(**changes: Any) -> dict[str, list[dict[str, Any]]]:
    objects: dict[str, list[dict[str, Any]]] = {
        "pods": [
            _at(pod("a-0", group="a", phase="Running", node="n1", requests={"cpu": "1"}), "10"),
            _at(pod("b-0", group="b", phase="Running", node="n2", requests={"cpu": "1"}), "11"),
        ],
        "nodes": [_at(node("n1"), "1"), _at(node("n2"), "2")],
        "podgroups": [_at(podgroup("a", queue="q1"), "3"), _at(podgroup("b", queue="q1"), "4")],
        "queues": [_at(queue("q1"), "5")],
        "quotas": [quota("quota", "ns1", {"cpu": "10"}, {"cpu": "2"})],
    }
    objects.update(changes)
    return objects


def _finished(version: str) -> dict[str, Any]:
    return _at(pod("a-0", group="a", phase="Succeeded", node="n1", requests={"cpu": "1"}), version)


IN_FLIGHT_CASES = [
    (
        "a pod marked Succeeded after Volcano's snapshot: it and what derives from it",
        _state(pods=[_finished("12"), _state()["pods"][1]]),
        {"task.Status", "task.Pod", "job.Allocated", "node.Used", "node.Idle", "node.Tasks"},
        set(),
    ),
    (
        "the same pod version read otherwise: the derivation's",
        _state(pods=[_finished("10"), _state()["pods"][1]]),
        set(),
        {"task.Status", "task.Pod", "job.Allocated", "node.Used", "node.Idle", "node.Tasks"},
    ),
    (
        "a pod deleted since: every job and node it was in",
        _state(pods=_state()["pods"][1:]),
        {
            "task.missing",
            "job.Allocated",
            "job.TotalRequest",
            "node.Used",
            "node.Idle",
            "node.Tasks",
        },
        set(),
    ),
    (
        "the quota's used moved with no pod moving: the derivation's",
        _state(quotas=[quota("quota", "ns1", {"cpu": "10"}, {"cpu": "3"})]),
        set(),
        {"namespace.QuotaStatus"},
    ),
    (
        "a queue written since (its status)",
        _state(queues=[_at({**queue("q1"), "status": {"state": "Closed"}}, "6")]),
        {"queue.Queue"},
        set(),
    ),
    (
        "a node relabelled since",
        _state(nodes=[_at(node("n1", labels={"zone": "b"}), "7"), _state()["nodes"][1]]),
        {"node.Node"},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("derived_from", "in_flight", "settled"),
    [c[1:] for c in IN_FLIGHT_CASES],
    ids=[c[0] for c in IN_FLIGHT_CASES],
)
def test_differences_of_objects_that_moved_are_in_flight(
    derived_from: dict[str, list[dict[str, Any]]], in_flight: set[str], settled: set[str]
) -> None:
    """Volcano's snapshot is stood in for by the derivation of the earlier objects."""
    sent = derive(cluster(**_state())).snapshot
    assert compare(sent, derive(cluster(**_state())).snapshot) == []
    differences = compare(sent, derive(cluster(**derived_from)).snapshot)
    assert {d.kind for d in differences if d.in_flight} == in_flight
    assert {d.kind for d in differences if not d.in_flight} == settled
    assert counts_by_kind(differences, in_flight_only=True) == counts_by_kind(
        [d for d in differences if d.in_flight]
    )


def test_the_node_a_discarded_allocation_left_in_volcanos_pod_is_derived_not_a_difference() -> None:
    """Volcano's ``Statement.Allocate`` writes the node into the pod its cache holds and a
    discarded gang leaves it there (app/cluster_state/overlay.py): the snapshot's pending task
    carries it in ``Pod.spec.nodeName``, at the version both sides saw. Without the overlay's
    written node that is a ``task.Pod`` difference not in flight (what ``bench churn`` found);
    with it, none."""
    sent = captured()
    job = sent.Jobs["ns1/pg-pending"]  # type: ignore[index]
    (uid, pending), *_ = job.Tasks.items()  # type: ignore[union-attr]
    assert pending.Pod is not None and pending.Pod.spec is not None
    pending.Pod.spec.nodeName = "node2"
    assert pending.Pod.metadata is not None
    pending.Pod.metadata.resourceVersion = "1"  # the version the objects below are at
    objects = cluster(**matching_objects())
    unaware = compare(sent, derive(objects).snapshot)
    assert [(d.kind, d.path, d.in_flight) for d in unaware] == [
        ("task.Pod", ".spec.nodeName", False)
    ]
    written = Placement("node2", TaskStatus.Pending, pod_version="1")
    assert compare(sent, derive(objects, placements={uid: written}).snapshot) == []
