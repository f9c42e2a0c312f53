"""Compare mode on Volcano v1.14.1's captured onSessionOpen body and objects built to match it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.cluster_state.compare import compare, counts_by_kind
from app.cluster_state.derive import derive
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
    }
