"""usage: ``pkg/scheduler/plugins/usage/{usage_test.go,estimator_test.go,shadow_cache_test.go}``
at master ed72c7c81 (= v1.16.0-alpha.x), ids as upstream's test and ``t.Run`` names; then the
v1.13-v1.15 plugin, staleness boundaries, the warm-up, events and rollbacks, pod limits, and the
reference's derived example (plugins-part2.md §2.3), driven through Caldera's framework."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import FitError, Session, StatusCode
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from plugins.usage.estimator import (
    ShadowLoadCache,
    calc_applied_risk_factor,
    calc_composite_utilization,
    calc_load_composite_percentage,
    calc_node_score,
    estimate_best_effort_resource,
    estimate_pod_resource,
)
from plugins.usage.pod_limits import pod_resource_limit
from plugins.usage.usage import (
    CPU_REASON,
    MEMORY_REASON,
    UsagePlugin,
    parse_config,
    parse_legacy_config,
)
from schemas.api import NodeInfo, NodeUsage, Resource, TaskInfo, TaskStatus
from schemas.k8s import Container, ContainerStatus, Pod, PodSpec, PodStatus, ResourceRequirements

GI = 2**30
MI = 2**20
EPS = 1e-6
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
V1_16 = Release(1, 16)


def usage(cpu: float | None, mem: float | None, at: datetime | None = NOW) -> NodeUsage:
    return NodeUsage(
        at, None if cpu is None else {"10m": cpu}, None if mem is None else {"10m": mem}
    )


def node(
    name: str,
    node_usage: NodeUsage | None = None,
    tasks: Sequence[TaskInfo] = (),
    cpu: float = 4000,
    mem: float = 8 * GI,
) -> NodeInfo:
    capacity = Resource(cpu, mem, {"pods": 10})
    raw = msgspec.json.encode({f"{t.Namespace}/{t.Name}": t for t in tasks}) if tasks else b""
    return NodeInfo(Name=name, Capacity=capacity, Allocatable=capacity,
                    ResourceUsage=node_usage, TasksRaw=msgspec.Raw(raw))  # fmt: skip


def container(
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    name: str = "",
    restart: str = "",
) -> Container:
    return Container(name=name, resources=ResourceRequirements(requests=requests, limits=limits),
                     restartPolicy=restart)  # fmt: skip


def task(
    name: str,
    cpu: float = 1000,
    mem: float = GI,
    node_name: str = "",
    status: TaskStatus = TaskStatus.Pending,
    limits: dict[str, str] | None = None,
    start: datetime | None = None,
    best_effort: bool = False,
) -> TaskInfo:
    pod = Pod(spec=PodSpec(containers=[container(None, limits)]),
              status=PodStatus(startTime=start))  # fmt: skip
    return TaskInfo(UID=f"uid-{name}", Job="c1/pg1", Name=name, Namespace="c1",
                    Resreq=Resource(cpu, mem, {"pods": 1}), NodeName=node_name,
                    Status=int(status), BestEffort=best_effort, Pod=pod)  # fmt: skip


def open_plugin(
    nodes: Sequence[NodeInfo],
    arguments: dict[str, Any] | None = None,
    release: Release = V1_16,
    now: datetime = NOW,
) -> tuple[UsagePlugin, Framework]:
    plugin = UsagePlugin(Arguments(arguments or {}, plugin="usage"))
    ssn = Session(nodes={n.Name: n for n in nodes}, has_snapshot=True, release=release,
                  now=lambda: now)  # fmt: skip
    plugin.on_session_open(ssn)
    framework = Framework(
        [[Slot(PluginOption(name=plugin.name), plugin, plugin.hooks())]], release, Metrics()
    )
    return plugin, framework


def scores(
    framework: Framework, nodes: Sequence[NodeInfo], t: TaskInfo | None = None
) -> list[float]:
    result = framework.score_sum(BY_VERB["prioritize"], t or task("p1"), nodes)
    return [result[n.Name] for n in nodes]


# --- usage_test.go: configuration ----------------------------------------------------------------


def test_usage_estimator_config() -> None:
    """TestUsageEstimatorConfig: defaults, a valid section, an invalid one."""
    default = parse_config(Arguments({}))
    assert (default.request_ratio, default.burst_ratio, default.risk_threshold,
            default.risk_factor, default.be_cpu, default.be_memory) == (
        0.7, 0.0, 0.6, 1.2, 250.0, 200 * MI)  # fmt: skip
    configured = parse_config(Arguments({"estimator": {
        "request_ratio": 0.8, "burst_ratio": 0.3, "risk_threshold": 0.75, "risk_factor": 1.5,
        "be_cpu": "500m", "be_mem": "300Mi"}}))  # fmt: skip
    assert (configured.request_ratio, configured.burst_ratio, configured.risk_threshold,
            configured.risk_factor, configured.be_cpu, configured.be_memory) == (
        0.8, 0.3, 0.75, 1.5, 500.0, 300 * MI)  # fmt: skip
    invalid = parse_config(Arguments({"estimator": {
        "request_ratio": 1.5, "burst_ratio": -0.1, "risk_threshold": 2.0, "risk_factor": 0.5,
        "be_cpu": "-1", "be_mem": "bad"}}))  # fmt: skip
    assert (invalid.request_ratio, invalid.burst_ratio, invalid.risk_threshold,
            invalid.risk_factor, invalid.be_cpu, invalid.be_memory) == (
        0.7, 0.0, 0.6, 1.2, 250.0, 200 * MI)  # fmt: skip


def test_usage_config_keeps_default_for_generic_string_values() -> None:
    """TestUsageConfigKeepsDefaultForGenericStringValues."""
    config = parse_config(Arguments({
        "usage.weight": "7", "cpu.weight": "2", "memory.weight": "3",
        "thresholds": {"cpu": "85", "mem": "75"},
        "estimator": {"request_ratio": "0.8", "burst_ratio": "0.3", "risk_threshold": "0.75",
                      "risk_factor": "1.5", "be_cpu": "500m", "be_mem": "300Mi"}}))  # fmt: skip
    assert (config.usage_weight, config.cpu_weight, config.memory_weight) == (5, 1, 1)
    assert (config.cpu_threshold, config.mem_threshold) == (80.0, 80.0)
    assert (config.request_ratio, config.burst_ratio, config.risk_threshold,
            config.risk_factor) == (0.7, 0.0, 0.6, 1.2)  # fmt: skip
    assert (config.be_cpu, config.be_memory) == (500.0, 300 * MI)


def test_usage_config_parses_best_effort_resource_values() -> None:
    """TestUsageConfigParsesBestEffortResourceValues."""
    strings = parse_config(Arguments({"estimator": {"be_cpu": "500m", "be_mem": "300Mi"}}))
    assert (strings.be_cpu, strings.be_memory) == (500.0, 300 * MI)
    numbers = parse_config(Arguments({"estimator": {"be_cpu": 500, "be_mem": 200}}))
    assert (numbers.be_cpu, numbers.be_memory) == (500.0, 200 * MI)


def test_usage_thresholds_keep_default_when_out_of_range() -> None:
    """TestUsageThresholdsKeepDefaultWhenOutOfRange."""
    config = parse_config(Arguments({"thresholds": {"cpu": -1, "mem": 101}}))
    assert (config.cpu_threshold, config.mem_threshold) == (80.0, 80.0)


def test_usage_weights_keep_default_when_negative() -> None:
    """TestUsageWeightsKeepDefaultWhenNegative."""
    config = parse_config(Arguments({"usage.weight": -1, "cpu.weight": -1, "memory.weight": -1}))
    assert (config.usage_weight, config.cpu_weight, config.memory_weight) == (5, 1, 1)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"thresholds": {1: 50, "cpu": 10}}, 80.0),
        ({"thresholds": [10]}, 80.0),
        ({"thresholds": {"cpu": 2**64}}, 80.0),
        ({"thresholds": {"cpu": 0}}, 0.0),
        ({"thresholds": {"cpu": 100}}, 100.0),
        ({"thresholds": {"cpu": 50.0}}, 80.0),
    ],
    ids=["non-string key drops the section", "not a map", "beyond int64", "0 kept", "100 kept",
         "float keeps the default"],
)  # fmt: skip
def test_threshold_section_rules(arguments: dict[str, Any], expected: float) -> None:
    assert parse_config(Arguments(arguments)).cpu_threshold == expected


@pytest.mark.parametrize(
    ("raw", "cpu"),
    [(0, 0.0), (1.5, 250.0), (True, 250.0), ("1", 1000.0), ("-500m", 250.0), (-3, 250.0),
     (None, 250.0)],
    ids=["int zero", "float", "bool", "one core", "negative quantity", "negative int", "null"],
)  # fmt: skip
def test_best_effort_cpu_rules(raw: Any, cpu: float) -> None:
    assert parse_config(Arguments({"estimator": {"be_cpu": raw}})).be_cpu == cpu


def test_ratio_arguments_accept_ints() -> None:
    config = parse_config(Arguments({"estimator": {"request_ratio": 1, "risk_factor": 2}}))
    assert (config.request_ratio, config.risk_factor) == (1.0, 2.0)


# --- usage_test.go: predicate and scoring -----------------------------------------------------

PREDICATE_ARGS = {"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1,
                  "thresholds": {"cpu": 80, "mem": 80}}  # fmt: skip


@pytest.mark.parametrize("release", [V1_16, Release(1, 15)], ids=["1.16", "1.15"])
@pytest.mark.parametrize(
    ("node_usage", "expected"),
    [
        pytest.param(usage(81, 60), FitError(CPU_REASON), id="The node cannot be scheduled, "
                     "because of the CPU load of the node exceeds the upper limit."),
        pytest.param(usage(60, 81), FitError(MEMORY_REASON), id="The node cannot be scheduled, "
                     "because of the memory load of the node exceeds the upper limit."),
        pytest.param(usage(80, 79), None, id="The node can be scheduled, because of the CPU usage"
                     " and memory usage do not exceed the upper limit."),
        pytest.param(usage(90, 81, NOW - timedelta(minutes=6)), None, id="The node can be "
                     "scheduled, because of the metrics are not updated in the latest 5 minutes,"
                     " and the usage function is invalid."),
        pytest.param(usage(90, 81, ZERO_TIME), None, id="The node can be scheduled, because of "
                     "the metric time is in the initial state, and the usage function is "
                     "invalid."),
    ],
)  # fmt: skip
def test_usage_predicate_fn(
    node_usage: NodeUsage, expected: FitError | None, release: Release
) -> None:
    n = node("n", node_usage)
    _, framework = open_plugin([n], PREDICATE_ARGS, release)
    for pending in (task("p1"), task("p2")):
        failure = framework.first_failure(BY_VERB["predicate"], pending, n)
        assert failure == expected
        if failure is not None:
            assert failure.code == StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE


SCORE_NODES = [node("n1", usage(30, 50)), node("n2", usage(60, 50)), node("n3", usage(60, 80)),
               node("n4", usage(10, 20, NOW - timedelta(minutes=6))),
               node("n5", usage(0, 0, ZERO_TIME))]  # fmt: skip


@pytest.mark.parametrize("release", [V1_16, Release(1, 15)], ids=["1.16", "1.15"])
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1},
                     [300.0, 225.0, 150.0, 0.0, 0.0],
                     id="Node scoring in the default weight configuration scenario."),
        pytest.param({"usage.weight": 5, "cpu.weight": 2, "memory.weight": 8},
                     [270.0, 240.0, 120.0, 0.0, 0.0],
                     id="Node scoring gives priority to memory resources"),
    ],
)  # fmt: skip
def test_usage_node_order_fn(
    arguments: dict[str, Any], expected: list[float], release: Release
) -> None:
    _, framework = open_plugin(SCORE_NODES, arguments, release)
    assert scores(framework, SCORE_NODES) == pytest.approx(expected, abs=EPS)


def test_usage_prioritize_nodes_does_not_double_count_node_order() -> None:
    """TestUsage_prioritizeNodesDoesNotDoubleCountNodeOrder: Usage score should be counted once
    in PrioritizeNodes."""
    nodes = SCORE_NODES[:2]
    _, framework = open_plugin(nodes, {"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1})
    assert framework.score_sum(BY_VERB["prioritize"], task("p1"), nodes) == {
        "n1": 300.0,
        "n2": 225.0,
    }


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        pytest.param(task("a"), False, id="pending without node is not tracked"),
        pytest.param(task("a", node_name="node1"), False,
                     id="pending with node is not treated as allocated"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Allocated), True,
                     id="allocated task is tracked"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Binding), True,
                     id="binding task is tracked"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Bound), True,
                     id="bound task is tracked"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Running,
                          start=NOW - timedelta(minutes=1)), True,
                     id="recent running task is tracked"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Running,
                          start=NOW - timedelta(minutes=10)), False,
                     id="old running task is not tracked"),
        pytest.param(task("a", node_name="node1", status=TaskStatus.Succeeded), False,
                     id="completed task is not tracked"),
    ],
)  # fmt: skip
def test_should_add_to_shadow_cache(t: TaskInfo, expected: bool) -> None:
    plugin = UsagePlugin(Arguments({"metrics.interval": "5m"}, plugin="usage"))
    assert plugin.should_add_to_shadow_cache(t, NOW) is expected


def test_running_without_pod_or_start_time_is_tracked() -> None:
    plugin = UsagePlugin(Arguments({}, plugin="usage"))
    bare = TaskInfo(UID="x", NodeName="n", Status=int(TaskStatus.Running))
    assert plugin.should_add_to_shadow_cache(bare, NOW)
    assert plugin.should_add_to_shadow_cache(
        task("a", node_name="n", status=TaskStatus.Running), NOW
    )
    # The default blind spot is 30 seconds.
    recent = task("a", node_name="n", status=TaskStatus.Running, start=NOW - timedelta(seconds=29))
    old = task("a", node_name="n", status=TaskStatus.Running, start=NOW - timedelta(seconds=30))
    assert plugin.should_add_to_shadow_cache(recent, NOW)
    assert not plugin.should_add_to_shadow_cache(old, NOW)


# --- estimator_test.go ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "mem", "cw", "mw", "expected"),
    [(0.4, 0.6, 1, 1, 0.5), (0.8, 0.2, 3, 1, 0.65), (0.8, 0.2, 0, 0, 0.0)],
    ids=["equal weights", "cpu weight dominant", "zero weights"],
)
def test_calc_load_composite_percentage(
    cpu: float, mem: float, cw: int, mw: int, expected: float
) -> None:
    assert calc_load_composite_percentage(cpu, mem, cw, mw) == pytest.approx(expected, abs=EPS)


@pytest.mark.parametrize(
    ("load", "threshold", "factor", "expected"),
    [(0.59, 0.6, 1.2, 1.0), (0.6, 0.6, 1.2, 1.2), (0.9, 0.6, 1.2, 1.2), (0.9, 0.6, 0.8, 1.0)],
    ids=["below threshold", "at threshold", "above threshold",
         "risk factor lower than one is ignored"],
)  # fmt: skip
def test_calc_applied_risk_factor(
    load: float, threshold: float, factor: float, expected: float
) -> None:
    assert calc_applied_risk_factor(load, threshold, factor) == expected


@pytest.mark.parametrize(
    ("req", "limit", "rw", "bw", "rf", "expected"),
    [(500, 2000, 1, 0, 1, 500), (500, 2000, 0, 0, 1, 0), (500, 2000, 1, 1, 1, 2000),
     (500, 2000, 0.5, 0.2, 1, 550), (500, 600, 1, 0, 1.2, 600), (500, 0, 1, 1, 1.2, 500)],
    ids=["default weights estimate request", "zero weights estimate zero",
         "request and burst weights cover full limit", "custom burst weight",
         "risk factor applies and clamps to limit", "missing limit uses request as effective limit"],
)  # fmt: skip
def test_estimate_pod_resource(
    req: float, limit: float, rw: float, bw: float, rf: float, expected: float
) -> None:
    assert estimate_pod_resource(req, limit, rw, bw, rf) == pytest.approx(expected, abs=EPS)


@pytest.mark.parametrize(
    ("configured", "rf", "expected"),
    [(250, 1, 250), (250, 1.2, 300), (-1, 1.2, 0)],
    ids=["base configured value", "risk factor applies",
         "negative configured value is clamped to zero"],
)  # fmt: skip
def test_estimate_best_effort_resource(configured: float, rf: float, expected: float) -> None:
    assert estimate_best_effort_resource(configured, rf) == pytest.approx(expected, abs=EPS)


@pytest.mark.parametrize(
    ("pct", "shadow", "capacity", "expected"),
    [(50, 0, 8000, 0.5), (50, 2000, 8000, 0.75), (80, 5000, 8000, 1.0), (50, 1000, 0, 0.0),
     (0, 0, 8000, 0.0), (100, 0, 8000, 1.0)],
    ids=["no shadow load, 50% real", "50% real + shadow brings to 75%",
         "overflow clamped to 1.0", "zero capacity returns 0", "zero everything",
         "100% real load, no shadow"],
)  # fmt: skip
def test_calc_composite_utilization(
    pct: float, shadow: float, capacity: float, expected: float
) -> None:
    assert calc_composite_utilization(pct, shadow, capacity) == pytest.approx(expected, abs=EPS)


@pytest.mark.parametrize(
    ("cpu", "mem", "cw", "mw", "uw", "expected"),
    [(0, 0, 1, 1, 1, 100), (1, 1, 1, 1, 1, 0), (0.5, 0.5, 1, 1, 5, 250), (0.3, 0.5, 1, 1, 5, 300),
     (0.6, 0.5, 2, 8, 5, 240), (0.5, 0.5, 0, 0, 5, 0)],
    ids=["zero utilization - max score with usageWeight=1", "full utilization - zero score",
         "50% utilization both - score 250 with usageWeight=5",
         "cpu 30%, mem 50%, equal weights, usageWeight=5",
         "cpu 60%, mem 50%, cpu weight=2, mem weight=8, usageWeight=5", "zero weights returns 0"],
)  # fmt: skip
def test_calc_node_score(
    cpu: float, mem: float, cw: int, mw: int, uw: int, expected: float
) -> None:
    assert calc_node_score(cpu, mem, cw, mw, uw) == pytest.approx(expected, abs=EPS)


def _pod(containers: list[Container], init: list[Container] | None = None) -> Pod:
    return Pod(spec=PodSpec(containers=containers, initContainers=init))


@pytest.mark.parametrize(
    ("pod", "cpu_limit", "mem_limit"),
    [
        pytest.param(_pod([container({"cpu": "500m", "memory": "1Gi"},
                                     {"cpu": "1000m", "memory": "2Gi"})]),
                     1000, 2147483648,
                     id="single container with cpu and memory request and limit"),
        pytest.param(_pod([container({"cpu": "200m", "memory": "1Gi"},
                                     {"cpu": "500m", "memory": "2Gi"}),
                           container({"cpu": "300m", "memory": "2Gi"},
                                     {"cpu": "700m", "memory": "3Gi"})]),
                     1200, 5368709120, id="multiple containers - requests/limits summed"),
        pytest.param(_pod([container({"cpu": "500m", "memory": "1Gi"},
                                     {"cpu": "1000m", "memory": "2Gi"})],
                          [container({"cpu": "2000m", "memory": "4Gi"},
                                     {"cpu": "3000m", "memory": "5Gi"})]),
                     3000, 5368709120, id="init container takes max"),
        pytest.param(_pod([container({"cpu": "1000m", "memory": "2Gi"},
                                     {"cpu": "2000m", "memory": "3Gi"})],
                          [container({"cpu": "1000m", "memory": "1Gi"},
                                     {"cpu": "2000m", "memory": "2Gi"}, restart="Always")]),
                     4000, 5368709120, id="restartable init container is added as sidecar"),
        pytest.param(_pod([container()]), 0, 0, id="no resources specified (BestEffort)"),
    ],
)  # fmt: skip
def test_get_pod_resource_request_limit(pod: Pod, cpu_limit: float, mem_limit: float) -> None:
    """TestGetPodResourceRequestLimit, the limit half: Caldera takes the request half from
    ``TaskInfo.Resreq``, which Volcano computes with the same ``GetPodResourceRequest``."""
    assert pod_resource_limit(pod) == (cpu_limit, mem_limit)


def test_pod_limit_features() -> None:
    """Overhead on non-zero dimensions, pod-level limits, in-place resize, sidecars before a
    regular init container, unparsable quantities."""
    resized = Pod(
        spec=PodSpec(containers=[container(None, {"cpu": "1", "memory": "1Gi"}, name="main")]),
        status=PodStatus(containerStatuses=[ContainerStatus(
            name="main", resources=ResourceRequirements(limits={"cpu": "2", "memory": "512Mi"}))]),
    )  # fmt: skip
    assert pod_resource_limit(resized) == (2000, GI)
    overhead = Pod(spec=PodSpec(containers=[container(None, {"cpu": "1"})],
                                overhead={"cpu": "100m", "memory": "64Mi"}))  # fmt: skip
    assert pod_resource_limit(overhead) == (1100, 0)
    pod_level = Pod(spec=PodSpec(containers=[container(None, {"cpu": "1", "memory": "1Gi"})],
                                 resources=ResourceRequirements(limits={"memory": "4Gi"})))  # fmt: skip
    assert pod_resource_limit(pod_level) == (1000, 4 * GI)
    sidecar_then_init = _pod(
        [container(None, {"cpu": "1"})],
        [container(None, {"cpu": "1"}, restart="Always"), container(None, {"cpu": "3"})],
    )
    # regular 1 + sidecar 1 = 2; the init container runs beside the sidecar: 3 + 1 = 4.
    assert pod_resource_limit(sidecar_then_init) == (4000, 0)
    broken = _pod([container(None, {"cpu": "lots", "memory": "1Gi"})])
    assert pod_resource_limit(broken) == (0, GI)
    assert pod_resource_limit(None) == (0, 0)


# --- shadow_cache_test.go -------------------------------------------------------------------


def test_new_shadow_load_cache() -> None:
    assert ShadowLoadCache().is_clean()


def test_shadow_load_cache_add_estimate() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "task1", 1000, 2048)
    assert cache.get_node_est("node1") == (1000, 2048)
    cache.add_estimate("node1", "task2", 500, 1024)
    assert cache.get_node_est("node1") == (1500, 3072)
    cache.add_estimate("node1", "task3", 800, 1600)
    assert cache.get_node_est("node1") == (2300, 4672)
    first, third = cache.snapshots["task1"], cache.snapshots["task3"]
    assert (first.node_name, first.cpu_millis, first.mem_bytes) == ("node1", 1000, 2048)
    assert (third.cpu_millis, third.mem_bytes) == (800, 1600)


def test_shadow_load_cache_add_estimate_update_existing_task() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "task1", 1000, 2048)
    cache.add_estimate("node2", "task1", 500, 1024)
    assert cache.get_node_est("node1") == (0, 0)
    assert cache.get_node_est("node2") == (500, 1024)
    cache.sub_estimate_by_snapshot("task1")
    assert cache.get_node_est("node2") == (0, 0)


def test_shadow_load_cache_sub_estimate_by_snapshot() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "task1", 1000, 2048)
    cache.add_estimate("node1", "task2", 500, 1024)
    cache.sub_estimate_by_snapshot("task2")
    assert cache.get_node_est("node1") == (1000, 2048)
    cache.sub_estimate_by_snapshot("task1")
    assert cache.get_node_est("node1") == (0, 0)
    assert "task1" not in cache.snapshots


def test_shadow_load_cache_sub_estimate_by_snapshot_non_existent() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "task1", 100, 200)
    cache.sub_estimate_by_snapshot("nope")
    assert cache.get_node_est("node1") == (100, 200)


def test_shadow_load_cache_snapshot_consistency() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "pod1", 800, 1600)
    cache.add_estimate("node1", "pod2", 960, 1920)
    cache.add_estimate("node1", "pod3", 1152, 2304)
    assert cache.get_node_est("node1") == pytest.approx((2912, 5824), abs=EPS)
    cache.sub_estimate_by_snapshot("pod3")
    assert cache.get_node_est("node1") == pytest.approx((1760, 3520), abs=EPS)
    cache.sub_estimate_by_snapshot("pod1")
    assert cache.get_node_est("node1")[0] == pytest.approx(960, abs=EPS)
    cache.sub_estimate_by_snapshot("pod2")
    assert cache.get_node_est("node1") == (0, 0)


def test_shadow_load_cache_multiple_nodes() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "t1", 1000, 2000)
    cache.add_estimate("node2", "t2", 3000, 4000)
    cache.add_estimate("node3", "t3", 500, 800)
    assert [cache.get_node_est(n) for n in ("node1", "node2", "node3")] == [
        (1000, 2000), (3000, 4000), (500, 800)]  # fmt: skip


def test_shadow_load_cache_get_node_est_non_existent_node() -> None:
    assert ShadowLoadCache().get_node_est("nope") == (0, 0)


def test_shadow_load_cache_reset() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "t1", 1000, 2000)
    cache.add_estimate("node2", "t2", 3000, 4000)
    assert not cache.is_clean()
    cache.reset()
    assert cache.is_clean()
    assert cache.get_node_est("node1") == (0, 0)
    assert cache.snapshots.get("t1") is None


def test_shadow_load_cache_reset_reuses_maps() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "t1", 1000, 2000)
    maps = (cache.node_cpu, cache.node_mem, cache.snapshots)
    cache.reset()
    assert cache.node_cpu is maps[0]
    assert cache.node_mem is maps[1]
    assert cache.snapshots is maps[2]


def test_shadow_load_cache_is_clean() -> None:
    cache = ShadowLoadCache()
    assert cache.is_clean()
    cache.add_estimate("node1", "t1", 100, 200)
    assert not cache.is_clean()


def test_shadow_load_cache_concurrent_access() -> None:
    """The Go test races 100 writers and readers; one plugin instance is only ever called
    from one request at a time here, so every interleaving is some sequence: a shuffled one."""
    cache = ShadowLoadCache()
    operations = list(range(100))
    random.Random(7).shuffle(operations)
    for idx in operations:
        if idx % 2 == 0:
            cache.add_estimate("node1", f"task-{idx}", 10, 20)
        else:
            cache.sub_estimate_by_snapshot(f"task-{idx}")
        cache.get_node_est("node1")
    assert cache.get_node_est("node1") == (500, 1000)


def test_shadow_load_cache_allocate_deallocate_exact_match() -> None:
    cache = ShadowLoadCache()
    cache.add_estimate("node1", "task-a", 1234.5678, 9876543.21)
    cache.add_estimate("node1", "task-b", 567.89, 1234567.89)
    cache.sub_estimate_by_snapshot("task-a")
    cache.sub_estimate_by_snapshot("task-b")
    cpu, mem = cache.get_node_est("node1")
    assert abs(cpu) <= EPS and abs(mem) <= EPS


# --- the estimator in a session --------------------------------------------------------------


def test_derived_example_allocation_lowers_the_score() -> None:
    """plugins-part2.md §2.3: 4 cpu / 8Gi, 30 % / 50 %, a 1 cpu / 1Gi Burstable task: 300,
    then 234.375 once it is allocated there; a rollback deallocate restores 300."""
    n = node("n", usage(30, 50))
    plugin, framework = open_plugin([n])
    assert scores(framework, [n]) == [300.0]
    placed = task("t", node_name="n", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["allocate"], placed) == ""
    assert plugin.cache.get_node_est("n") == pytest.approx((700, 0.7 * GI))
    assert scores(framework, [n]) == [234.375]
    assert framework.event(BY_VERB["deallocate"], placed) == ""
    assert scores(framework, [n]) == [300.0]


def test_the_risk_factor_applies_on_a_loaded_node() -> None:
    n = node("n", usage(70, 70))
    plugin, framework = open_plugin([n])
    framework.event(BY_VERB["allocate"], task("t", node_name="n", status=TaskStatus.Allocated))
    # load 0.7 >= 0.6: 1000 * 0.7 * 1.2 = 840 milli-CPU.
    assert plugin.cache.get_node_est("n")[0] == pytest.approx(840)


def test_best_effort_tasks_count_the_configured_amounts() -> None:
    n = node("n", usage(10, 10))
    plugin, framework = open_plugin([n], {"estimator": {"be_cpu": "100m", "be_mem": 64}})
    be = task("be", cpu=0, mem=0, node_name="n", status=TaskStatus.Allocated, best_effort=True)
    framework.event(BY_VERB["allocate"], be)
    assert plugin.cache.get_node_est("n") == (100.0, 64 * MI)


def test_burst_ratio_uses_the_pod_limits() -> None:
    n = node("n", usage(10, 10))
    plugin, framework = open_plugin([n], {"estimator": {"burst_ratio": 0.5}})
    t = task("t", node_name="n", status=TaskStatus.Allocated,
             limits={"cpu": "3", "memory": "1Gi"})  # fmt: skip
    framework.event(BY_VERB["allocate"], t)
    # cpu: 1000 * 0.7 + 2000 * 0.5 = 1700; memory: no burst, 0.7 Gi.
    assert plugin.cache.get_node_est("n") == pytest.approx((1700, 0.7 * GI))


def test_warm_up_counts_blind_spot_tasks_in_name_order() -> None:
    """Bound and recently started tasks are counted at session open, nodes by name and tasks by
    key: the first estimate on ``a`` raises its load over the risk threshold for the second."""
    tasks = [task("t2", cpu=2000, node_name="a", status=TaskStatus.Bound),
             task("t1", cpu=2000, node_name="a", status=TaskStatus.Bound),
             task("old", node_name="a", status=TaskStatus.Running,
                  start=NOW - timedelta(hours=1)),
             task("fresh", node_name="b", status=TaskStatus.Running,
                  start=NOW - timedelta(seconds=10)),
             task("pending", node_name="b")]  # fmt: skip
    a = node("a", usage(50, 60), tasks[:3])
    b = node("b", usage(50, 60), tasks[3:])
    for order in ([a, b], [b, a]):
        plugin, _ = open_plugin(order)
        # a: t1 at load (0.5 + 0.6) / 2 = 0.55 -> 1400; then load (0.85 + 0.6) / 2 >= 0.6, so
        # t2 -> 2000 * 0.7 * 1.2 = 1680.
        assert plugin.cache.get_node_est("a")[0] == pytest.approx(1400 + 1680)
        assert plugin.cache.snapshots["uid-t1"].cpu_millis == pytest.approx(1400)
        assert plugin.cache.get_node_est("b")[0] == pytest.approx(700)
        assert set(plugin.cache.snapshots) == {"uid-t1", "uid-t2", "uid-fresh"}


def test_a_rolled_back_warm_up_task_leaves_the_shadow() -> None:
    bound = task("t", node_name="a", status=TaskStatus.Bound)
    a = node("a", usage(10, 10), [bound])
    plugin, framework = open_plugin([a])
    framework.event(BY_VERB["deallocate"], bound)
    assert plugin.cache.get_node_est("a") == (0, 0)
    # A deallocate for a task never counted (an evicted old pod) changes nothing.
    framework.event(BY_VERB["deallocate"], task("other", node_name="a"))
    assert plugin.cache.get_node_est("a") == (0, 0)


def test_reallocation_moves_the_estimate_and_unknown_nodes_are_ignored() -> None:
    a, b = node("a", usage(10, 10)), node("b", usage(10, 10))
    plugin, framework = open_plugin([a, b])
    framework.event(BY_VERB["allocate"], task("t", node_name="a", status=TaskStatus.Allocated))
    framework.event(BY_VERB["allocate"], task("t", node_name="b", status=TaskStatus.Allocated))
    assert plugin.cache.get_node_est("a") == (0, 0)
    assert plugin.cache.get_node_est("b")[0] == pytest.approx(700)
    framework.event(BY_VERB["allocate"], task("u", node_name="gone", status=TaskStatus.Allocated))
    assert "uid-u" not in plugin.cache.snapshots


def test_stale_metrics_still_count_for_the_risk_factor_but_score_zero() -> None:
    stale = node("s", usage(90, 90, NOW - timedelta(minutes=10)))
    plugin, framework = open_plugin([stale])
    framework.event(BY_VERB["allocate"], task("t", node_name="s", status=TaskStatus.Allocated))
    assert plugin.cache.get_node_est("s")[0] == pytest.approx(840)
    assert scores(framework, [stale]) == [0.0]


@pytest.mark.parametrize(
    ("at", "fresh"),
    [(NOW - timedelta(minutes=5), True), (NOW - timedelta(minutes=5, microseconds=1), False),
     (NOW + timedelta(hours=1), True), (None, False)],
    ids=["exactly 5 minutes", "just over", "future", "null"],
)  # fmt: skip
def test_staleness_boundaries(at: datetime | None, fresh: bool) -> None:
    n = node("n", usage(90, 10, at))
    _, framework = open_plugin([n])
    failure = framework.first_failure(BY_VERB["predicate"], task("p"), n)
    assert (failure == FitError(CPU_REASON)) is fresh
    assert (scores(framework, [n])[0] > 0) is fresh


def test_missing_usage_reads_zero() -> None:
    no_usage = node("x", None)
    no_period = node("y", NodeUsage(NOW, {"1m": 99}, None))
    _, framework = open_plugin([no_usage, no_period])
    assert framework.first_failure(BY_VERB["predicate"], task("p"), no_period) is None
    assert scores(framework, [no_usage, no_period]) == [0.0, 500.0]


def test_zero_capacity_counts_as_idle() -> None:
    n = node("n", usage(50, 50), cpu=0)
    _, framework = open_plugin([n])
    assert scores(framework, [n]) == [pytest.approx(375.0)]


def test_the_session_clock_decides_freshness() -> None:
    n = node("n", usage(30, 50, NOW))
    _, framework = open_plugin([n], now=NOW + timedelta(minutes=6))
    assert scores(framework, [n]) == [0.0]


# --- v1.13-v1.15 -----------------------------------------------------------------------------


def test_legacy_thresholds_take_non_ints_as_zero() -> None:
    config = parse_legacy_config(Arguments({"thresholds": {"cpu": "85", "mem": 70.5}}))
    assert (config.cpu_threshold, config.mem_threshold) == (0.0, 0.0)
    config = parse_legacy_config(Arguments({"thresholds": {"cpu": 150, "mem": -5, 3: 1}}))
    assert (config.cpu_threshold, config.mem_threshold) == (150.0, -5.0)
    n = node("n", usage(1, 1))
    _, framework = open_plugin([n], {"thresholds": {"cpu": "85"}}, release=Release(1, 15))
    assert framework.first_failure(BY_VERB["predicate"], task("p"), n) == FitError(CPU_REASON)


def test_legacy_weights_are_not_checked_and_a_zero_sum_scores_zero() -> None:
    config = parse_legacy_config(Arguments({"usage.weight": -1, "cpu.weight": -2}))
    assert (config.usage_weight, config.cpu_weight, config.memory_weight) == (-1, -2, 1)
    n = node("n", usage(30, 50))
    _, framework = open_plugin([n], {"usage.weight": -1}, release=Release(1, 14))
    assert scores(framework, [n]) == [-60.0]
    _, framework = open_plugin([n], {"cpu.weight": 1, "memory.weight": -1},
                               release=Release(1, 14))  # fmt: skip
    assert scores(framework, [n]) == [0.0]


def test_legacy_score_is_not_clamped_and_needs_both_percentages() -> None:
    over = node("o", usage(150, 50))
    half = node("h", NodeUsage(NOW, {"10m": 30}, None))
    _, framework = open_plugin([over, half], release=Release(1, 15))
    # ((100 - 150) / 100 + 0.5) / 2 * 500 = 0; the v1.16 plugin clamps to (0 + 0.5) / 2 * 500.
    assert scores(framework, [over, half]) == [0.0, 0.0]
    _, framework = open_plugin([over, half])
    assert scores(framework, [over, half]) == [125.0, pytest.approx(425.0)]


def test_legacy_ignores_events_and_the_estimator() -> None:
    bound = task("t", node_name="n", status=TaskStatus.Bound)
    n = node("n", usage(30, 50), [bound])
    plugin, framework = open_plugin([n], release=Release(1, 15))
    assert plugin.cache.is_clean()
    framework.event(BY_VERB["allocate"], task("u", node_name="n", status=TaskStatus.Allocated))
    assert plugin.cache.is_clean()
    assert scores(framework, [n]) == [300.0]


# --- arguments and declarations --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ("1m", set()),
        ("0", set()),
        (None, set()),
        ("10", {"metrics.interval"}),
        (30, {"metrics.interval"}),
    ],
    ids=["duration", "zero", "absent", "unitless", "int"],
)
def test_metrics_interval_argument(raw: Any, errors: set[str]) -> None:
    arguments = Arguments({} if raw is None else {"metrics.interval": raw}, plugin="usage")
    assert set(UsagePlugin.argument_errors(arguments)) == errors


def test_metrics_interval_defaults_to_30s_and_takes_positive_durations() -> None:
    assert UsagePlugin(Arguments({})).metrics_interval == timedelta(seconds=30)
    assert UsagePlugin(Arguments({"metrics.interval": "-1m"})).metrics_interval == timedelta(
        seconds=30
    )
    assert UsagePlugin(Arguments({"metrics.interval": "1m30s"})).metrics_interval == timedelta(
        seconds=90
    )


def test_plugin_declarations() -> None:
    assert UsagePlugin.requires_verbs == ("allocate", "deallocate")
    assert UsagePlugin.needs_snapshot
    assert UsagePlugin.in_tree_only == ()
    plugin, _ = open_plugin([])
    assert plugin.hooks() == frozenset({"predicate", "node_order", "allocate", "deallocate"})


def test_prioritize_does_not_decode_node_pods() -> None:
    tasks = [task(f"t{i}", node_name="x", status=TaskStatus.Running,
                  start=NOW - timedelta(hours=1)) for i in range(3)]  # fmt: skip
    _, framework = open_plugin([], release=V1_16)
    many = [node(f"x{i}", usage(i % 100, 50), tasks) for i in range(150)]
    result = framework.score_sum(BY_VERB["prioritize"], task("p"), many)
    assert len(result) == 150
    assert all("Tasks" not in n.__dict__ for n in many)
