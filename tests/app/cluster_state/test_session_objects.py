"""Volcano's in-session changes replayed on a session's objects (identifiers mode): each event
leaves the objects as the cluster's own state would show the same placement, checked field by
field with compare mode's comparison against a derivation of that state (an oracle that never
runs :meth:`SessionObjects.apply`), and a discarded change leaves them as they were."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.cluster_state.compare import compare
from app.cluster_state.derive import derive
from app.cluster_state.session_objects import SessionObjects, UnknownObject, restrict
from app.errors import RequestError
from schemas.api import TaskStatus
from schemas.identifiers import SessionOpenIds
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import cluster
from tests.app.cluster_state.test_compare import matching_objects

PENDING = ("ns1/pg-pending", "ns1-worker-0")
RUNNING = ("ns1/pg-running", "ns1-runner-0")


def derived(change: Any = None) -> OnSessionOpenRequest:
    objects = matching_objects()
    if change is not None:
        change(objects)
    return derive(cluster(**objects)).snapshot


def state_of(objects: SessionObjects, base: OnSessionOpenRequest) -> OnSessionOpenRequest:
    return msgspec.structs.replace(base, Jobs=objects.jobs, Nodes=objects.nodes)


def _no_scalars(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and not any(value.values()))


def differences(a: OnSessionOpenRequest, b: OnSessionOpenRequest) -> set[tuple[str, str, str]]:
    """compare mode's differences, but for a scalar map of zeros against none: Go's
    ``Resource.Add`` creates the map (``pods``) and ``Sub`` leaves its keys at 0, so Volcano's
    own objects carry ``{"pods": 0}`` after a change and its discard, where a derivation that
    never added has none; no plugin tells them apart."""
    return {
        (d.kind, d.object, d.path)
        for d in compare(a, b)
        if not (d.path == ".ScalarResources" and _no_scalars(d.sent) and _no_scalars(d.derived))
    }


def _bound_to(node: str) -> Any:
    def change(objects: dict[str, Any]) -> None:
        objects["pods"][0]["spec"]["nodeName"] = node

    return change


def _deleting(objects: dict[str, Any]) -> None:
    objects["pods"][1]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def test_an_allocation_is_the_task_placed_as_the_cluster_shows_it() -> None:
    """Allocated on node2: node2's Idle, Used and Tasks and the job's Allocated are those of the
    pod bound there; only the task's status says Allocated where the cluster says Bound."""
    base = derived()
    objects = SessionObjects(base, "s1")
    task = objects.apply(*PENDING, "node2", "Allocated")
    assert task.Status == TaskStatus.Allocated and task.NodeName == "node2"
    assert task.Pod is not None and task.Pod.spec is not None
    assert task.Pod.spec.nodeName == "node2"  # Statement.Allocate writes it into the pod
    assert differences(state_of(objects, base), derived(_bound_to("node2"))) == {
        ("task.Status", "ns1/pg-pending/ns1-worker-0", ""),
    }
    node2 = objects.nodes["node2"]
    assert node2.Used is not None and node2.Used.MilliCPU == 1000
    assert objects.jobs["ns1/pg-pending"].Allocated.MilliCPU == 1000  # type: ignore[union-attr]


def test_a_discarded_allocation_leaves_the_objects_as_they_were_but_the_pods_node() -> None:
    """unallocate: the task Pending on no node, the node and job as before; the node written
    into the pod stays (Volcano's unallocate does not clear it: overlay.py)."""
    base = derived()
    objects = SessionObjects(base, "s1")
    objects.apply(*PENDING, "node2", "Allocated")
    task = objects.apply(*PENDING, "node2", "Pending")
    assert task.NodeName == "" and task.Status == TaskStatus.Pending
    assert differences(state_of(objects, base), derived()) == {
        ("task.Pod", "ns1/pg-pending/ns1-worker-0", ".spec.nodeName"),
    }


def test_an_eviction_is_the_task_releasing_and_its_discard_undoes_it() -> None:
    base = derived()
    objects = SessionObjects(base, "s1")
    objects.apply(*RUNNING, "node1", "Releasing")
    node1 = objects.nodes["node1"]
    assert node1.Releasing is not None and node1.Releasing.MilliCPU == 1000
    # The cluster shows an eviction as the pod deleting: Releasing there too.
    assert differences(state_of(objects, base), derived(_deleting)) == {
        ("task.Pod", "ns1/pg-running/ns1-runner-0", ".metadata.deletionTimestamp"),
    }
    objects.apply(*RUNNING, "node1", "Running")
    assert differences(state_of(objects, base), derived()) == set()


def test_a_pipelined_task_counts_in_pipelined_only() -> None:
    base = derived()
    objects = SessionObjects(base, "s1")
    before = derived().Nodes["node2"]  # type: ignore[index]
    task = objects.apply(*PENDING, "node2", "Pipelined")
    node2 = objects.nodes["node2"]
    assert node2.Pipelined is not None and node2.Pipelined.MilliCPU == 1000
    assert node2.Idle == before.Idle and node2.Used == before.Used
    assert node2.Tasks is not None and "ns1/worker-0" in node2.Tasks
    assert objects.jobs["ns1/pg-pending"].Allocated.MilliCPU == 0  # type: ignore[union-attr]
    assert task.Pod is not None and task.Pod.spec is not None and task.Pod.spec.nodeName == ""
    objects.apply(*PENDING, "node2", "Pending")
    assert differences(state_of(objects, base), derived()) == set()


def test_the_derived_objects_are_never_changed() -> None:
    """They are shared with the next session's incremental derivation: copy on write."""
    base = derived()
    objects = SessionObjects(base, "s1")
    objects.apply(*PENDING, "node2", "Allocated")
    objects.apply(*RUNNING, "node1", "Releasing")
    assert differences(base, derived()) == set()
    assert objects.nodes["node2"] is not base.Nodes["node2"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda o: o.job("ns1/ghost"), "job 'ns1/ghost' is not in the session s1"),
        (lambda o: o.task("ns1/pg-pending", "x"), "task 'x' is not in job 'ns1/pg-pending'"),
        (lambda o: o.node("node9"), "node 'node9' is not in the session s1"),
        (lambda o: o.queue("q9"), "queue 'q9' is not in the session s1"),
        (lambda o: o.apply(*PENDING, "node9", "Allocated"), "node 'node9'"),
    ],
    ids=["job", "task", "node", "queue", "event's node"],
)
def test_an_object_the_session_does_not_hold_is_409(call: Any, message: str) -> None:
    objects = SessionObjects(derived(), "s1")
    with pytest.raises(UnknownObject, match=message) as raised:
        call(objects)
    assert raised.value.status == 409


def test_a_status_that_is_no_task_status_is_refused() -> None:
    objects = SessionObjects(derived(), "s1")
    with pytest.raises(RequestError, match=r"'Placed' is not an api\.TaskStatus name"):
        objects.apply(*PENDING, "node2", "Placed")


def test_the_roster_restricts_the_session_and_says_what_differs() -> None:
    roster = SessionOpenIds(
        session="s1", jobs=["ns1/pg-pending", "ns1/ghost"], nodes=["node1"], queues=None
    )
    restricted, difference = restrict(derived(), roster)
    assert list(restricted.Jobs or {}) == ["ns1/pg-pending"]
    assert list(restricted.Nodes or {}) == ["node1"]
    assert list(restricted.Queues or {}) == ["q1"]  # no queues in the roster: all kept
    assert difference.missing == {"jobs": ["ns1/ghost"]}
    assert difference.extra == {"jobs": 1, "nodes": 1}
