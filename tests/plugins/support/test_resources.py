"""Enqueue-accounting helpers of :mod:`plugins.support.resources`: ``GetInqueueResource``
(``pkg/scheduler/plugins/util/util_test.go``, TestGetInqueueResource), ``DeductSchGatedResources``
and ``LessEqualWithDimensionAndResourcesName`` (``pkg/scheduler/api``)."""

from __future__ import annotations

import pytest

from plugins.support.resources import (
    QUEUE_ALLOCATION_GATE,
    calculate_allocated_task_num,
    deduct_sch_gated,
    get_inqueue_resource,
    get_min_resources,
    less_equal_with_dimension_and_names,
    new_resource,
    sub_clamped_in_place,
)
from schemas.api import (
    JobInfo,
    PodGroup,
    PodGroupSpec,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.k8s import Pod, PodSchedulingGate, PodSpec, ResourceList

GPU = "nvidia.com/gpu"


def job_with_min(
    min_resources: ResourceList | None, tasks: list[TaskInfo] | None = None
) -> JobInfo:
    return JobInfo(
        Name="job",
        Namespace="ns",
        PodGroup=PodGroup(spec=PodGroupSpec(min_member=1, min_resources=min_resources)),
        Tasks={t.UID: t for t in tasks or []},
    )


def gated_task(uid: str, resreq: Resource, gates: list[str]) -> TaskInfo:
    return TaskInfo(
        UID=uid,
        Status=TaskStatus.Pending,
        Resreq=resreq,
        SchGated=bool(gates),
        Pod=Pod(spec=PodSpec(schedulingGates=[PodSchedulingGate(name=g) for g in gates])),
    )


# --- TestGetInqueueResource -------------------------------------------------------------------
# Only the expected keys are compared, as upstream does (row 3 expects an empty scalar map).


@pytest.mark.parametrize(
    ("min_resources", "allocated", "expected"),
    [
        (
            {"cpu": "4", "memory": "4096", GPU: "8"},
            Resource(),
            Resource(MilliCPU=4000, Memory=4096, ScalarResources={GPU: 8000}),
        ),
        (
            {"cpu": "4", "memory": "4096", GPU: "8"},
            Resource(MilliCPU=1000, Memory=1024, ScalarResources={GPU: 4000}),
            Resource(MilliCPU=3000, Memory=3072, ScalarResources={GPU: 4000}),
        ),
        (
            {GPU: "2"},
            Resource(ScalarResources={GPU: 2000}),
            Resource(ScalarResources={}),
        ),
        (
            {"cpu": "4", "pods": "10"},
            Resource(MilliCPU=1000, ScalarResources={"pods": 4}),
            Resource(MilliCPU=3000, ScalarResources={"pods": 6}),
        ),
    ],
    ids=[
        "nothing allocated yet: full request reserved",
        "partial GPU allocation: remainder reserved in milli-units",
        "GPU fully allocated: no scalar reserved",
        "partial pods allocation: remainder reserved in whole units",
    ],
)
def test_get_inqueue_resource(
    min_resources: ResourceList, allocated: Resource, expected: Resource
) -> None:
    got = get_inqueue_resource(job_with_min(min_resources), allocated)
    assert got.MilliCPU == expected.MilliCPU
    assert got.Memory == expected.Memory
    for name, want in (expected.ScalarResources or {}).items():
        assert (got.ScalarResources or {}).get(name, 0.0) == want


def test_get_inqueue_resource_fully_allocated_gpu_leaves_no_entry() -> None:
    got = get_inqueue_resource(job_with_min({GPU: "2"}), Resource(ScalarResources={GPU: 2000}))
    assert got.ScalarResources == {}


@pytest.mark.parametrize(
    ("min_resources", "allocated", "expected"),
    [
        # Whole-unit Value() 8 against nothing allocated: 8, not 8000.
        ({"cpu": "4", GPU: "8"}, Resource(), Resource(MilliCPU=4000, ScalarResources={GPU: 8})),
        # 8 - 4000 (milli) is negative: nothing reserved although 4 GPUs are missing.
        (
            {GPU: "8"},
            Resource(ScalarResources={GPU: 4000}),
            Resource(ScalarResources={}),
        ),
        # pods was not a scalar name there: skipped.
        (
            {"cpu": "4", "pods": "10"},
            Resource(MilliCPU=1000, ScalarResources={"pods": 4}),
            Resource(MilliCPU=3000),
        ),
    ],
    ids=[
        "old units: gpu in whole units",
        "old units: partial gpu reserves nothing",
        "old units: pods skipped",
    ],
)
def test_get_inqueue_resource_before_5391(
    min_resources: ResourceList, allocated: Resource, expected: Resource
) -> None:
    got = get_inqueue_resource(job_with_min(min_resources), allocated, milli_scalars=False)
    assert got == expected


def test_get_inqueue_resource_skips_count_and_non_scalar_names() -> None:
    got = get_inqueue_resource(
        job_with_min({"count/pods": "3", "ephemeral-storage": "1Gi", "hugepages-2Mi": "1Mi"}),
        Resource(),
    )
    assert got == Resource(ScalarResources={"hugepages-2Mi": 1024 * 1024 * 1000})


# --- DeductSchGatedResources ------------------------------------------------------------------


def test_deduct_without_gated_tasks_returns_the_same_object() -> None:
    res = new_resource({"cpu": "2"})
    assert deduct_sch_gated(job_with_min({"cpu": "2"}), res) is res


def test_deduct_gated_tasks_floors_at_zero_and_skips_gated_only_scalars() -> None:
    job = job_with_min(
        {"cpu": "4", "memory": "1Gi"},
        [
            gated_task("t1", new_resource({"cpu": "3", "memory": "2Gi", GPU: "1"}), ["user/gate"]),
            gated_task("t2", new_resource({"cpu": "500m", "pods": "1"}), ["a", "b"]),
        ],
    )
    res = Resource(MilliCPU=4000, Memory=2**30, ScalarResources={"pods": 3})
    got = deduct_sch_gated(job, res)
    assert got == Resource(MilliCPU=500, Memory=0, ScalarResources={"pods": 2})
    assert res == Resource(MilliCPU=4000, Memory=2**30, ScalarResources={"pods": 3})


def test_deduct_volcano_queue_allocation_gate_depends_on_release() -> None:
    job = job_with_min(
        {"cpu": "4"},
        [gated_task("t1", new_resource({"cpu": "1"}), [QUEUE_ALLOCATION_GATE])],
    )
    res = new_resource({"cpu": "4"})
    assert deduct_sch_gated(job, res).MilliCPU == 4000  # v1.15+: counted as in-queue
    assert deduct_sch_gated(job, res, exclude_queue_allocation_gate=False).MilliCPU == 3000


def test_deduct_volcano_gate_plus_another_gate_is_deducted() -> None:
    job = job_with_min(
        {"cpu": "4"},
        [gated_task("t1", new_resource({"cpu": "1"}), [QUEUE_ALLOCATION_GATE, "user/gate"])],
    )
    assert deduct_sch_gated(job, new_resource({"cpu": "4"})).MilliCPU == 3000


def test_deduct_ignores_pods_only_gated_resources() -> None:
    # IsEmpty ignores pods: a gated total of {pods: 1} is empty, so nothing is deducted.
    job = job_with_min(
        {"pods": "2"}, [gated_task("t1", Resource(ScalarResources={"pods": 1}), ["g"])]
    )
    res = Resource(ScalarResources={"pods": 2})
    assert deduct_sch_gated(job, res) is res


def test_get_min_resources_and_allocated_task_num() -> None:
    statuses = [TaskStatus.Pending, TaskStatus.Pipelined, TaskStatus.Allocated, TaskStatus.Binding,
                TaskStatus.Bound, TaskStatus.Running, TaskStatus.Succeeded, TaskStatus.Releasing]  # fmt: skip
    job = job_with_min(None, [TaskInfo(UID=str(i), Status=s) for i, s in enumerate(statuses)])
    assert calculate_allocated_task_num(job) == 4
    assert get_min_resources(job) == Resource()
    assert get_min_resources(job_with_min({"cpu": "1", "pods": "2"})) == Resource(
        MilliCPU=1000, ScalarResources={"pods": 2}, MaxTaskNum=2
    )


# --- LessEqualWithDimensionAndResourcesName ---------------------------------------------------


@pytest.mark.parametrize(
    ("res", "rr", "req", "expected"),
    [
        (
            Resource(MilliCPU=6000, Memory=6e9),
            Resource(MilliCPU=7200, Memory=24 * 2**30),
            Resource(MilliCPU=2000, Memory=2e9),
            (True, []),
        ),
        (
            Resource(MilliCPU=7200, Memory=1),
            Resource(MilliCPU=7200, Memory=1),
            Resource(MilliCPU=1, Memory=1),
            (True, []),
        ),
        (
            Resource(MilliCPU=7200.5, Memory=2),
            Resource(MilliCPU=7200, Memory=1),
            Resource(MilliCPU=1, Memory=1),
            (False, ["cpu", "memory"]),
        ),
        (
            Resource(MilliCPU=9000, Memory=9e9),
            Resource(MilliCPU=1000, Memory=1e9),
            Resource(),
            (True, []),
        ),
        (
            Resource(MilliCPU=1000, ScalarResources={"pods": 100}),
            Resource(MilliCPU=1000, ScalarResources={"pods": 10}),
            Resource(MilliCPU=1000, ScalarResources={"pods": 100}),
            (True, []),
        ),
        (
            Resource(MilliCPU=1000, ScalarResources={GPU: 1000}),
            Resource(MilliCPU=1000),
            Resource(MilliCPU=1000, ScalarResources={GPU: 1000}),
            (False, [GPU]),
        ),
        (
            Resource(MilliCPU=1000),
            Resource(MilliCPU=1000, ScalarResources={GPU: -5}),
            Resource(MilliCPU=1000, ScalarResources={GPU: 1000}),
            (True, []),
        ),
        (
            Resource(MilliCPU=-1000, Memory=-5),
            Resource(MilliCPU=-2000, Memory=-10),
            Resource(MilliCPU=1000, Memory=0),
            (False, ["cpu"]),
        ),
    ],
    ids=[
        "fits",
        "equal is enough",
        "strict greater fails, names in order",
        "dimensions not requested are not compared",
        "pods never compared",
        "gpu missing from the cluster fails",
        "no scalar map on the left: scalars skipped",
        "negative idle",
    ],
)
def test_less_equal_with_dimension_and_names(
    res: Resource, rr: Resource, req: Resource, expected: tuple[bool, list[str]]
) -> None:
    assert less_equal_with_dimension_and_names(res, rr, req) == expected


def test_sub_clamped_floors_every_dimension_and_reports_each() -> None:
    seen: list[str] = []
    res = Resource(MilliCPU=1000, Memory=100, ScalarResources={"nvidia.com/gpu": 1000})
    other = Resource(MilliCPU=1500, Memory=50, ScalarResources={"nvidia.com/gpu": 2000, "pods": 1})
    sub_clamped_in_place(res, other, seen.append)
    assert (res.MilliCPU, res.Memory) == (0.0, 50)
    assert res.ScalarResources == {"nvidia.com/gpu": 0.0, "pods": 0.0}
    assert seen == ["cpu", "nvidia.com/gpu", "pods"]


def test_sub_clamped_without_underflow_reports_nothing() -> None:
    seen: list[str] = []
    res = sub_clamped_in_place(Resource(MilliCPU=2, Memory=2), Resource(MilliCPU=1), seen.append)
    assert (res.MilliCPU, res.Memory, seen) == (1, 2, [])
