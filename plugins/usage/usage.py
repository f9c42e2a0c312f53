"""``usage``: keep tasks off nodes whose measured CPU or memory load is above a threshold, and
prefer the least loaded nodes, counting the load of pods placed since the last metrics sample.

Follows ``pkg/scheduler/plugins/usage/usage.go`` of volcano-sh/volcano at master ed72c7c81
(2026-08-20; the same file as v1.16.0-alpha.0/1, commit 895281e64 "Enhancement of Usage-Based
Scheduling for Bulk Pod Dispatch"), and ``usage.go`` of v1.15.1 (identical from v1.13.0, apart
from an import path) for the releases before it. Its ``estimator.go`` and ``shadow_cache.go`` are
``plugins/usage/estimator.py``; ``GetPodResourceLimit`` of ``api/pod_info.go`` is
``plugins/usage/pod_limits.py``. ``ssn.release`` selects:

- v1.16: the estimator version below (argument validation, composite utilization with a
  shadow load, allocate/deallocate events).
- v1.13 to v1.15: the original plugin. Weights are taken as given (no negative check); the
  ``thresholds`` section sets ``cpu`` / ``mem`` to the value when it is an int, and to **0**
  when it is anything else (upstream's unchecked type assertion), without a range check; the
  estimator section and ``metrics.interval`` are ignored; the score is
  ``((100 - cpu%) / 100 * cpu.weight + (100 - mem%) / 100 * memory.weight) / (cpu.weight +
  memory.weight) * (100 * usage.weight)``, 0 when a percentage is missing for ``10m`` or the
  metrics are stale; no shadow load, allocate/deallocate change nothing.

Node load is ``NodeInfo.ResourceUsage``: ``CPUUsageAvg["10m"]`` and ``MEMUsageAvg["10m"]`` in
percent, sampled at ``MetricsTime``. Metrics are stale when ``now - MetricsTime > 5 minutes``
(exactly 5 minutes is fresh, a future time is fresh, Go's zero time is stale); ``now`` is the
session clock (``ssn.now``). A missing percentage reads 0.

``predicate`` (all releases): stale metrics pass; then ``cpu% > thresholds.cpu`` fails with
``the CPU load of the node exceeds the upper limit.``, then ``mem% > thresholds.mem`` with
``the memory load of the node exceeds the upper limit.``, both code 3
(UnschedulableAndUnresolvable, as upstream's status). The shadow load is not consulted.

``prioritize`` (v1.16, ``NodeOrderFn``, the plugin weight included): 0 for stale metrics; else
``U = clamp((pct / 100 * capacity + shadow) / capacity, 0, 1)`` per dimension (0 when the node's
``Capacity`` is not positive; Capacity, not Allocatable, as upstream) and
``((1 - Ucpu) * cpu.weight + (1 - Umem) * memory.weight) / (cpu.weight + memory.weight) * 100 *
usage.weight`` (0 when the weight sum is 0).

Shadow load (v1.16): per node, the estimated milli-CPU and bytes of pods placed since the last
metrics sample, kept with a per-task record so a deallocate takes back exactly what its allocate
added. At session open every task of every node's ``Tasks`` with a node name whose status is
Allocated, Binding or Bound, or Running with no ``startTime`` or started less than the metrics
interval ago, is added; then ``allocate`` adds the task on its snapshot node (re-adding a task
first removes its earlier record) and ``deallocate`` removes its record (none: nothing), also
for the rollback of a discarded statement. Each estimate is taken with the risk factor of the
node at that moment: ``estimator.risk_factor`` when the weighted composite load (real + shadow,
even with stale metrics) reaches ``estimator.risk_threshold``, else 1. A BestEffort task
(``TaskInfo.BestEffort``) counts ``be_cpu`` / ``be_mem`` times the factor; another counts, per
dimension, ``clamp((request * request_ratio + (limit - request) * burst_ratio) * factor, 0,
effective limit)`` where the effective limit is the limit when positive and not below the
request, else the request. The request is ``TaskInfo.Resreq`` (Volcano's
``GetPodResourceRequest`` of the pod, as the extender sends it); the limit is
``GetPodResourceLimit`` of the pod: regular containers summed, init containers combined by
maximum with restartable (``restartPolicy: Always``) ones added, both taking the larger of the
spec's and the container status's limits when the status carries resources (in-place resize,
on by default from Kubernetes 1.33), pod-level ``spec.resources.limits`` for cpu and memory
(on by default from 1.34), and the overhead added to a non-zero dimension. An unparsable
quantity counts as absent.

Arguments (v1.16, Volcano's getters): ``usage.weight`` (int, 5), ``cpu.weight`` (int, 1),
``memory.weight`` (int, 1), each negative value giving its default; ``thresholds`` with ``cpu``
and ``mem`` (ints, 80, kept only within 0..100); ``estimator`` with ``request_ratio`` (0.7),
``burst_ratio`` (0.0) and ``risk_threshold`` (0.6) kept within 0..1, ``risk_factor`` (1.2) kept
when at least 1, ``be_cpu`` (an int of milli-CPU or a quantity string, 250) and ``be_mem`` (an
int of MiB or a quantity string in bytes, 200Mi), negative or unparsable values keeping the
default. A section that is not a map, or has a non-string key, is ignored. An int beyond Go's
int64 is not a Go int and keeps the default.

``metrics.interval``: Volcano reads the metrics blind spot from its scheduler ConfigMap's
``metrics.interval`` (the period at which it polls the metrics source), which it does not send
to the extender; configure the same value here. A Go duration string, default ``30s``, as
Volcano; not positive: 30s. An invalid string refuses the configuration
(:meth:`UsagePlugin.argument_errors`).

Deliberate choices:

- Upstream warms the shadow cache up in Go map order (nodes, then each node's tasks), and each
  task's risk factor includes the estimates added before it, so the result can vary between
  runs. Caldera goes through nodes by name and each node's tasks by their key
  (``namespace/name``), so the same snapshot always gives the same shadow load.
- Go's float division by a zero weight sum gives an infinity or NaN score in v1.13-v1.15 (a
  negative weight is accepted there); JSON cannot carry those, so Caldera answers 0.
- Upstream's shadow cache floors each node total at zero on subtraction, so nothing needs
  ``ssn.clamped``.

With Caldera's ``managedResources`` set, Volcano sends no allocate/deallocate event for a task
outside them, so its placement within the session adds no shadow load until the next snapshot
(where the warm-up counts it).

What the extender cannot carry: nothing (``in_tree_only`` is empty), but the metrics interval
must be configured on Caldera's plugin entry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from plugins.api import (
    USAGE_AS_PORTED,
    USAGE_ESTIMATOR,
    Arguments,
    Background,
    FitError,
    OnError,
    Plugin,
    Release,
    Session,
    StatusCode,
    Upstream,
    Verb,
    register,
    utc_now,
)
from plugins.support.goint import as_go_int, go_int64
from plugins.usage.estimator import (
    MAX_NODE_SCORE,
    ShadowLoadCache,
    calc_applied_risk_factor,
    calc_composite_utilization,
    calc_load_composite_percentage,
    calc_node_score,
    estimate_best_effort_resource,
    estimate_pod_resource,
)
from plugins.usage.pod_limits import pod_resource_limit
from schemas.api import NodeInfo, TaskInfo, TaskStatus
from schemas.goduration import DurationError, go_time, parse_go_duration
from schemas.quantity import QuantityError, milli_value, parse_quantity, value

logger = logging.getLogger("caldera.plugins.usage")

PLUGIN_NAME = "usage"
PERIOD = "10m"
"""``source.NODE_METRICS_PERIOD``."""
METRICS_ACTIVE_TIME = timedelta(minutes=5)
DEFAULT_METRICS_INTERVAL = timedelta(seconds=30)
METRICS_INTERVAL_ARGUMENT = "metrics.interval"

CPU_REASON = "the CPU load of the node exceeds the upper limit."
MEMORY_REASON = "the memory load of the node exceeds the upper limit."


# --- arguments ---------------------------------------------------------------------------------


def section_arguments(arguments: Arguments, section: str) -> Arguments | None:
    """``getUsageSectionArgs``: a map with string keys, else None."""
    if section not in arguments:
        return None
    raw = arguments[section]
    if not isinstance(raw, Mapping) or any(not isinstance(key, str) for key in raw):
        return None
    return Arguments(raw, plugin=f"{PLUGIN_NAME} {section}", release=arguments.release)


def _parse_best_effort(
    raw: Any, default: float, quantity: Callable[[str], int], int_unit: float
) -> float:
    """A quantity string read with ``quantity``, or a Go int times ``int_unit``; negative or
    unparsable keeps ``default``."""
    if isinstance(raw, str):
        try:
            if parse_quantity(raw) < 0:
                return default
            return float(quantity(raw))
        except QuantityError:
            return default
    number = as_go_int(raw)
    if number is None or number < 0:
        return default
    return float(number) * int_unit


def parse_best_effort_cpu(raw: Any, default: float) -> float:
    """``parseBestEffortCPU``: an int of milli-CPU, or a quantity's ``MilliValue``."""
    return _parse_best_effort(raw, default, milli_value, 1.0)


def parse_best_effort_memory(raw: Any, default: float) -> float:
    """``parseBestEffortMemory``: an int of MiB, or a quantity's ``Value`` in bytes."""
    return _parse_best_effort(raw, default, value, 1024.0 * 1024.0)


@dataclass(slots=True)
class UsageConfig:
    """The parsed arguments (defaults as ``New``)."""

    usage_weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    cpu_threshold: float = 80.0
    mem_threshold: float = 80.0
    request_ratio: float = 0.7
    burst_ratio: float = 0.0
    risk_threshold: float = 0.6
    risk_factor: float = 1.2
    be_cpu: float = 250.0
    be_memory: float = float(200 * 1024 * 1024)


def parse_config(arguments: Arguments) -> UsageConfig:
    """v1.16 ``New``: weights, ``parseThresholdArgs``, ``parseEstimatorArgs``."""
    config = UsageConfig()
    usage_weight = arguments.get_int("usage.weight", config.usage_weight)
    config.usage_weight = usage_weight if usage_weight >= 0 else 5
    cpu_weight = arguments.get_int("cpu.weight", config.cpu_weight)
    config.cpu_weight = cpu_weight if cpu_weight >= 0 else 1
    memory_weight = arguments.get_int("memory.weight", config.memory_weight)
    config.memory_weight = memory_weight if memory_weight >= 0 else 1

    thresholds = section_arguments(arguments, "thresholds")
    if thresholds is not None:
        cpu = thresholds.get_int("cpu", int(config.cpu_threshold))
        if 0 <= cpu <= 100:
            config.cpu_threshold = float(cpu)
        mem = thresholds.get_int("mem", int(config.mem_threshold))
        if 0 <= mem <= 100:
            config.mem_threshold = float(mem)

    estimator = section_arguments(arguments, "estimator")
    if estimator is not None:
        request_ratio = estimator.get_float64("request_ratio", config.request_ratio)
        if 0 <= request_ratio <= 1:
            config.request_ratio = request_ratio
        burst_ratio = estimator.get_float64("burst_ratio", config.burst_ratio)
        if 0 <= burst_ratio <= 1:
            config.burst_ratio = burst_ratio
        risk_threshold = estimator.get_float64("risk_threshold", config.risk_threshold)
        if 0 <= risk_threshold <= 1:
            config.risk_threshold = risk_threshold
        risk_factor = estimator.get_float64("risk_factor", config.risk_factor)
        if risk_factor >= 1:
            config.risk_factor = risk_factor
        config.be_cpu = parse_best_effort_cpu(estimator.get("be_cpu"), config.be_cpu)
        config.be_memory = parse_best_effort_memory(estimator.get("be_mem"), config.be_memory)
    return config


def parse_legacy_config(arguments: Arguments) -> UsageConfig:
    """v1.13-v1.15 ``New``: weights as given; each ``thresholds`` entry ``cpu`` / ``mem`` set
    to its value when an int, else to 0."""
    config = UsageConfig()
    config.usage_weight = arguments.get_int("usage.weight", config.usage_weight)
    config.cpu_weight = arguments.get_int("cpu.weight", config.cpu_weight)
    config.memory_weight = arguments.get_int("memory.weight", config.memory_weight)
    raw = arguments.get("thresholds")
    if isinstance(raw, Mapping):
        for key, threshold in raw.items():
            number = as_go_int(threshold)
            amount = float(number) if number is not None else 0.0
            if key == "cpu":
                config.cpu_threshold = amount
            elif key == "mem":
                config.mem_threshold = amount
    return config


def parse_metrics_interval(arguments: Arguments) -> timedelta:
    """``metrics.interval``: a positive Go duration, else 30s."""
    raw = arguments.get(METRICS_INTERVAL_ARGUMENT)
    if not isinstance(raw, str):
        return DEFAULT_METRICS_INTERVAL
    try:
        nanoseconds = parse_go_duration(raw)
    except DurationError:
        return DEFAULT_METRICS_INTERVAL
    if nanoseconds <= 0:
        return DEFAULT_METRICS_INTERVAL
    return timedelta(microseconds=nanoseconds / 1000)


# --- the plugin ----------------------------------------------------------------------------------


def metrics_available(node: NodeInfo, now: datetime) -> bool:
    """``isMetricsAvailable``: sampled at most 5 minutes before ``now``."""
    usage = node.ResourceUsage
    if usage is None or usage.MetricsTime is None:
        return False
    return now - go_time(usage.MetricsTime) <= METRICS_ACTIVE_TIME


def _percentages(node: NodeInfo) -> tuple[float | None, float | None]:
    usage = node.ResourceUsage
    if usage is None:
        return None, None
    return (usage.CPUUsageAvg or {}).get(PERIOD), (usage.MEMUsageAvg or {}).get(PERIOD)


def _capacity(node: NodeInfo) -> tuple[float, float]:
    capacity = node.Capacity
    return (0.0, 0.0) if capacity is None else (capacity.MilliCPU, capacity.Memory)


_SHADOW_STATUSES = frozenset({TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound})


@register
class UsagePlugin(Plugin):
    name: ClassVar[str] = PLUGIN_NAME
    on_error = OnError.ABSTAIN
    """A load-aware filter and score; without them for a call the node is judged as with stale metrics, which usage itself passes."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=(
            "pkg/scheduler/plugins/usage/usage.go",
            "pkg/scheduler/plugins/usage/estimator.go",
            "pkg/scheduler/plugins/usage/shadow_cache.go",
        ),
        commit="ed72c7c81",
        releases="v1.13.0 and later, per-release differences by ssn.release",
    )
    needs_snapshot: ClassVar[bool] = True
    requires_verbs: ClassVar[tuple[str, ...]] = (Verb.ALLOCATE, Verb.DEALLOCATE)
    snapshot_only: ClassVar[str | None] = (
        "it reads each node's ResourceUsage, which Volcano's metrics source fills in the"
        " snapshot; no Kubernetes object Caldera can watch carries it"
    )
    ported_from = USAGE_AS_PORTED

    @classmethod
    def required_verbs(cls, release: Release) -> tuple[str, ...]:
        """The estimator's shadow load follows allocate/deallocate from 1.16; the plugin of
        earlier releases reads only the snapshot's metrics."""
        return cls.requires_verbs if release.has(USAGE_ESTIMATOR) else ()

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.config = parse_config(arguments)
        self.legacy_config = parse_legacy_config(arguments)
        self.metrics_interval = parse_metrics_interval(arguments)
        self.estimator = True
        self.cache = ShadowLoadCache()
        self.nodes: Mapping[str, NodeInfo] = {}
        self.now: Callable[[], datetime] = utc_now

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        raw = arguments.get(METRICS_INTERVAL_ARGUMENT)
        if raw is None:
            return {}
        if not isinstance(raw, str):
            return {METRICS_INTERVAL_ARGUMENT: "must be a Go duration string such as 30s"}
        try:
            parse_go_duration(raw)
        except DurationError as exc:
            return {METRICS_INTERVAL_ARGUMENT: str(exc)}
        return {}

    # --- session ------------------------------------------------------------------------------

    def hooks(self) -> frozenset[str]:
        hooks = super().hooks()
        if not self.estimator:
            # As upstream before 1.16: its allocate/deallocate handlers arrive with the estimator (1.16); no verb to send.
            hooks -= {"allocate", "deallocate"}
        return hooks

    def on_session_open(self, ssn: Session) -> None:
        self.estimator = ssn.release.has(USAGE_ESTIMATOR)
        self.now = ssn.now
        self.nodes = ssn.nodes
        self.cache.reset()
        if self.estimator:
            self.warm_up(ssn.nodes)

    def on_session_close(self) -> None:
        self.cache.reset()
        self.nodes = {}

    def should_add_to_shadow_cache(self, task: TaskInfo, now: datetime) -> bool:
        """``shouldAddToShadowCache`` with the configured metrics interval."""
        if not task.NodeName:
            return False
        if task.Status in _SHADOW_STATUSES:
            return True
        if task.Status == TaskStatus.Running:
            pod_status = task.Pod.status if task.Pod is not None else None
            if task.Pod is None or pod_status is None or pod_status.startTime is None:
                return True
            return now - go_time(pod_status.startTime) < self.metrics_interval
        return False

    def warm_up(self, nodes: Mapping[str, NodeInfo]) -> None:
        """``warmUpShadowCache``, nodes by name and their tasks by key (see the docstring)."""
        now = self.now()
        for name in sorted(nodes):
            node = nodes[name]
            tasks = node.Tasks or {}
            for key in sorted(tasks):
                task = tasks[key]
                if not self.should_add_to_shadow_cache(task, now):
                    continue
                risk = self.applied_risk_factor(node)
                cpu, mem = self.estimate_task_resource(task, risk)
                self.cache.add_estimate(node.Name, task.UID, cpu, mem)

    def _composites(self, node: NodeInfo) -> tuple[float, float]:
        shadow_cpu, shadow_mem = self.cache.get_node_est(node.Name)
        cpu_pct, mem_pct = _percentages(node)
        capacity_cpu, capacity_mem = _capacity(node)
        return (
            calc_composite_utilization(cpu_pct or 0.0, shadow_cpu, capacity_cpu),
            calc_composite_utilization(mem_pct or 0.0, shadow_mem, capacity_mem),
        )

    def applied_risk_factor(self, node: NodeInfo) -> float:
        """``calcAppliedRiskFactor`` (real load even when stale, plus the shadow)."""
        config = self.config
        cpu_comp, mem_comp = self._composites(node)
        load = calc_load_composite_percentage(
            cpu_comp, mem_comp, config.cpu_weight, config.memory_weight
        )
        return calc_applied_risk_factor(load, config.risk_threshold, config.risk_factor)

    def estimate_task_resource(self, task: TaskInfo, risk: float) -> tuple[float, float]:
        """``estimateTaskResource``: (milli-CPU, bytes)."""
        config = self.config
        if task.BestEffort:
            return (
                estimate_best_effort_resource(config.be_cpu, risk),
                estimate_best_effort_resource(config.be_memory, risk),
            )
        request = task.Resreq
        cpu_request = request.MilliCPU if request is not None else 0.0
        mem_request = request.Memory if request is not None else 0.0
        cpu_limit, mem_limit = pod_resource_limit(task.Pod)
        ratios = (config.request_ratio, config.burst_ratio)
        return (
            estimate_pod_resource(cpu_request, cpu_limit, *ratios, risk),
            estimate_pod_resource(mem_request, mem_limit, *ratios, risk),
        )

    # --- extension points ----------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        config = self.config if self.estimator else self.legacy_config
        if not metrics_available(node, self.now()):
            return None
        cpu_pct, mem_pct = _percentages(node)
        if (cpu_pct or 0.0) > config.cpu_threshold:
            return FitError(CPU_REASON, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
        if (mem_pct or 0.0) > config.mem_threshold:
            return FitError(MEMORY_REASON, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return None

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """``NodeOrderFn`` for every candidate node; the clock is read once per call."""
        now = self.now()
        score = self._score if self.estimator else self._legacy_score
        return {node.Name: score(node) if metrics_available(node, now) else 0.0 for node in nodes}

    def _score(self, node: NodeInfo) -> float:
        """``calcNodeScore``."""
        config = self.config
        cpu_comp, mem_comp = self._composites(node)
        return calc_node_score(
            cpu_comp, mem_comp, config.cpu_weight, config.memory_weight, config.usage_weight
        )

    def _legacy_score(self, node: NodeInfo) -> float:
        """v1.13-v1.15 ``nodeOrderFn`` after the freshness check."""
        config = self.legacy_config
        cpu_pct, mem_pct = _percentages(node)
        if cpu_pct is None or mem_pct is None:
            return 0.0
        cpu_score = (100 - cpu_pct) / 100 * float(config.cpu_weight)
        mem_score = (100 - mem_pct) / 100 * float(config.memory_weight)
        total = go_int64(config.cpu_weight + config.memory_weight)
        if total == 0:
            return 0.0  # Go: ±Inf or NaN, which JSON cannot carry
        score = (cpu_score + mem_score) / float(total)
        return score * float(go_int64(MAX_NODE_SCORE * config.usage_weight))

    def allocate(self, task: TaskInfo) -> str | None:
        """``handleAllocate`` (v1.16): fired on allocate, pipeline and unevict."""
        if not self.estimator:
            return None
        node = self.nodes.get(task.NodeName)
        if node is None:
            return None
        risk = self.applied_risk_factor(node)
        cpu, mem = self.estimate_task_resource(task, risk)
        self.cache.add_estimate(task.NodeName, task.UID, cpu, mem)
        return None

    def deallocate(self, task: TaskInfo) -> str | None:
        """``handleDeallocate`` (v1.16): fired on evict, unpipeline and a discarded statement."""
        if self.estimator:
            self.cache.sub_estimate_by_snapshot(task.UID)
        return None
