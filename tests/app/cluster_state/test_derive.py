"""The derivation against Volcano v1.14.1's cache: Kubernetes objects in, snapshot fields out."""

from __future__ import annotations

from typing import Any

import pytest

from app.cluster_state.derive import Settings, derive, task_status
from app.cluster_state.overlay import Placement
from schemas.api import JobInfo, NodeInfo, Resource, TaskInfo, TaskStatus
from tests.app.cluster_state.objects import (
    cluster,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    quota,
)

GI = 2**30


def only_job(**objects: Any) -> JobInfo:
    snapshot = derive(cluster(**objects)).snapshot
    assert snapshot.Jobs is not None and len(snapshot.Jobs) == 1
    return next(iter(snapshot.Jobs.values()))


def only_task(**objects: Any) -> TaskInfo:
    job = only_job(**objects)
    assert job.Tasks is not None and len(job.Tasks) == 1
    return next(iter(job.Tasks.values()))


def the_node(name: str, **objects: Any) -> NodeInfo:
    snapshot = derive(cluster(**objects)).snapshot
    assert snapshot.Nodes is not None
    return snapshot.Nodes[name]


# --- task status: getTaskStatus (helpers.go) ------------------------------------------------

STATUS_CASES = [
    ("pending, unscheduled", dict(phase="Pending"), TaskStatus.Pending),
    ("pending on a node is Bound", dict(phase="Pending", node="n1"), TaskStatus.Bound),
    ("running", dict(phase="Running", node="n1"), TaskStatus.Running),
    ("running and deleting", dict(phase="Running", node="n1", deleting=True), TaskStatus.Releasing),
    ("pending and deleting", dict(phase="Pending", deleting=True), TaskStatus.Releasing),
    ("succeeded", dict(phase="Succeeded", node="n1"), TaskStatus.Succeeded),
    ("failed, even deleting", dict(phase="Failed", node="n1", deleting=True), TaskStatus.Failed),
    ("unknown phase", dict(phase="Unknown", node="n1"), TaskStatus.Unknown),
    ("no phase", dict(phase=""), TaskStatus.Unknown),
]


@pytest.mark.parametrize(
    ("pod_fields", "status"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES]
)
def test_task_status_from_the_pod(pod_fields: dict[str, Any], status: TaskStatus) -> None:
    task = only_task(
        pods=[pod("p", group="pg", **pod_fields)],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    assert task.Status == status
    assert (
        task_status(
            pod_fields["phase"], pod_fields.get("deleting", False), pod_fields.get("node", "")
        )
        == status
    )


PLACEMENT_CASES = [
    (
        "allocated, not yet bound: Binding on the node",
        dict(phase="Pending"),
        Placement("n1", TaskStatus.Binding),
        TaskStatus.Binding,
        "n1",
        False,
    ),
    (
        "bound since: the cluster shows it, the placement settles",
        dict(phase="Pending", node="n1"),
        Placement("n1", TaskStatus.Binding),
        TaskStatus.Bound,
        "n1",
        True,
    ),
    (
        "evicted, not yet deleting: Releasing",
        dict(phase="Running", node="n1"),
        Placement("n1", TaskStatus.Releasing),
        TaskStatus.Releasing,
        "n1",
        False,
    ),
    (
        "evicted and deleting: settles",
        dict(phase="Running", node="n1", deleting=True),
        Placement("n1", TaskStatus.Releasing),
        TaskStatus.Releasing,
        "n1",
        True,
    ),
    (
        "allocated to a node the cache does not have: refused, Pending",
        dict(phase="Pending"),
        Placement("gone", TaskStatus.Binding),
        TaskStatus.Pending,
        "",
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod_fields", "placement", "status", "node_name", "settled"),
    [c[1:] for c in PLACEMENT_CASES],
    ids=[c[0] for c in PLACEMENT_CASES],
)
def test_placements_told_by_allocate_and_deallocate(
    pod_fields: dict[str, Any],
    placement: Placement,
    status: TaskStatus,
    node_name: str,
    settled: bool,
) -> None:
    objects = cluster(
        pods=[pod("p", group="pg", requests={"cpu": "1"}, **pod_fields)],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    derived = derive(objects, placements={"ns1-p": placement})
    job = derived.snapshot.Jobs["ns1/pg"]  # type: ignore[index]
    task = job.Tasks["ns1-p"]  # type: ignore[index]
    assert (task.Status, task.NodeName) == (status, node_name)
    assert ("ns1-p" in derived.settled) is settled
    n1 = derived.snapshot.Nodes["n1"]  # type: ignore[index]
    on_node = status in (TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Releasing)
    assert n1.Used == Resource(
        MilliCPU=1000 if on_node else 0, Memory=0, ScalarResources={"pods": 1} if on_node else None
    )
    assert job.Allocated.MilliCPU == (
        1000 if status in (TaskStatus.Binding, TaskStatus.Bound) else 0
    )  # type: ignore[union-attr]


def test_a_binding_task_that_does_not_fit_its_node_is_refused() -> None:
    """``AddTask`` refuses a Binding task beyond the node's Idle; ``AddBindTask`` reverts it."""
    objects = cluster(
        pods=[
            pod("big", group="pg", phase="Running", node="n1", requests={"cpu": "3"}),
            pod("p", group="pg", requests={"cpu": "2"}),
        ],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    derived = derive(objects, placements={"ns1-p": Placement("n1", TaskStatus.Binding)})
    task = derived.snapshot.Jobs["ns1/pg"].Tasks["ns1-p"]  # type: ignore[index]
    assert (task.Status, task.NodeName) == (TaskStatus.Pending, "")
    assert derived.snapshot.Nodes["n1"].Idle.MilliCPU == 1000  # type: ignore[index, union-attr]


def test_placements_of_pods_gone_settle() -> None:
    derived = derive(cluster(), placements={"vanished": Placement("n1", TaskStatus.Binding)})
    assert derived.settled == {"vanished"}


# --- task fields: NewTaskInfo (job_info.go) ---------------------------------------------------

TASK_CASES = [
    ("priority defaults to 1", dict(), "Priority", 1),
    ("spec.priority", dict(priority=50), "Priority", 50),
    (
        "task-priority annotation wins",
        dict(priority=50, annotations={"volcano.sh/task-priority": "7"}),
        "Priority",
        7,
    ),
    (
        "invalid task-priority is ignored",
        dict(priority=50, annotations={"volcano.sh/task-priority": "7x"}),
        "Priority",
        50,
    ),
    (
        "task-priority beyond int32 is ignored",
        dict(annotations={"volcano.sh/task-priority": "4294967296"}),
        "Priority",
        1,
    ),
    (
        "role from the annotation",
        dict(annotations={"volcano.sh/task-spec": "ps"}, labels={"volcano.sh/task-spec": "w"}),
        "TaskRole",
        "ps",
    ),
    ("role from the label", dict(labels={"volcano.sh/task-spec": "w"}), "TaskRole", "w"),
    ("no requests is best effort", dict(), "BestEffort", True),
    ("requests are not best effort", dict(requests={"cpu": "100m"}), "BestEffort", False),
    ("scheduling gates", dict(extra_spec={"schedulingGates": [{"name": "g"}]}), "SchGated", True),
    ("Job from the group annotation", dict(), "Job", "ns1/pg"),
]


@pytest.mark.parametrize(
    ("pod_fields", "field", "expected"), [c[1:] for c in TASK_CASES], ids=[c[0] for c in TASK_CASES]
)
def test_task_fields(pod_fields: dict[str, Any], field: str, expected: Any) -> None:
    task = only_task(
        pods=[pod("p", group="pg", **pod_fields)], podgroups=[podgroup("pg")], queues=[queue("q1")]
    )
    assert getattr(task, field) == expected


RESREQ_CASES = [
    (
        "containers summed, pods 1",
        dict(requests={"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}),
        Resource(1500, GI, {"nvidia.com/gpu": 1000, "pods": 1}),
    ),
    (
        "init container larger than the sum",
        dict(
            requests={"cpu": "1"},
            extra_spec={"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]},
        ),
        Resource(3000, 0, {"pods": 1}),
    ),
    (
        "sidecar adds to the containers",
        dict(
            requests={"cpu": "1"},
            extra_spec={
                "initContainers": [
                    {
                        "name": "s",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "500m"}},
                    }
                ]
            },
        ),
        Resource(1500, 0, {"pods": 1}),
    ),
    (
        "overhead",
        dict(requests={"cpu": "1"}, extra_spec={"overhead": {"cpu": "250m"}}),
        Resource(1250, 0, {"pods": 1}),
    ),
    (
        "resized in place: the larger of spec and status",
        dict(
            requests={"cpu": "1"},
            extra_status={
                "containerStatuses": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]
            },
        ),
        Resource(2000, 0, {"pods": 1}),
    ),
    (
        "infeasible resize: status and allocated only",
        dict(
            requests={"cpu": "4"},
            extra_status={
                "conditions": [
                    {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
                ],
                "containerStatuses": [
                    {
                        "name": "main",
                        "resources": {"requests": {"cpu": "1"}},
                        "allocatedResources": {"cpu": "1"},
                    }
                ],
            },
        ),
        Resource(1000, 0, {"pods": 1}),
    ),
]


@pytest.mark.parametrize(
    ("pod_fields", "resreq"), [c[1:] for c in RESREQ_CASES], ids=[c[0] for c in RESREQ_CASES]
)
def test_task_resource_request(pod_fields: dict[str, Any], resreq: Resource) -> None:
    task = only_task(
        pods=[pod("p", group="pg", **pod_fields)], podgroups=[podgroup("pg")], queues=[queue("q1")]
    )
    assert task.Resreq == resreq


# --- which pods the cache keeps (cache.go addEventHandler, event_handlers.go) -----------------


def test_pods_of_other_schedulers_count_only_once_bound() -> None:
    objects = cluster(
        pods=[
            pod("mine", group="pg", requests={"cpu": "1"}),
            pod(
                "daemon",
                scheduler="default-scheduler",
                phase="Running",
                node="n1",
                requests={"cpu": "1"},
            ),
            pod("theirs", scheduler="default-scheduler", requests={"cpu": "1"}),
            pod("done", group="pg", phase="Succeeded", node="n1", requests={"cpu": "1"}),
        ],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    snapshot = derive(objects).snapshot
    n1 = snapshot.Nodes["n1"]  # type: ignore[index]
    assert sorted(n1.Tasks or {}) == ["ns1/daemon"]  # a terminated task is not on its node
    assert n1.Used == Resource(1000, 0, {"pods": 1})
    assert n1.Idle == Resource(3000, 8 * GI, {"pods": 9}, 10)
    assert n1.Tasks["ns1/daemon"].Job == ""  # type: ignore[index]
    assert sorted(snapshot.Jobs["ns1/pg"].Tasks or {}) == ["ns1-done", "ns1-mine"]  # type: ignore[index]
    assert derive(objects, Settings(scheduler_names=("other",))).snapshot.Jobs[
        "ns1/pg"
    ].Tasks.keys() == {"ns1-done"}  # type: ignore[index, union-attr]


def test_jobs_need_a_podgroup_and_an_existing_queue() -> None:
    objects = cluster(
        pods=[pod("orphan", group="nopg")],
        podgroups=[
            podgroup("pg-ok"),
            podgroup("pg-noqueue", queue="missing"),
            podgroup("pg-default", queue=""),
        ],
        queues=[queue("q1"), queue("default")],
    )
    snapshot = derive(objects).snapshot
    assert sorted(snapshot.Jobs or {}) == ["ns1/pg-default", "ns1/pg-ok"]
    assert snapshot.Jobs["ns1/pg-default"].Queue == "default"  # type: ignore[index]
    assert (
        derive(objects, Settings(default_queue="q1")).snapshot.Jobs["ns1/pg-default"].Queue == "q1"
    )  # type: ignore[index]


# --- job fields: SetPodGroup (job_info.go), Snapshot (cache.go) -------------------------------

JOB_CASES = [
    ("MinAvailable is minMember", dict(min_member=3), {}, "MinAvailable", 3),
    ("priority of the PodGroup's class", dict(priority_class="high"), {}, "Priority", 1000),
    ("no class: the global default", dict(), {"global_default": True}, "Priority", 10),
    ("no class and no default: 0", dict(), {}, "Priority", 0),
    (
        "unknown class: the global default",
        dict(priority_class="nope"),
        {"global_default": True},
        "Priority",
        10,
    ),
    (
        "waiting time",
        dict(annotations={"volcano.sh/sla-waiting-time": "10m"}),
        {},
        "WaitingTime",
        600 * 10**9,
    ),
    (
        "waiting time, old key",
        dict(annotations={"sla-waiting-time": "1h"}),
        {},
        "WaitingTime",
        3600 * 10**9,
    ),
    (
        "invalid waiting time falls back to the old key",
        dict(annotations={"volcano.sh/sla-waiting-time": "soon", "sla-waiting-time": "2s"}),
        {},
        "WaitingTime",
        2 * 10**9,
    ),
    (
        "non-positive waiting time is none",
        dict(annotations={"volcano.sh/sla-waiting-time": "-1s"}),
        {},
        "WaitingTime",
        None,
    ),
    ("no waiting time", dict(), {}, "WaitingTime", None),
    (
        "task min available",
        dict(min_task_member={"ps": 1, "worker": 2}),
        {},
        "TaskMinAvailableTotal",
        3,
    ),
    ("preemptable label", dict(labels={"volcano.sh/preemptable": "true"}), {}, "Preemptable", True),
    (
        "preemptable annotation wins",
        dict(
            annotations={"volcano.sh/preemptable": "false"},
            labels={"volcano.sh/preemptable": "true"},
        ),
        {},
        "Preemptable",
        False,
    ),
    (
        "revocable zone from preemptable",
        dict(annotations={"volcano.sh/preemptable": "T"}),
        {},
        "RevocableZone",
        "*",
    ),
    (
        "budget",
        dict(annotations={"volcano.sh/jdb-max-unavailable": "20%"}),
        {},
        "Budget.MaxUnavailable",
        "20%",
    ),
    ("queue", dict(queue="q1"), {}, "Queue", "q1"),
]


@pytest.mark.parametrize(
    ("pg_fields", "default_class", "field", "expected"),
    [c[1:] for c in JOB_CASES],
    ids=[c[0] for c in JOB_CASES],
)
def test_job_fields(
    pg_fields: dict[str, Any], default_class: dict[str, Any], field: str, expected: Any
) -> None:
    classes = [priority_class("high", 1000)]
    if default_class:
        classes.append(priority_class("everyone", 10, **default_class))
    job = only_job(
        podgroups=[podgroup("pg", **pg_fields)], queues=[queue("q1")], priority_classes=classes
    )
    value: Any = job
    for part in field.split("."):
        value = getattr(value, part)
    assert value == expected


def test_job_totals_count_allocated_statuses() -> None:
    job = only_job(
        pods=[
            pod("pending", group="pg", requests={"cpu": "1"}),
            pod("bound", group="pg", node="n1", requests={"cpu": "2"}),
            pod("running", group="pg", phase="Running", node="n1", requests={"cpu": "4"}),
            pod(
                "releasing",
                group="pg",
                phase="Running",
                node="n1",
                deleting=True,
                requests={"cpu": "8"},
            ),
            pod("failed", group="pg", phase="Failed", node="n1", requests={"cpu": "16"}),
        ],
        nodes=[node("n1", {"cpu": "64"})],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    assert job.TotalRequest == Resource(31000, 0, {"pods": 5})
    assert job.Allocated == Resource(6000, 0, {"pods": 2})


# --- nodes: NewNodeInfo, AddTask (node_info.go) -----------------------------------------------


def test_node_resources() -> None:
    n1 = the_node(
        "n1",
        nodes=[
            node(
                "n1",
                {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "2"},
                capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
            )
        ],
        pods=[
            pod("r", phase="Running", node="n1", requests={"cpu": "1", "nvidia.com/gpu": "1"}),
            pod("x", phase="Running", node="n1", deleting=True, requests={"cpu": "500m"}),
        ],
    )
    assert n1.Allocatable == Resource(4000, 8 * GI, {"pods": 110, "nvidia.com/gpu": 2000}, 110)
    assert n1.Capacity == Resource(8000, 16 * GI, {"pods": 110}, 110)
    assert n1.Used == Resource(1500, 0, {"pods": 2, "nvidia.com/gpu": 1000})
    assert n1.Releasing == Resource(500, 0, {"pods": 1})
    assert n1.Idle == Resource(2500, 8 * GI, {"pods": 108, "nvidia.com/gpu": 1000}, 110)
    assert n1.State is not None and n1.State.Phase == 1
    assert sorted(n1.Tasks or {}) == ["ns1/r", "ns1/x"]


def test_node_oversubscription_and_revocable_zone() -> None:
    n1 = the_node(
        "n1",
        nodes=[
            node(
                "n1",
                {"cpu": "4"},
                labels={"volcano.sh/revocable-zone": "rz1"},
                annotations={
                    "volcano.sh/oversubscription-cpu": "1000",
                    "volcano.sh/oversubscription-memory": "x",
                },
            )
        ],
    )
    assert n1.Allocatable == Resource(5000, 0)
    assert n1.RevocableZone == "rz1"


def test_pods_bound_to_unwatched_nodes_leave_no_node() -> None:
    snapshot = derive(cluster(pods=[pod("p", phase="Running", node="ghost")])).snapshot
    assert snapshot.Nodes == {}


# --- queues (queue_info.go) and namespaces (namespace_info.go) -------------------------------


def test_queue_info() -> None:
    snapshot = derive(
        cluster(
            queues=[
                queue(
                    "q1",
                    weight=3,
                    capability={"cpu": "8"},
                    deserved={"cpu": "4"},
                    guarantee={"cpu": "2"},
                    annotations={
                        "volcano.sh/hierarchy": "root/a",
                        "volcano.sh/hierarchy-weights": "1/3",
                    },
                )
            ]
        )
    ).snapshot
    q1 = snapshot.Queues["q1"]  # type: ignore[index]
    assert (q1.UID, q1.Name, q1.Weight, q1.Hierarchy, q1.Weights) == (
        "q1",
        "q1",
        3,
        "root/a",
        "1/3",
    )
    assert q1.Queue is not None
    spec = q1.Queue.spec
    assert (spec.capability, spec.deserved) == ({"cpu": "8"}, {"cpu": "4"})
    assert spec.guarantee is not None and spec.guarantee.resource == {"cpu": "2"}


def test_namespace_quotas() -> None:
    snapshot = derive(
        cluster(
            quotas=[
                quota("a", "ns1", {"cpu": "10"}, {"cpu": "2"}),
                quota("b", "ns1", {"memory": "1Gi"}),
                quota("c", "ns2", {"pods": "5"}, {"pods": "0"}),
            ]
        )
    ).snapshot
    infos = snapshot.NamespaceInfo or {}
    assert sorted(infos) == ["ns1", "ns2"]
    status = infos["ns1"].QuotaStatus or {}
    assert sorted(status) == ["a", "b"]
    assert (status["a"].hard, status["a"].used) == ({"cpu": "10"}, {"cpu": "2"})
    assert (status["b"].hard, status["b"].used) == ({"memory": "1Gi"}, None)


def _pending_pod_cluster() -> Any:
    return cluster(
        pods=[pod("p", group="pg", requests={"cpu": "1"})],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )


def test_the_node_a_rolled_back_allocation_wrote_into_volcanos_pod_stays_with_that_version() -> (
    None
):
    """``Statement.Allocate`` sets ``task.Pod.Spec.NodeName`` on the pod object Volcano's cache
    shares with the session (``TaskInfo.Clone`` copies the pointer) and ``unallocate`` leaves it:
    a discarded gang's pod is sent Pending, without a task ``NodeName``, its pod's
    ``spec.nodeName`` the node last tried, while the pod is at that version (``bench churn``
    found these as ``task.Pod`` differences that were not in flight)."""
    objects = _pending_pod_cluster()
    written = Placement("n1", TaskStatus.Pending, pod_version="1")
    derived = derive(objects, placements={"ns1-p": written})
    task = derived.snapshot.Jobs["ns1/pg"].Tasks["ns1-p"]  # type: ignore[index]
    assert (task.Status, task.NodeName) == (TaskStatus.Pending, "")
    assert task.Pod is not None and task.Pod.spec is not None
    assert task.Pod.spec.nodeName == "n1"
    assert "ns1-p" not in derived.settled
    assert derived.snapshot.Nodes["n1"].Used.MilliCPU == 0  # type: ignore[index, union-attr]
    # The watched object is shared by every derivation: it is not written to.
    assert objects.pods["ns1/p"].pod.spec.nodeName == ""  # type: ignore[union-attr]

    # An update of the pod since (another resourceVersion) replaced Volcano's object: gone.
    moved = derive(
        objects, placements={"ns1-p": Placement("n1", TaskStatus.Pending, pod_version="0")}
    )
    task = moved.snapshot.Jobs["ns1/pg"].Tasks["ns1-p"]  # type: ignore[index]
    assert task.Pod is not None and task.Pod.spec is not None
    assert task.Pod.spec.nodeName == ""
    assert "ns1-p" in moved.settled


def test_a_binding_task_carries_its_node_in_its_pod_as_volcanos_cache_does() -> None:
    derived = derive(
        _pending_pod_cluster(), placements={"ns1-p": Placement("n1", TaskStatus.Binding)}
    )
    task = derived.snapshot.Jobs["ns1/pg"].Tasks["ns1-p"]  # type: ignore[index]
    assert (task.Status, task.NodeName) == (TaskStatus.Binding, "n1")
    assert task.Pod is not None and task.Pod.spec is not None
    assert task.Pod.spec.nodeName == "n1"
