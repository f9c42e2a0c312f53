"""resource-strategy-fit through the real server, in Volcano's order for one allocation:
onSessionOpen, predicate per node, prioritize over the nodes that passed, allocate (which
the plugin ignores), then a prioritize that sees the node's new usage."""

from __future__ import annotations

from typing import Any

import pytest

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, post, resource, task

GI = 2**30
GPU = "nvidia.com/gpu"

PLUGIN = """\
name: resource-strategy-fit
arguments:
  resourceStrategyFitWeight: 10
  resources:
    nvidia.com/*: {type: MostAllocated, weight: 2}
    cpu: {type: LeastAllocated, weight: 1}
  sra: {enable: true, resources: nvidia.com/gpu, weight: 1}
  proportional:
    enable: true
    resources: nvidia.com/gpu
    resourceProportion: {nvidia.com/gpu.cpu: 2, nvidia.com/gpu.memory: 4}
"""


def node(
    name: str, idle: dict[str, Any], used: dict[str, Any], alloc: dict[str, Any]
) -> dict[str, Any]:
    return {
        "Name": name,
        "Node": {"metadata": {"name": name}},
        "State": {"Phase": 1, "Reason": ""},
        "Releasing": resource(),
        "Idle": idle,
        "Used": used,
        "Allocatable": alloc,
        "Capacity": alloc,
        "Tasks": {},
    }


def gpu_node(name: str, used_cpu: float, used_gpu: float) -> dict[str, Any]:
    alloc = resource(8000, 32 * GI, {"pods": 110, GPU: 4000})
    used = resource(used_cpu, 0, {"pods": 1, GPU: used_gpu})
    idle = resource(8000 - used_cpu, 32 * GI, {"pods": 109, GPU: 4000 - used_gpu})
    return node(name, idle, used, alloc)


CPU_NODE = node(
    "cpu-1",
    resource(16000, 64 * GI, {"pods": 110}),
    resource(),
    resource(16000, 64 * GI, {"pods": 110}),
)


def pod(name: str, cpu: float, memory: float, scalars: dict[str, float]) -> dict[str, Any]:
    body = task("ml", name, "train", status=TASK_PENDING, phase="Pending")
    body["Resreq"] = resource(cpu, memory, {"pods": 1, **scalars})
    return body


@pytest.mark.parametrize("version", ["1.13", "1.15"])
async def test_resource_strategy_fit_through_the_server(
    caldera_server: StartCaldera, version: str
) -> None:
    server = await caldera_server(config(PLUGIN, version=version))
    nodes = [gpu_node("gpu-a", 2000, 1000), gpu_node("gpu-b", 0, 0), CPU_NODE]
    opened = {"Jobs": {}, "Nodes": {n["Name"]: n for n in nodes}, "Queues": {},
              "NamespaceInfo": {}, "RevocableNodes": {}}  # fmt: skip
    assert await post(server, "onSessionOpen", opened) == {}

    # A CPU-only task asking 6 cores: on gpu-b the 4 idle GPUs keep 8 cores, so it fails (code 3,
    # preemption cannot help); gpu-a (3 idle GPUs keep 6 of its 6 idle cores) fails too.
    cpu_task = pod("cpu-big", 6000, 8 * GI, {})
    for target in nodes[:2]:
        answer = await post(server, "predicate", {"task": cpu_task, "node": target})
        assert answer == {"status": f"proportional of resource {GPU} check failed", "code": 3}
    assert await post(server, "predicate", {"task": cpu_task, "node": CPU_NODE}) == {
        "status": "",
        "code": 0,
    }
    # Only the CPU node passed; prioritize: cpu (16000-6000)/16000 = 0.625 -> 625, and SRA
    # 1 * 100 * 1 = 100 for a node without GPUs.
    scores = await post(server, "prioritize", {"task": cpu_task, "nodes": [CPU_NODE]})
    assert scores == {"nodeScore": {"cpu-1": 725.0}, "errorMessage": ""}

    # A GPU task passes every proportional check and prefers the busier GPU node.
    gpu_task = pod("gpu-1", 1000, GI, {GPU: 1000})
    for target in nodes:
        assert (await post(server, "predicate", {"task": gpu_task, "node": target}))["code"] == 0
    scores = (await post(server, "prioritize", {"task": gpu_task, "nodes": nodes}))["nodeScore"]
    # gpu-a: cpu (8000-3000)/8000 = 0.625; gpu (1000+1000)*2/4000 = 1.0 -> 1.625/3 * 1000;
    # gpu-b: cpu 0.875; gpu 0.5 -> 1.375/3 * 1000; cpu-1 has no GPU: the gpu term is 0 but its
    # weight counts, cpu 15/16 -> 0.9375/3 * 1000. SRA is 0 everywhere: GPU nodes hold the
    # scarce resource, and cpu-1 lacks a resource the task requests.
    assert scores == pytest.approx({"gpu-a": 1625 / 3, "gpu-b": 1375 / 3, "cpu-1": 937.5 / 3})
    assert max(scores, key=scores.__getitem__) == "gpu-a"

    # allocate: nothing to record; the next prioritize reads the usage Volcano sends.
    allocated = {**gpu_task, "NodeName": "gpu-a", "Status": 2}
    assert await post(server, "allocate", {"task": allocated}) == {"errorMessage": ""}
    busier = gpu_node("gpu-a", 3000, 2000)
    scores = (await post(server, "prioritize", {"task": gpu_task, "nodes": [busier]}))["nodeScore"]
    # cpu (8000-4000)/8000 = 0.5; gpu 3000*2/4000 = 1.5 -> 2/3 * 1000
    assert scores == pytest.approx({"gpu-a": 2000 / 3})
    # A node the task would overflow scores 0.
    full = gpu_node("gpu-a", 3000, 4000)
    scores = (await post(server, "prioritize", {"task": gpu_task, "nodes": [full]}))["nodeScore"]
    assert scores == {"gpu-a": 0.0}
