"""resource-strategy-fit: the upstream catalogues of
``pkg/scheduler/plugins/resource-strategy-fit/{resource_strategy_fit,sra,proportional}_test.go``
at v1.15.1 (Test_calculateWeight, TestScore, Test_mostRequestedScore, Test_leastRequestedScore,
TestResourceStrategyFitPlugin_OnSessionOpen, TestResourceStrategyFitPlugin, TestAllocate as far
as this plugin decides it, Test_findResourceConfigWithPrefix, TestArguments, TestNode,
Test_checkNodeResourceIsProportional), then the argument decoding and the edge cases of the
reference (plugins-part2.md §5, §7).

Session scores are computed through Caldera's own framework (``ssn.NodeOrderFn`` upstream), with
tasks and nodes built the way Volcano builds them from pods and nodes (``NewResource`` units,
``pods: 1`` added to every task)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import FitError, Session, StatusCode
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from plugins.resource_strategy_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    BaseResource,
    NotEnough,
    ResourceStrategyFit,
    ResourceStrategyFitPlugin,
    ResourcesType,
    calculate_weight,
    check_node_resource_is_proportional,
    find_resource_config_with_prefix,
    least_requested_score,
    most_requested_score,
    parse_pod_weights,
    score,
)
from plugins.support.resources import new_resource
from schemas.api import NodeInfo, Resource, TaskInfo
from schemas.k8s import ObjectMeta, Pod

EPS = 1e-8
"""Upstream's tolerance for the session scores."""

SCORING_TYPE = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHT = "volcano.sh/resource-strategy-weight"
GPU = "nvidia.com/gpu"
FOO = "example.com/foo"
T4 = "nvidia.com/t4"
A10 = "nvidia.com/a10"


def make_plugin(arguments: Mapping[str, Any]) -> ResourceStrategyFitPlugin:
    plugin = ResourceStrategyFitPlugin(Arguments(dict(arguments), plugin="resource-strategy-fit"))
    plugin.on_session_open(Session())
    return plugin


def framework_of(plugin: ResourceStrategyFitPlugin) -> Framework:
    option = PluginOption(name=plugin.name)
    return Framework([[Slot(option, plugin, plugin.hooks())]], Release(1, 15), Metrics())


def pod_task(
    name: str,
    requests: dict[str, str],
    annotations: dict[str, str] | None = None,
    namespace: str = "c1",
) -> TaskInfo:
    """A pending task as ``api.NewTaskInfo`` builds it: ``Resreq`` from the requests plus
    ``pods: 1`` (``GetPodResourceRequest``)."""
    resreq = new_resource(requests)
    resreq.ScalarResources = {**(resreq.ScalarResources or {}), "pods": 1.0}
    return TaskInfo(
        UID=f"uid-{name}",
        Job=f"{namespace}/pg1",
        Name=name,
        Namespace=namespace,
        Resreq=resreq,
        Pod=Pod(metadata=ObjectMeta(name=name, namespace=namespace, annotations=annotations)),
    )


def built_node(name: str, allocatable: dict[str, str], used: Resource | None = None) -> NodeInfo:
    """A node as ``api.NewNodeInfo`` builds it from ``status.allocatable`` (nothing on it)."""
    alloc = new_resource(allocatable)
    used = used or Resource()
    idle = Resource(
        alloc.MilliCPU - used.MilliCPU,
        alloc.Memory - used.Memory,
        dict(alloc.ScalarResources or {}),
        alloc.MaxTaskNum,
    )
    return NodeInfo(Name=name, Allocatable=alloc, Capacity=alloc, Used=used, Idle=idle)


# --- Test_calculateWeight -------------------------------------------------------------------


def strategy(kind: str, weight: int) -> dict[str, Any]:
    return {"type": kind, "weight": weight}


@pytest.mark.parametrize(
    ("arguments", "want"),
    [
        pytest.param(
            {
                "resourceStrategyFitWeight": 10,
                "resources": {"cpu": strategy("MostAllocated", 1),
                              "memory": strategy("LeastAllocated", 2)},
            },
            ResourceStrategyFit(10, {"cpu": ResourcesType(MOST_ALLOCATED, 1),
                                     "memory": ResourcesType(LEAST_ALLOCATED, 2)}),
            id="test1",
        ),
        pytest.param(
            {"resources": {"cpu": strategy("MostAllocated", 1),
                           "memory": strategy("LeastAllocated", 2)}},
            ResourceStrategyFit(10, {"cpu": ResourcesType(MOST_ALLOCATED, 1),
                                     "memory": ResourcesType(LEAST_ALLOCATED, 2)}),
            id="test2",
        ),
        pytest.param(
            {"resourceStrategyFitWeight": 10},
            ResourceStrategyFit(10, {"cpu": ResourcesType(LEAST_ALLOCATED, 1),
                                     "memory": ResourcesType(LEAST_ALLOCATED, 1)}),
            id="test3",
        ),
        pytest.param(
            {
                "ResourceStrategyFitPlusWeight": 10,
                "resources": {"cpu": strategy("LeastAllocated", 1),
                              "*": strategy("MostAllocated", 2)},
            },
            ResourceStrategyFit(10, {"cpu": ResourcesType(LEAST_ALLOCATED, 1)}),
            id="test4",
        ),
        pytest.param(
            {
                "ResourceStrategyFitPlusWeight": 10,
                "resources": {"nvidia.com/gpu/*": strategy("MostAllocated", 3),
                              "cloudml.gpu**": strategy("LeastAllocated", 2)},
            },
            ResourceStrategyFit(10, {"nvidia.com/gpu/*": ResourcesType(MOST_ALLOCATED, 3)}),
            id="test5",
        ),
        pytest.param(
            {
                "ResourceStrategyFitPlusWeight": 10,
                "resources": {"memory": strategy("LeastAllocated", 1),
                              "cloudml.*.gpu": strategy("MostAllocated", 2),
                              "*.com/gpu": strategy("MostAllocated", 3)},
            },
            ResourceStrategyFit(10, {"memory": ResourcesType(LEAST_ALLOCATED, 1)}),
            id="test6",
        ),
        pytest.param(
            {
                "ResourceStrategyFitPlusWeight": 10,
                "resources": {"nvidia.com/gpu/*": strategy("MostAllocated", 3),
                              "example.com/foo/*": strategy("LeastAllocated", 2),
                              "*test*resource*": strategy("MostAllocated", 4),
                              "*": strategy("LeastAllocated", 1)},
            },
            ResourceStrategyFit(10, {"nvidia.com/gpu/*": ResourcesType(MOST_ALLOCATED, 3),
                                     "example.com/foo/*": ResourcesType(LEAST_ALLOCATED, 2)}),
            id="test7",
        ),
    ],
)  # fmt: skip
def test_calculate_weight(arguments: dict[str, Any], want: ResourceStrategyFit) -> None:
    assert calculate_weight(arguments) == want
    assert make_plugin(arguments).fit == want


# --- TestScore ------------------------------------------------------------------------------


def bare_task(milli_cpu: float, memory: float, annotations: dict[str, str]) -> TaskInfo:
    """Upstream ``buildTaskInfo``: Resreq with cpu and memory only (no ``pods``)."""
    return TaskInfo(
        Resreq=Resource(MilliCPU=milli_cpu, Memory=memory),
        Pod=Pod(metadata=ObjectMeta(annotations=annotations)),
    )


def bare_node(used_cpu: float, used_mem: float, alloc_cpu: float, alloc_mem: float) -> NodeInfo:
    """Upstream ``buildNodeInfo``."""
    return NodeInfo(
        Used=Resource(MilliCPU=used_cpu, Memory=used_mem),
        Allocatable=Resource(MilliCPU=alloc_cpu, Memory=alloc_mem),
    )


def fit(
    weight: int, cpu: tuple[str, int] | None, memory: tuple[str, int] | None
) -> ResourceStrategyFit:
    resources = {}
    if cpu is not None:
        resources["cpu"] = ResourcesType(*cpu)
    if memory is not None:
        resources["memory"] = ResourcesType(*memory)
    return ResourceStrategyFit(weight, resources)


LEAST = LEAST_ALLOCATED
MOST = MOST_ALLOCATED


@pytest.mark.parametrize(
    ("task", "node", "weight", "want"),
    [
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 1), (LEAST, 1)), 400, id="test1"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 400, 400),
                     fit(10, (LEAST, 1), (LEAST, 1)), 250, id="test2"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (MOST, 1), (MOST, 1)), 600, id="test3"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 400, 400),
                     fit(10, (MOST, 1), (MOST, 1)), 750, id="test4"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 2), (MOST, 1)), 466.66666667, id="test5"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 1), (MOST, 2)), 533.33333333, id="test6"),
        pytest.param(bare_task(0, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 1), (MOST, 2)), 600, id="test7"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 0, 400),
                     fit(10, (LEAST, 1), (MOST, 2)), 500, id="test8"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, None, (MOST, 2)), 600, id="test9"),
        pytest.param(
            bare_task(100, 100, {SCORING_TYPE: LEAST, SCORING_WEIGHT: '{"cpu": 2, "memory": 1}'}),
            bare_node(200, 200, 500, 500), fit(10, (LEAST, 1), (LEAST, 1)), 400,
            id="pod-level-scoring-least-allocated"),
        pytest.param(
            bare_task(100, 100, {SCORING_TYPE: MOST, SCORING_WEIGHT: '{"cpu": 1, "memory": 2}'}),
            bare_node(200, 200, 500, 500), fit(10, (LEAST, 1), (LEAST, 1)), 600,
            id="pod-level-scoring-most-allocated"),
        pytest.param(
            bare_task(100, 100, {SCORING_TYPE: LEAST, SCORING_WEIGHT: "invalid-json"}),
            bare_node(200, 200, 500, 500), fit(10, (LEAST, 1), (LEAST, 1)), 0,
            id="pod-level-scoring-invalid-json"),
        pytest.param(
            bare_task(100, 100, {SCORING_TYPE: LEAST, SCORING_WEIGHT: '{"cpu": 2}'}),
            bare_node(200, 200, 500, 500), fit(10, (LEAST, 1), (LEAST, 1)), 400,
            id="pod-level-scoring-missing-resource-weight"),
        pytest.param(bare_task(0, 0, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 1), (LEAST, 1)), 0, id="zero-resources-requested"),
        pytest.param(bare_task(100, 100, {}), bare_node(500, 500, 500, 500),
                     fit(10, (LEAST, 1), (LEAST, 1)), 0, id="node-fully-allocated"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(10, (LEAST, 3), (MOST, 1)), 450, id="mixed-scoring-strategies"),
        pytest.param(bare_task(100, 100, {}), bare_node(200, 200, 500, 500),
                     fit(20, (LEAST, 5), (LEAST, 5)), 800, id="high-weight-scenario"),
    ],
)  # fmt: skip
def test_score(task: TaskInfo, node: NodeInfo, weight: ResourceStrategyFit, want: float) -> None:
    assert abs(score(task, node, weight) - want) <= EPS


# --- Test_mostRequestedScore / Test_leastRequestedScore -------------------------------------


@pytest.mark.parametrize("function", [most_requested_score, least_requested_score],
                         ids=["Test_mostRequestedScore", "Test_leastRequestedScore"])  # fmt: skip
@pytest.mark.parametrize(
    ("requested", "used", "capacity", "weight", "fails"),
    [pytest.param(0, 0, 0, 0, False, id="test1"), pytest.param(1, 2, 2, 1, True, id="test2")],
)
def test_requested_score(
    function: Any, requested: float, used: float, capacity: float, weight: int, fails: bool
) -> None:
    if fails:
        with pytest.raises(NotEnough, match="node resources are not enough"):
            function(requested, used, capacity, weight)
    else:
        assert function(requested, used, capacity, weight) == 0


# --- TestResourceStrategyFitPlugin_OnSessionOpen ----------------------------------------------


def test_on_session_open_zero_value_registers_nothing() -> None:
    # test1: a zero-value plugin (weight 0, no sra, no proportional) on an empty session.
    plugin = make_plugin({"resourceStrategyFitWeight": 0})
    assert plugin.hooks() == frozenset()
    assert not framework_of(plugin).answers(BY_VERB["prioritize"])
    assert not framework_of(plugin).answers(BY_VERB["predicate"])


# --- TestResourceStrategyFitPlugin and TestNode (82 session scores) ---------------------------


def gi(n: int) -> str:
    return f"{n}Gi"


RSF_PODS = {
    "p1": pod_task("p1", {"cpu": "1", "memory": gi(1), FOO: "2"}),
    "p2": pod_task("p2", {"cpu": "1", "memory": gi(1), FOO: "3"}),
    "p3": pod_task("p3", {"cpu": "1", "memory": gi(10), GPU: "2"}),
    "p4": pod_task("p4", {"cpu": "1", "memory": gi(1), GPU: "3"}),
    "p5": pod_task("p5", {"cpu": "1", "memory": gi(1), GPU: "4", FOO: "4"}),
}
BASE_4 = {"cpu": "4", "memory": gi(4), "pods": "10"}
RSF_NODES = {
    "n1": built_node("n1", {**BASE_4, GPU: "10"}),
    "n2": built_node("n2", {**BASE_4, GPU: "5"}),
    "n3": built_node("n3", {**BASE_4, FOO: "10"}),
    "n4": built_node("n4", {**BASE_4, FOO: "5"}),
    "n5": built_node("n5", {**BASE_4, GPU: "10", FOO: "5"}),
    "n6": built_node("n6", {**BASE_4, FOO: "10"}),  # foo set to 5, then 10: the last wins
}

SRA_PODS = {
    "p1": pod_task("p1", {"cpu": "1", "memory": gi(1)}),
    "p2": pod_task("p2", {"cpu": "1.5", "memory": gi(0), T4: "2"}),
    "p3": pod_task("p3", {"cpu": "2", "memory": gi(4), A10: "2"}),
    "p4": pod_task("p4", {"cpu": "3", "memory": gi(4), T4: "1", A10: "3"}),
}
SRA_NODES = {
    "n1": built_node("n1", {"cpu": "32", "memory": gi(64), "pods": "10"}),
    "n2": built_node("n2", {"cpu": "8", "memory": gi(16), "pods": "10", T4: "16"}),
    "n3": built_node("n3", {"cpu": "8", "memory": gi(16), "pods": "10", A10: "16"}),
    "n4": built_node("n4", {"cpu": "8", "memory": gi(16), "pods": "10", T4: "8", A10: "16"}),
}


def sra_args(resources: str, weight: int, resource_weight: dict[str, int]) -> dict[str, Any]:
    return {"enable": True, "resources": resources, "weight": weight,
            "resourceWeight": resource_weight}  # fmt: skip


CASE3_RESOURCES = {T4: strategy("MostAllocated", 3), "cpu": strategy("LeastAllocated", 1)}

SESSION_CASES: list[tuple[str, dict[str, Any], dict[str, TaskInfo], dict[str, NodeInfo],
                          dict[str, dict[str, float]]]] = [
    (
        "TestResourceStrategyFitPlugin/case0: single job",
        {"resourceStrategyFitWeight": 10,
         "resources": {GPU: strategy("MostAllocated", 1), FOO: strategy("LeastAllocated", 1)}},
        {k: RSF_PODS[k] for k in ("p1", "p2", "p3", "p4")},
        {k: RSF_NODES[k] for k in ("n1", "n2", "n3", "n4")},
        {
            "p1": {"n1": 0, "n2": 0, "n3": 800, "n4": 600},
            "p2": {"n1": 0, "n2": 0, "n3": 700, "n4": 400},
            "p3": {"n1": 200, "n2": 400, "n3": 0, "n4": 0},
            "p4": {"n1": 300, "n2": 600, "n3": 0, "n4": 0},
        },
    ),
    (
        "TestResourceStrategyFitPlugin/case1: single job",
        {"resourceStrategyFitWeight": 10,
         "resources": {GPU: strategy("MostAllocated", 1), FOO: strategy("LeastAllocated", 2)}},
        {"p5": RSF_PODS["p5"]},
        {k: RSF_NODES[k] for k in ("n5", "n6")},
        {"p5": {"n5": 266.66666666, "n6": 399.99999999}},
    ),
    (
        "TestNode/case1: single job score result in multi-GPU resource",
        {"resourceStrategyFitWeight": 0, "sra": sra_args(f"{T4}, {A10}", 5, {T4: 2, A10: 3})},
        SRA_PODS,
        SRA_NODES,
        {
            "p1": {"n1": 500, "n2": 300, "n3": 200, "n4": 0},
            "p2": {"n1": 0, "n2": 300, "n3": 0, "n4": 0},
            "p3": {"n1": 0, "n2": 0, "n3": 200, "n4": 0},
            "p4": {"n1": 0, "n2": 0, "n3": 0, "n4": 0},
        },
    ),
    (
        "TestNode/case2: single job score result in single GPU resource",
        {"resourceStrategyFitWeight": 0, "sra": sra_args(T4, 5, {T4: 2})},
        SRA_PODS,
        SRA_NODES,
        {
            "p1": {"n1": 500, "n2": 0, "n3": 500, "n4": 0},
            "p2": {"n1": 0, "n2": 0, "n3": 0, "n4": 0},
            "p3": {"n1": 0, "n2": 0, "n3": 500, "n4": 0},
            "p4": {"n1": 0, "n2": 0, "n3": 0, "n4": 0},
        },
    ),
    (
        "TestNode/case3: single job score result with sra policy and resourceStrategyFit",
        {"resourceStrategyFitWeight": 8, "resources": CASE3_RESOURCES,
         "sra": sra_args(T4, 0, {T4: 2})},
        SRA_PODS,
        SRA_NODES,
        {
            "p1": {"n1": 775, "n2": 700, "n3": 700, "n4": 700},
            "p2": {"n1": 190.625, "n2": 237.5, "n3": 162.5, "n4": 312.5},
            "p3": {"n1": 750, "n2": 600, "n3": 600, "n4": 600},
            "p4": {"n1": 181.25, "n2": 162.5, "n3": 125, "n4": 200},
        },
    ),
    (
        "TestNode/case4: single job score result with sra policy and resourceStrategyFit",
        {"resourceStrategyFitWeight": 8, "resources": CASE3_RESOURCES,
         "sra": sra_args(T4, 5, {T4: 2})},
        SRA_PODS,
        SRA_NODES,
        {
            "p1": {"n1": 1275, "n2": 700, "n3": 1200, "n4": 700},
            "p2": {"n1": 190.625, "n2": 237.5, "n3": 162.5, "n4": 312.5},
            "p3": {"n1": 750, "n2": 600, "n3": 1100, "n4": 600},
            "p4": {"n1": 181.25, "n2": 162.5, "n3": 125, "n4": 200},
        },
    ),
]  # fmt: skip

SESSION_SCORES = [
    pytest.param(arguments, tasks[task], nodes, node, want, id=f"{case}/c1/{task}/{node}")
    for case, arguments, tasks, nodes, expected in SESSION_CASES
    for task, per_node in expected.items()
    for node, want in per_node.items()
]


def test_the_catalogue_has_82_session_scores() -> None:
    assert len(SESSION_SCORES) == 82


@pytest.mark.parametrize(("arguments", "task", "nodes", "node", "want"), SESSION_SCORES)
def test_session_scores(
    arguments: dict[str, Any], task: TaskInfo, nodes: dict[str, NodeInfo], node: str, want: float
) -> None:
    scores = framework_of(make_plugin(arguments)).score_sum(
        BY_VERB["prioritize"], task, list(nodes.values())
    )
    assert abs(scores.get(node, 0.0) - want) <= EPS


# --- TestAllocate (the part this plugin decides) ----------------------------------------------
# Upstream runs the allocate action with gang, drf, proportion, predicates and nodeorder too;
# the bind also depends on nodeorder's scores, which are Volcano's. What is ported: among the
# nodes the nodeSelector admits, this plugin ranks the expected node first.

ALLOCATE_ARGS = {"resourceStrategyFitWeight": 10,
                 "resources": {GPU: strategy("MostAllocated", 2), "cpu": strategy("LeastAllocated", 1)}}  # fmt: skip
RUNNING_1CPU = Resource(1000, 1e9, {"pods": 1.0})
RUNNING_GPU = Resource(1000, 1e9, {"pods": 1.0, GPU: 2000.0})
NODE_BASE = {"cpu": "5", "memory": gi(10), "pods": "10"}


@pytest.mark.parametrize(
    ("task", "nodes", "want"),
    [
        pytest.param(
            pod_task("p1", {"cpu": "1", "memory": "1G", GPU: "2"}),
            [built_node("n1", {**NODE_BASE, GPU: "10"}),
             built_node("n2", {**NODE_BASE, GPU: "10"}, used=RUNNING_GPU)],
            "n2", id="GPU MostAllocated"),
        pytest.param(
            pod_task("p3", {"cpu": "1", "memory": "1G"}),
            [built_node("n3", NODE_BASE, used=RUNNING_1CPU), built_node("n4", NODE_BASE)],
            "n4", id="cpu LeastAllocated"),
    ],
)  # fmt: skip
def test_allocate_ranking(task: TaskInfo, nodes: list[NodeInfo], want: str) -> None:
    scores = framework_of(make_plugin(ALLOCATE_ARGS)).score_sum(BY_VERB["prioritize"], task, nodes)
    assert max(scores, key=lambda name: scores[name]) == want
    assert len(set(scores.values())) == len(nodes)  # no tie for Volcano to break at random


# --- Test_findResourceConfigWithPrefix --------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "resources", "want"),
    [
        pytest.param("nvidia.com/gpu",
                     {"nvidia.com/gpu": ResourcesType(MOST, 3), "nvidia.com/*": ResourcesType(LEAST, 1)},
                     ResourcesType(MOST, 3), id="exact_match_priority"),
        pytest.param("nvidia.com/gpu/v100",
                     {"nvidia.com/gpu/*": ResourcesType(MOST, 2), "nvidia.com/*": ResourcesType(LEAST, 1)},
                     ResourcesType(MOST, 2), id="longest_prefix_match"),
        pytest.param("example.com/foo", {"nvidia.com/gpu/*": ResourcesType(MOST, 2)}, None,
                     id="no_match_found"),
        pytest.param("any.resource", {}, None, id="empty_resources_map"),
        pytest.param("cloudml.gpu/tensorflow/v2",
                     {"cloudml.gpu/tensorflow/*": ResourcesType(MOST, 3),
                      "cloudml.gpu/*": ResourcesType(LEAST, 2), "cloudml/*": ResourcesType(MOST, 1)},
                     ResourcesType(MOST, 3), id="multiple_valid_wildcards_longest_match"),
    ],
)  # fmt: skip
def test_find_resource_config_with_prefix(
    resource: str, resources: dict[str, ResourcesType], want: ResourcesType | None
) -> None:
    assert find_resource_config_with_prefix(resource, resources) == want
    # The wildcards' order does not matter (upstream iterates a Go map).
    reversed_order = dict(reversed(list(resources.items())))
    assert find_resource_config_with_prefix(resource, reversed_order) == want


# --- TestArguments --------------------------------------------------------------------------


def test_arguments() -> None:
    plugin = make_plugin(
        {
            "sra": sra_args(f"{T4}, {A10}", 3, {T4: 1, A10: 2}),
            "proportional": {
                "enable": True,
                "resources": f"{T4}, {A10}",
                "resourceProportion": {f"{T4}.cpu": 3, f"{T4}.memory": 6,
                                       f"{A10}.cpu": 4, f"{A10}.memory": 8},
            },
        }
    )  # fmt: skip
    assert plugin.sra.weight == 3
    assert plugin.sra.weight_sum == 3
    assert plugin.sra.resources == {T4: 1, A10: 2}
    # Upstream's proportional loop looks for keys such as "nvidia.com/t4.cpu" that never occur,
    # so it checks nothing; the map it means to check is this one.
    assert plugin.proportional == {T4: BaseResource(3, 6), A10: BaseResource(4, 8)}


# --- Test_checkNodeResourceIsProportional ---------------------------------------------------


def gpu_task(cpu: str, memory: str, gpu: str) -> TaskInfo:
    """Upstream ``buildTask``: ``NewResource(BuildResourceListWithGPU(...))``, no pods."""
    return TaskInfo(Name="t1", Resreq=new_resource({"cpu": cpu, "memory": memory, GPU: gpu}))


def gpu_node(name: str, cpu: str, memory: str, gpu: str) -> NodeInfo:
    return NodeInfo(Name=name, Idle=new_resource({"cpu": cpu, "memory": memory, GPU: gpu}))


PROPORTIONAL = {GPU: BaseResource(4, 4)}
T1 = gpu_task("4", "4G", "0")
T2 = gpu_task("10", "10G", "0")
T3 = gpu_task("10", "10G", "1")
N1 = gpu_node("n1", "30", "30G", "6")
N2 = gpu_node("n2", "26", "26G", "2")


@pytest.mark.parametrize(
    ("task", "node", "want"),
    [
        pytest.param(T1, N1, None, id="cpu_task_less_than_reserved_resource"),
        pytest.param(T2, N1, FitError(f"proportional of resource {GPU} check failed",
                                      StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE),
                     id="cpu_task_greater_than_reserved_resource"),
        pytest.param(T3, N1, None, id="gpu_task_no_proportional_check"),
        pytest.param(T2, N2, None, id="cpu_task_less_than_idle_resource"),
    ],
)  # fmt: skip
def test_check_node_resource_is_proportional(
    task: TaskInfo, node: NodeInfo, want: FitError | None
) -> None:
    assert check_node_resource_is_proportional(task, node, PROPORTIONAL) == want
    plugin = make_plugin({"proportional": {"enable": True, "resources": GPU,
                                           "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 4}}})  # fmt: skip
    assert framework_of(plugin).first_failure(BY_VERB["predicate"], task, node) == want


# --- beyond the catalogue: the reference's edge cases -----------------------------------------


def test_proportional_units_are_cores_and_decimal_gb_per_idle_gpu() -> None:
    # 2 idle GPUs at rates 4/4 reserve exactly 8 cores and 8e9 bytes; the comparison is strict.
    node = gpu_node("n", "10", "10G", "2")
    assert check_node_resource_is_proportional(gpu_task("2", "2G", "0"), node, PROPORTIONAL) is None
    over_cpu = gpu_task("2001m", "1G", "0")
    over_mem = gpu_task("1", "2000000001", "0")
    assert check_node_resource_is_proportional(over_cpu, node, PROPORTIONAL) is not None
    assert check_node_resource_is_proportional(over_mem, node, PROPORTIONAL) is not None


def test_proportional_checks_a_node_holding_zero_idle_gpus_and_skips_one_without_the_key() -> None:
    task = gpu_task("10", "10G", "0")
    zero_gpus = NodeInfo(Name="z", Idle=Resource(5000, 5e9, {GPU: 0.0}))
    no_key = NodeInfo(Name="k", Idle=Resource(5000, 5e9, {"pods": 10.0}))
    assert check_node_resource_is_proportional(task, zero_gpus, PROPORTIONAL) is not None
    assert check_node_resource_is_proportional(task, no_key, PROPORTIONAL) is None


def test_proportional_reports_the_first_listed_resource_that_fails() -> None:
    rates = {"b.com/x": BaseResource(1, 1), "a.com/y": BaseResource(1, 1)}
    node = NodeInfo(Idle=Resource(1000, 1e9, {"a.com/y": 5000.0, "b.com/x": 5000.0}))
    error = check_node_resource_is_proportional(gpu_task("1", "1G", "0"), node, rates)
    assert error == FitError("proportional of resource b.com/x check failed", StatusCode(3))


def test_hooks_follow_upstream_registration() -> None:
    assert make_plugin({}).hooks() == frozenset({"node_order"})
    assert make_plugin({"resourceStrategyFitWeight": 0, "sra": sra_args(T4, 1, {})}).hooks() == {
        "node_order"
    }
    enabled_empty = make_plugin({"resourceStrategyFitWeight": 0, "proportional": {"enable": True}})
    assert enabled_empty.hooks() == frozenset({"predicate"})
    assert enabled_empty.proportional == {}
    disabled = make_plugin({"proportional": {"enable": False, "resources": GPU}})
    assert "predicate" not in disabled.hooks()


def test_overflowing_node_scores_zero_even_when_other_resources_fit() -> None:
    plugin = make_plugin({"resources": {"cpu": strategy("LeastAllocated", 1),
                                        GPU: strategy("MostAllocated", 1)}})  # fmt: skip
    task = pod_task("t", {"cpu": "1", GPU: "3"})
    roomy = built_node("a", {"cpu": "8", GPU: "4"})
    full = built_node("b", {"cpu": "8", GPU: "4"}, used=Resource(0, 0, {GPU: 2000.0}))
    scores = framework_of(plugin).score_sum(BY_VERB["prioritize"], task, [roomy, full])
    assert scores == {"a": pytest.approx((7 / 8 + 3 / 4) / 2 * 1000), "b": 0.0}


def test_weight_counts_for_unknown_pod_level_type_and_zero_allocatable() -> None:
    # An unknown pod-level type scores 0 but its weight still divides the sum.
    task = bare_task(100, 100, {SCORING_TYPE: "Balanced", SCORING_WEIGHT: '{"cpu": 1}'})
    assert score(task, bare_node(0, 0, 500, 500), fit(10, (LEAST, 1), (LEAST, 1))) == 0
    task = bare_task(100, 100, {SCORING_TYPE: MOST, SCORING_WEIGHT: '{"cpu": 1, "memory": 1}'})
    assert score(task, bare_node(0, 0, 0, 500), fit(10, None, None)) == pytest.approx(100)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{"cpu": 2}', {"cpu": 2}),
        ("null", {}),
        ('{"cpu": 1.5}', None),
        ('{"cpu": 1e2}', None),
        ('{"cpu": "2"}', None),
        ('{"cpu": true}', None),
        ('{"cpu": 9223372036854775808}', None),
        ('{"cpu": NaN}', None),
        ("[1]", None),
        ('{"cpu": 1, "cpu": 3}', {"cpu": 3}),
        ("[" * 100_000, None),
        ('{"cpu": null, "memory": 2}', {"cpu": 0, "memory": 2}),
    ],
    ids=["int", "null", "float", "exponent", "string", "bool", "overflow", "NaN", "array",
         "duplicate key: the last wins", "deep nesting", "a null weight is Go's zero int"],
)  # fmt: skip
def test_pod_weights_follow_go_json(text: str, want: dict[str, int] | None) -> None:
    assert parse_pod_weights(text) == want


def test_a_null_pod_weight_scores_as_zero_not_as_an_invalid_annotation() -> None:
    """Issue 29 item 1: upstream's json.Unmarshal leaves 0 for a null map value without error,
    so ``{"cpu": null, "memory": 2}`` scores exactly as ``{"cpu": 0, "memory": 2}``."""
    node = bare_node(0, 0, 500, 500)
    null = bare_task(100, 100, {SCORING_TYPE: MOST, SCORING_WEIGHT: '{"cpu": null, "memory": 2}'})
    zero = bare_task(100, 100, {SCORING_TYPE: MOST, SCORING_WEIGHT: '{"cpu": 0, "memory": 2}'})
    expected = score(zero, node, fit(10, None, None))
    assert expected > 0
    assert score(null, node, fit(10, None, None)) == expected


def test_missing_weight_annotation_scores_zero() -> None:
    task = bare_task(100, 100, {SCORING_TYPE: LEAST})
    assert score(task, bare_node(0, 0, 500, 500), fit(10, (LEAST, 1), (LEAST, 1))) == 0


def test_sra_needs_every_requested_resource_including_pods() -> None:
    plugin = make_plugin({"resourceStrategyFitWeight": 0, "sra": sra_args(T4, 1, {})})
    no_pods = NodeInfo(Name="np", Allocatable=Resource(8000, 8e9, {}))
    with_pods = NodeInfo(Name="wp", Allocatable=Resource(8000, 8e9, {"pods": 10.0}))
    scores = framework_of(plugin).score_sum(
        BY_VERB["prioritize"], pod_task("t", {"cpu": "1"}), [no_pods, with_pods]
    )
    assert scores == {"np": 0.0, "wp": 100.0}


def test_sra_weight_sum_counts_a_name_listed_twice() -> None:
    plugin = make_plugin(
        {"resourceStrategyFitWeight": 0, "sra": sra_args(f"{T4},{T4}, ,", 1, {T4: 2})}
    )
    assert plugin.sra.resources == {T4: 2}
    assert plugin.sra.weight_sum == 4
    node = built_node("n", {"cpu": "8", "pods": "10", T4: "1"})
    # 1 - 2/4 = 0.5
    assert framework_of(plugin).score_sum(
        BY_VERB["prioritize"], pod_task("t", {"cpu": "1"}), [node]
    ) == {"n": 50.0}


@pytest.mark.parametrize(
    ("arguments", "weight", "resources", "sra_weight"),
    [
        ({"resourceStrategyFitWeight": -3}, 10, {"cpu", "memory"}, 0),
        ({"resourceStrategyFitWeight": None}, 0, {"cpu", "memory"}, 0),
        ({"resourceStrategyFitWeight": 7.9}, 7, {"cpu", "memory"}, 0),
        ({"resources": {}}, 10, {"cpu", "memory"}, 0),
        ({"resources": None}, 10, {"cpu", "memory"}, 0),
        ({"resources": {"*": strategy(MOST, 1)}}, 10, set(), 0),
        ({"sra": {"Enable": True, "WEIGHT": 2, "resources": T4}}, 10, {"cpu", "memory"}, 2),
        ({"sra": {"enable": False, "weight": 2, "resources": T4}}, 10, {"cpu", "memory"}, 0),
    ],
    ids=["negative weight", "null weight", "float weight truncated", "empty resources",
         "null resources", "every key dropped", "keys match case-insensitively", "sra disabled"],
)  # fmt: skip
def test_argument_decoding(
    arguments: dict[str, Any], weight: int, resources: set[str], sra_weight: int
) -> None:
    assert ResourceStrategyFitPlugin.argument_errors(Arguments(arguments)) == {}
    plugin = make_plugin(arguments)
    assert plugin.fit.weight == weight
    assert set(plugin.fit.resources) == resources
    assert plugin.sra.weight == sra_weight


def test_resources_entry_normalisation() -> None:
    plugin = make_plugin({"resources": {"cpu": {"type": "mostallocated", "weight": 0},
                                        GPU: {"Type": MOST, "Weight": -2},
                                        "memory": None}})  # fmt: skip
    assert plugin.fit.resources == {
        "cpu": ResourcesType(LEAST, 1),
        GPU: ResourcesType(MOST, 1),
        "memory": ResourcesType(LEAST, 1),
    }


@pytest.mark.parametrize(
    ("arguments", "key"),
    [
        ({"resourceStrategyFitWeight": "10"}, "resourceStrategyFitWeight"),
        ({"resourceStrategyFitWeight": True}, "resourceStrategyFitWeight"),
        ({"resourceStrategyFitWeight": 10**400}, "resourceStrategyFitWeight"),
        ({"resources": "cpu"}, "resources"),
        ({"resources": {"cpu": {"weight": "2"}}}, "resources"),
        ({"resources": {"cpu": {"type": 1}}}, "resources"),
        ({"resources": {1: {"type": MOST}}}, "resources"),
        ({"sra": {"enable": "true"}}, "sra"),
        ({"sra": {"enable": True, "resources": ["a"]}}, "sra"),
        ({"sra": {"enable": True, "resourceWeight": {T4: "x"}}}, "sra"),
        ({"proportional": ["x"]}, "proportional"),
        ({"proportional": {"enable": True, "resourceProportion": {f"{GPU}.cpu": "4"}}},
         "proportional"),
    ],
    ids=["string weight", "bool weight", "weight beyond float64", "resources not a map",
         "string entry weight", "int entry type", "int resource name", "string enable",
         "list of resources", "string resource weight", "proportional not a map",
         "string proportion"],
)  # fmt: skip
def test_values_volcano_cannot_decode_are_argument_errors(
    arguments: dict[str, Any], key: str
) -> None:
    errors = ResourceStrategyFitPlugin.argument_errors(Arguments(arguments))
    assert list(errors) == [key]
    assert "klog.Fatalf" in errors[key]
    plugin = make_plugin(arguments)  # built anyway: the defaults, no crash
    default = make_plugin({})
    assert (plugin.fit, plugin.sra, plugin.proportional) == (default.fit, default.sra, None)


@pytest.mark.parametrize(
    "weight",
    [2**63, 2**64 - 1, 2**64],
    ids=["uint64 2**63 wraps", "uint64 max wraps to -1", "beyond uint64 is a float"],
)
def test_an_integer_beyond_int64_is_what_volcano_stores_not_an_error(weight: int) -> None:
    """Issue 29, item 5: Volcano's YAML decoder makes a uint64 (then a float64) of it and
    mapstructure stores int64(u) (then the amd64 conversion of the float): negative, so the
    plugin's weight falls back to its default 10 — the scheduler runs, it does not exit."""
    arguments = {"resourceStrategyFitWeight": weight}
    assert ResourceStrategyFitPlugin.argument_errors(Arguments(arguments)) == {}
    assert make_plugin(arguments).fit.weight == 10


def test_bad_payloads_never_crash() -> None:
    plugin = make_plugin(
        {"sra": sra_args(T4, 1, {}), "proportional": {"enable": True, "resources": GPU}}
    )
    task = TaskInfo(Name="bare")
    node = NodeInfo(Name="bare")
    assert framework_of(plugin).score_sum(BY_VERB["prioritize"], task, [node]) == {"bare": 100.0}
    assert framework_of(plugin).first_failure(BY_VERB["predicate"], task, node) is None
    assert math.isfinite(
        framework_of(plugin).score_sum(BY_VERB["prioritize"], pod_task("t", {"cpu": "1"}), [node])[
            "bare"
        ]
    )


def test_prioritize_plans_the_task_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import plugins.resource_strategy_fit as rsf

    calls = 0
    original = rsf.plan_score

    def counting(task: TaskInfo, weights: ResourceStrategyFit) -> Any:
        nonlocal calls
        calls += 1
        return original(task, weights)

    monkeypatch.setattr(rsf, "plan_score", counting)
    plugin = make_plugin({"sra": sra_args(GPU, 1, {})})
    task = pod_task(
        "t", {"cpu": "1", "memory": gi(1)}, {SCORING_TYPE: MOST, SCORING_WEIGHT: '{"cpu": 1}'}
    )
    nodes = [built_node(f"n{i:03}", {"cpu": str(i + 1), "memory": gi(8), "pods": "110"})
             for i in range(150)]  # fmt: skip
    scores = framework_of(plugin).score_sum(BY_VERB["prioritize"], task, nodes)
    assert calls == 1
    assert len(scores) == 150
    # MostAllocated on cpu only: 1 core of 4 -> 250, plus SRA 100 on a node without GPUs.
    assert scores["n003"] == pytest.approx(250 + 100)
