"""overcommit: ``pkg/scheduler/plugins/overcommit/overcommit_test.go`` (TestOvercommitPlugin) plus
the edge cases of the reference (plugins-part1.md §5): cumulative enqueues, per-session state,
gated tasks, Running-job reservations, the pods dimension, missing scalars, the factor's
argument handling and the GetInqueueResource units per Volcano release."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import Explained, Reason, answer_of
from plugins.api.release import Release
from plugins.overcommit import OvercommitPlugin, format_resource_names
from plugins.support.resources import QUEUE_ALLOCATION_GATE, new_resource, total_allocatable
from schemas.api import (
    JobInfo,
    NodeInfo,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.k8s import Pod, PodSchedulingGate, PodSpec, ResourceList

GI = 2**30
GPU = "nvidia.com/gpu"


def make_node(name: str, allocatable: ResourceList, used: ResourceList | None = None) -> NodeInfo:
    return NodeInfo(Name=name, Allocatable=new_resource(allocatable), Used=new_resource(used))


def make_task(
    uid: str,
    resreq: ResourceList,
    status: TaskStatus = TaskStatus.Pending,
    gates: Sequence[str] = (),
) -> TaskInfo:
    return TaskInfo(
        UID=uid,
        Status=status,
        Resreq=new_resource(resreq),
        SchGated=bool(gates),
        Pod=Pod(spec=PodSpec(schedulingGates=[PodSchedulingGate(name=g) for g in gates] or None)),
    )


def make_job(
    name: str,
    phase: str,
    min_resources: ResourceList | None,
    min_member: int = 2,
    tasks: Sequence[TaskInfo] = (),
    namespace: str = "test-namespace",
) -> JobInfo:
    allocated = Resource()
    for task in tasks:
        if task.Status in (
            TaskStatus.Allocated,
            TaskStatus.Binding,
            TaskStatus.Bound,
            TaskStatus.Running,
        ):
            allocated.MilliCPU += task.Resreq.MilliCPU if task.Resreq else 0
            allocated.Memory += task.Resreq.Memory if task.Resreq else 0
            for k, v in ((task.Resreq.ScalarResources if task.Resreq else None) or {}).items():
                allocated.ScalarResources = allocated.ScalarResources or {}
                allocated.ScalarResources[k] = allocated.ScalarResources.get(k, 0.0) + v
    return JobInfo(
        UID=f"{namespace}/{name}",
        Name=name,
        Namespace=namespace,
        Queue="c1",
        MinAvailable=min_member,
        Tasks={t.UID: t for t in tasks},
        Allocated=allocated,
        PodGroup=PodGroup(
            spec=PodGroupSpec(min_member=min_member, queue="c1", min_resources=min_resources),
            status=PodGroupStatus(phase=phase),
        ),
    )


def make_session(
    nodes: Sequence[NodeInfo],
    jobs: Sequence[JobInfo],
    version: tuple[int, int] | tuple[int, int, int] = (1, 16),
) -> Session:
    node_map = {n.Name: n for n in nodes}
    return Session(
        jobs={j.UID: j for j in jobs},
        nodes=node_map,
        total_resource=total_allocatable(node_map),
        has_snapshot=True,
        release=Release.of(version),
    )


def open_plugin(arguments: dict[str, Any], ssn: Session) -> OvercommitPlugin:
    plugin = OvercommitPlugin(Arguments(arguments, plugin="overcommit"))
    plugin.on_session_open(ssn)
    return plugin


# --- TestOvercommitPlugin ---------------------------------------------------------------------
# n1 (2 CPU, 4Gi) + n2 (4 CPU, 16Gi), nothing running: total 6000m / 20Gi, used 0.
# Every PodGroup is Inqueue; the test calls JobEnqueued first, then JobEnqueueable.

N1 = make_node("n1", {"cpu": "2", "memory": "4Gi"})
N2 = make_node("n2", {"cpu": "4", "memory": "16Gi"})
NORMAL = {"cpu": "2000m", "memory": "2G"}
HUGE = {"cpu": "20000m", "memory": "20G"}


@pytest.mark.parametrize(
    ("arguments", "min_resources", "inqueue_after_enqueued", "expected"),
    [
        # idle 7200m / 24Gi; inqueue 2000m/2G at open + 2000m/2G enqueued; 6000m/6G fits.
        ({"overcommit-factor": 1.2}, NORMAL, (4000, 4e9), True),
        # 0.8 < 1 falls back to 1.2: the same arithmetic.
        ({"overcommit-factor": 0.8}, NORMAL, (4000, 4e9), True),
        # 20000m at open + 20000m enqueued + 20000m asked = 60000m > 7200m.
        ({"overcommit-factor": 1.2}, HUGE, (40000, 40e9), False),
        # No MinResources: best effort, Permit; JobEnqueued adds nothing.
        ({"overcommit-factor": 1.2}, None, (0, 0), True),
    ],
    ids=[
        "overCommitFactor is more than 0",
        "overCommitFactor is less than 0",
        "when the required resources of pg are too large",
        "when pg does not fill MinResources",
    ],
)
def test_overcommit_plugin(
    arguments: dict[str, Any],
    min_resources: ResourceList | None,
    inqueue_after_enqueued: tuple[float, float],
    expected: bool,
) -> None:
    job = make_job("pg1", "Inqueue", min_resources)
    plugin = open_plugin(arguments, make_session([N1, N2], [job]))
    assert plugin.overcommit_factor == 1.2
    assert plugin.idle_resource.MilliCPU == pytest.approx(7200)
    assert plugin.idle_resource.Memory == pytest.approx(24 * GI)

    plugin.job_enqueued(job)
    assert (
        plugin.inqueue_resource.MilliCPU,
        plugin.inqueue_resource.Memory,
    ) == inqueue_after_enqueued
    assert (answer_of(plugin.job_enqueueable(job)) == Vote.PERMIT) is expected


def test_reject_logs_the_podgroup_event_message(caplog: pytest.LogCaptureFixture) -> None:
    job = make_job("pg2", "Pending", HUGE)
    plugin = open_plugin({}, make_session([N1, N2], []))
    with caplog.at_level(logging.DEBUG, logger="caldera.plugins.overcommit"):
        assert answer_of(plugin.job_enqueueable(job)) == Vote.REJECT
    assert "resource in cluster is overused: overused cpu" in caplog.text
    assert "overused memory" not in caplog.text  # 20G <= 24Gi
    # At debug, as upstream's klog.V(4): a job held for an hour is not a line every cycle.
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


def test_format_resource_names() -> None:
    assert format_resource_names("p", "overused", []) == "p"
    assert (
        format_resource_names("p", "overused", ["cpu", GPU]) == f"p: overused cpu, overused {GPU}"
    )


# --- accounting within and across sessions ----------------------------------------------------


def test_enqueues_are_cumulative_within_a_session() -> None:
    # factor 1.0: idle 6000m. Each job asks 4000m: the first fits, the second no longer does.
    first = make_job("a", "Pending", {"cpu": "4"})
    second = make_job("b", "Pending", {"cpu": "4"})
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([N1, N2], [first, second]))
    assert (
        answer_of(plugin.job_enqueueable(second)) == Vote.PERMIT
    )  # the vote alone reserves nothing
    assert answer_of(plugin.job_enqueueable(first)) == Vote.PERMIT
    plugin.job_enqueued(first)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.REJECT


def test_a_fresh_session_resets_the_accounting() -> None:
    first = make_job("a", "Pending", {"cpu": "4"})
    second = make_job("b", "Pending", {"cpu": "4"})
    ssn = make_session([N1, N2], [first, second])
    plugin = open_plugin({"overcommit-factor": 1.0}, ssn)
    plugin.job_enqueued(first)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.REJECT
    # A new instance, as the framework builds every session, and the same instance re-opened.
    assert (
        answer_of(open_plugin({"overcommit-factor": 1.0}, ssn).job_enqueueable(second))
        == Vote.PERMIT
    )
    plugin.on_session_open(ssn)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.PERMIT


def test_inqueue_podgroups_of_the_snapshot_count() -> None:
    # 4000m already Inqueue in the snapshot: 4000 + 4000 > 6000.
    queued = make_job("queued", "Inqueue", {"cpu": "4"})
    pending = make_job("pending", "Pending", {"cpu": "4"})
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([N1, N2], [queued, pending]))
    assert plugin.inqueue_resource.MilliCPU == 4000
    assert answer_of(plugin.job_enqueueable(pending)) == Vote.REJECT


@pytest.mark.parametrize("phase", ["Pending", "Unknown", "Completed", ""])
def test_other_phases_reserve_nothing(phase: str) -> None:
    job = make_job("j", phase, {"cpu": "4"}, min_member=0)
    plugin = open_plugin({}, make_session([N1, N2], [job]))
    assert plugin.inqueue_resource == Resource()


def test_idle_is_not_clamped() -> None:
    # used 7000m on a 6000m cluster at factor 1.0: idle -1000m, even a tiny job is rejected.
    busy = make_node("n1", {"cpu": "6", "memory": "4Gi"}, used={"cpu": "7"})
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([busy], []))
    assert plugin.idle_resource.MilliCPU == -1000
    assert answer_of(plugin.job_enqueueable(make_job("j", "Pending", {"cpu": "1m"}))) == Vote.REJECT
    # A job that asks for no cpu is not compared on cpu.
    assert (
        answer_of(plugin.job_enqueueable(make_job("k", "Pending", {"memory": "1Gi"})))
        == Vote.PERMIT
    )


# --- scheduling-gated tasks -------------------------------------------------------------------


def test_gated_tasks_are_deducted_from_inqueue_not_from_the_need() -> None:
    gated = [make_task("t1", {"cpu": "1"}, gates=["example.com/wait"]),
             make_task("t2", {"cpu": "1"}, gates=["example.com/wait"])]  # fmt: skip
    queued = make_job("queued", "Inqueue", {"cpu": "4"}, tasks=gated)
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([N1, N2], [queued]))
    assert plugin.inqueue_resource.MilliCPU == 2000  # 4000 - 2 gated x 1000

    # The vote compares the full 4000m (2000 + 4000 = 6000 <= 6000), the enqueue adds 2000.
    job = make_job("job", "Pending", {"cpu": "4"}, tasks=gated)
    assert answer_of(plugin.job_enqueueable(job)) == Vote.PERMIT
    plugin.job_enqueued(job)
    assert plugin.inqueue_resource.MilliCPU == 4000


@pytest.mark.parametrize(
    ("version", "expected_inqueue"),
    [((1, 16), 4000), ((1, 15), 4000), ((1, 14), 3000), ((1, 9), 3000)],
    ids=["1.16", "1.15", "1.14 (no HasOnlyVolcanoSchedulingGate)", "1.9"],
)
def test_volcano_queue_allocation_gate(version: tuple[int, int], expected_inqueue: float) -> None:
    tasks = [make_task("t1", {"cpu": "1"}, gates=[QUEUE_ALLOCATION_GATE])]
    queued = make_job("queued", "Inqueue", {"cpu": "4"}, tasks=tasks)
    plugin = open_plugin({}, make_session([N1, N2], [queued], version))
    assert plugin.inqueue_resource.MilliCPU == expected_inqueue


# --- Running jobs -----------------------------------------------------------------------------


def running_tasks(count: int, resreq: ResourceList) -> list[TaskInfo]:
    return [make_task(f"r{i}", resreq, TaskStatus.Running) for i in range(count)]


def test_running_job_reserves_what_is_not_allocated_yet() -> None:
    # min 4 CPU, minMember 2, two Running tasks of 1 CPU: 2000m still reserved.
    running = make_job("run", "Running", {"cpu": "4"}, tasks=running_tasks(2, {"cpu": "1"}))
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([N1, N2], [running]))
    assert plugin.inqueue_resource.MilliCPU == 2000
    assert answer_of(plugin.job_enqueueable(make_job("j", "Pending", {"cpu": "4"}))) == Vote.PERMIT
    assert (
        answer_of(plugin.job_enqueueable(make_job("k", "Pending", {"cpu": "4001m"}))) == Vote.REJECT
    )


def test_running_job_below_min_member_reserves_nothing() -> None:
    running = make_job(
        "run", "Running", {"cpu": "4"}, min_member=3, tasks=running_tasks(2, {"cpu": "1"})
    )
    plugin = open_plugin({}, make_session([N1, N2], [running]))
    assert plugin.inqueue_resource == Resource()


def test_running_job_without_min_resources_reserves_nothing() -> None:
    running = make_job("run", "Running", None, min_member=1, tasks=running_tasks(1, {"cpu": "1"}))
    plugin = open_plugin({}, make_session([N1, N2], [running]))
    assert plugin.inqueue_resource == Resource()


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ((1, 16), Vote.REJECT),
        ((1, 15), Vote.REJECT),
        ((1, 15, 1), Vote.REJECT),
        ((1, 15, 0), Vote.PERMIT),
        ((1, 14), Vote.REJECT),
        ((1, 14, 3), Vote.REJECT),
        ((1, 14, 2), Vote.PERMIT),
        ((1, 14, 1), Vote.PERMIT),
        ((1, 13), Vote.PERMIT),
    ],
    ids=[
        "1.16 milli-units",
        "1.15 (the newest patch: v1.15.1 backport)",
        "1.15.1 backport",
        "1.15.0 whole units",
        "1.14 (the newest patch: v1.14.3 backport)",
        "1.14.3 backport",
        "1.14.2 whole units",
        "1.14.1 whole units",
        "1.13 whole units",
    ],
)
def test_running_job_gpu_reservation_units(
    version: tuple[int, int] | tuple[int, int, int], expected: Vote
) -> None:
    # 4 GPUs; a Running job holds 2 of its 4: idle 4000 - 2000 = 2000 milli at factor 1.0.
    # Milli-units reserve the missing 2000, so 2000 + 1000 > 2000 rejects a 1-GPU job; whole
    # units computed 4 - 2000 < 0, reserved nothing and let it in.
    node = make_node("g1", {"cpu": "8", "memory": "8Gi", GPU: "4"}, used={"cpu": "2", GPU: "2"})
    running = make_job(
        "run", "Running", {"cpu": "2", GPU: "4"}, tasks=running_tasks(2, {"cpu": "1", GPU: "1"})
    )
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([node], [running], version))
    assert answer_of(plugin.job_enqueueable(make_job("j", "Pending", {GPU: "1"}))) == expected


def test_running_job_pods_reservation_is_in_whole_units() -> None:
    running = make_job(
        "run",
        "Running",
        {"cpu": "2", "pods": "10"},
        tasks=running_tasks(2, {"cpu": "1", "pods": "1"}),
    )
    plugin = open_plugin({}, make_session([N1, N2], [running]))
    assert plugin.inqueue_resource.ScalarResources == {"pods": 8}


# --- dimensions -------------------------------------------------------------------------------


def test_pods_dimension_is_ignored() -> None:
    node = make_node("n1", {"cpu": "6", "memory": "20Gi", "pods": "10"})
    plugin = open_plugin({"overcommit-factor": 1.0}, make_session([node], []))
    assert (
        answer_of(plugin.job_enqueueable(make_job("j", "Pending", {"cpu": "1", "pods": "100"})))
        == Vote.PERMIT
    )


def test_gpu_missing_from_the_cluster_rejects(caplog: pytest.LogCaptureFixture) -> None:
    plugin = open_plugin({}, make_session([N1, N2], []))
    with caplog.at_level(logging.DEBUG, logger="caldera.plugins.overcommit"):
        assert (
            answer_of(plugin.job_enqueueable(make_job("j", "Pending", {"cpu": "1", GPU: "1"})))
            == Vote.REJECT
        )
    assert f"resource in cluster is overused: overused {GPU}" in caplog.text


def test_gpu_within_the_overcommitted_cluster_permits() -> None:
    node = make_node("g1", {"cpu": "8", "memory": "8Gi", GPU: "4"})
    plugin = open_plugin({"overcommit-factor": 1.2}, make_session([node], []))
    assert (
        answer_of(plugin.job_enqueueable(make_job("j", "Pending", {GPU: "4800m"}))) == Vote.PERMIT
    )
    assert (
        answer_of(plugin.job_enqueueable(make_job("k", "Pending", {GPU: "4801m"}))) == Vote.REJECT
    )


# --- the overcommit-factor argument -----------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "factor"),
    [
        ({}, 1.2),
        ({"overcommit-factor": 0.8}, 1.2),
        ({"overcommit-factor": 0.999}, 1.2),
        ({"overcommit-factor": 1.0}, 1.0),
        ({"overcommit-factor": "1.5"}, 1.2),
        ({"overcommit-factor": True}, 1.2),
        ({"overcommit-factor": 2}, 2.0),
        ({"overcommit-factor": 1.5}, 1.5),
    ],
    ids=[
        "default",
        "0.8 resets to 1.2",
        "0.999 resets",
        "1.0 allowed",
        "string '1.5' keeps default",
        "bool keeps default",
        "int 2",
        "float 1.5",
    ],
)
def test_overcommit_factor(arguments: dict[str, Any], factor: float) -> None:
    plugin = open_plugin(arguments, make_session([N1, N2], []))
    assert plugin.overcommit_factor == factor
    assert plugin.idle_resource.MilliCPU == pytest.approx(6000 * factor)
    # The boundary is inclusive: exactly idle fits, one milli-CPU more does not.
    limit = round(6000 * factor)
    assert (
        answer_of(plugin.job_enqueueable(make_job("j", "Pending", {"cpu": f"{limit}m"})))
        == Vote.PERMIT
    )
    assert (
        answer_of(plugin.job_enqueueable(make_job("k", "Pending", {"cpu": f"{limit + 1}m"})))
        == Vote.REJECT
    )


def test_a_reject_says_what_was_needed_against_what_was_idle() -> None:
    """The numbers behind the Reject, in the dimensions that did not fit (memory fitted)."""
    job = make_job("pg2", "Pending", HUGE)
    result = open_plugin({}, make_session([N1, N2], [])).job_enqueueable(job)
    assert isinstance(result, Explained) and result.answer == Vote.REJECT
    assert result.reason == Reason(
        "insufficient-idle",
        "needs 20 CPU with 0 CPU already admitted, 7200m CPU idle (6 CPU x 1.2 less 0 CPU in use)",
    )
