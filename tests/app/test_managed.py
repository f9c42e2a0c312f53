"""managedResources: Volcano's IsInterested (requests or limits, containers or init containers)."""

from __future__ import annotations

import pytest

from app.managed import is_interested
from schemas.api import TaskInfo
from schemas.k8s import Container, Pod, PodSpec, ResourceRequirements


def pod_task(containers=None, init=None) -> TaskInfo:
    return TaskInfo(UID="t", Pod=Pod(spec=PodSpec(containers=containers, initContainers=init)))


def c(requests=None, limits=None) -> Container:
    return Container(resources=ResourceRequirements(requests=requests, limits=limits))


GPU = ["nvidia.com/gpu"]


@pytest.mark.parametrize(
    ("task", "managed", "expected"),
    [
        (pod_task([c({"cpu": "1"})]), [], True),
        (pod_task([c({"cpu": "1"})]), GPU, False),
        (pod_task([c({"nvidia.com/gpu": "1"})]), GPU, True),
        (pod_task([c(limits={"nvidia.com/gpu": "1"})]), GPU, True),
        (pod_task([c({"cpu": "1"})], [c({"nvidia.com/gpu": "1"})]), GPU, True),
        (pod_task([c({"cpu": "1"}), c(limits={"nvidia.com/gpu": "2"})]), GPU, True),
        (pod_task([Container(name="no-resources")]), GPU, False),
        (TaskInfo(UID="no-pod"), GPU, False),
        (pod_task([c({"example.com/fpga": "1"})]), [*GPU, "example.com/fpga"], True),
    ],
    ids=[
        "no managed resources: every task",
        "cpu-only pod",
        "gpu request",
        "gpu limit",
        "gpu in init container",
        "gpu in second container",
        "container without resources",
        "task without pod",
        "any of several",
    ],
)
def test_is_interested(task: TaskInfo, managed: list[str], expected: bool) -> None:
    assert is_interested(task, managed) is expected
