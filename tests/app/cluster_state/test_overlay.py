"""allocate/deallocate as Volcano's statements send them, and what survives the session."""

from __future__ import annotations

import msgspec
import pytest

from app.cluster_state.overlay import AllocationOverlay, Placement
from schemas.api import TaskInfo, TaskStatus
from schemas.k8s import ObjectMeta, Pod


def task(status: TaskStatus, node: str = "n1") -> TaskInfo:
    return TaskInfo(UID="u1", Status=status, NodeName=node)


A, D = "allocate", "deallocate"

CASES = [
    (
        "Statement.Allocate, committed",
        [(A, TaskStatus.Allocated)],
        Placement("n1", TaskStatus.Binding),
    ),
    ("unallocate (rollback)", [(A, TaskStatus.Allocated), (D, TaskStatus.Pending)], None),
    ("Pipelined is never dispatched", [(A, TaskStatus.Pipelined)], None),
    (
        "Statement.Evict, committed",
        [(D, TaskStatus.Releasing)],
        Placement("n1", TaskStatus.Releasing),
    ),
    ("unevict (rollback)", [(D, TaskStatus.Releasing), (A, TaskStatus.Running)], None),
]


@pytest.mark.parametrize(("calls", "placement"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_session_commits_what_survived(
    calls: list[tuple[str, TaskStatus]], placement: Placement | None
) -> None:
    overlay = AllocationOverlay(clock=lambda: 0.0)  # committed_at 0, as the expected ones
    for verb, status in calls:
        (overlay.allocate if verb == A else overlay.deallocate)(task(status))
    assert overlay.placements() == {}  # pending until the session closes
    overlay.close_session()
    assert overlay.placements().get("u1") == placement


def test_a_placement_lasts_until_the_cluster_shows_it() -> None:
    overlay = AllocationOverlay()
    overlay.allocate(task(TaskStatus.Allocated))
    overlay.close_session()
    overlay.close_session()  # a later session that said nothing about it
    assert len(overlay) == 1
    overlay.settle({"u1"})
    assert overlay.placements() == {}


def test_a_later_rollback_forgets_an_earlier_placement() -> None:
    overlay = AllocationOverlay()
    overlay.allocate(task(TaskStatus.Allocated))
    overlay.close_session()
    overlay.deallocate(task(TaskStatus.Pending))
    overlay.close_session()
    assert overlay.placements() == {}


def test_a_placement_never_seen_expires() -> None:
    """A failed bind is resynced by Volcano from the API server; Caldera cannot see it, so a
    placement the cluster never shows is forgotten after the TTL."""
    now = [0.0]
    overlay = AllocationOverlay(ttl_seconds=120, clock=lambda: now[0])
    overlay.allocate(task(TaskStatus.Allocated))
    overlay.close_session()
    now[0] = 119.0
    assert "u1" in overlay.placements()
    now[0] = 121.0
    assert overlay.placements() == {}
    assert overlay.expired == 1


def test_an_allocation_leaves_its_node_in_volcanos_pod_whatever_became_of_it() -> None:
    """``Statement.Allocate`` writes the node into the pod object Volcano's cache holds, and a
    rollback does not clear it (overlay.py): kept as a Pending placement with the pod's version,
    beneath any committed placement, until the cluster shows the pod moved on."""
    overlay = AllocationOverlay(clock=lambda: 0.0)
    tried = TaskInfo(
        UID="u1",
        Status=TaskStatus.Allocated,
        NodeName="n1",
        Pod=Pod(metadata=ObjectMeta(resourceVersion="7")),
    )
    overlay.allocate(tried)
    overlay.deallocate(task(TaskStatus.Pending))  # the gang was discarded
    overlay.close_session()
    assert overlay.placements() == {"u1": Placement("n1", TaskStatus.Pending, pod_version="7")}
    assert len(overlay) == 0  # no placement for the cluster to show
    overlay.allocate(msgspec.structs.replace(tried, NodeName="n2"))
    overlay.close_session()
    assert overlay.placements() == {"u1": Placement("n2", TaskStatus.Binding)}
    overlay.settle({"u1"})
    assert overlay.placements() == {}


def test_an_allocation_without_its_pod_writes_no_node() -> None:
    overlay = AllocationOverlay()
    overlay.allocate(task(TaskStatus.Allocated))
    overlay.deallocate(task(TaskStatus.Pending))
    overlay.close_session()
    assert overlay.placements() == {}


def test_a_comparison_settles_only_the_placements_it_was_given() -> None:
    """Compare mode derives off the event loop while the next session goes on: a pod whose
    written node that derivation found stale may be allocated again meanwhile (``bench churn``:
    its new node then went unkept, a ``task.Pod`` difference not in flight). Settling with
    ``seen`` forgets only what the derivation was given."""
    overlay = AllocationOverlay(clock=lambda: 0.0)
    tried = TaskInfo(
        UID="u1",
        Status=TaskStatus.Allocated,
        NodeName="n1",
        Pod=Pod(metadata=ObjectMeta(resourceVersion="7")),
    )
    overlay.allocate(tried)
    overlay.deallocate(task(TaskStatus.Pending))
    overlay.close_session()
    seen = overlay.placements()  # the comparison's freeze; the pod is at version 8 by then
    again = msgspec.structs.replace(
        tried, NodeName="n2", Pod=Pod(metadata=ObjectMeta(resourceVersion="8"))
    )
    overlay.allocate(again)  # the next session, while the comparison runs
    overlay.close_session()
    overlay.settle({"u1"}, seen=seen)  # the comparison found the version-7 node stale
    assert overlay.placements() == {"u1": Placement("n2", TaskStatus.Binding)}
    overlay.settle({"u1"}, seen=overlay.placements())  # bound since: the Binding goes...
    assert overlay.placements() == {"u1": Placement("n2", TaskStatus.Pending, pod_version="8")}
    overlay.settle({"u1"})  # ...and the written node with the next derivation
    assert overlay.placements() == {}
