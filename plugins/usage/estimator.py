"""The load estimator of Volcano's ``usage`` plugin: ``pkg/scheduler/plugins/usage/estimator.go``
(the score and risk arithmetic) and ``shadow_cache.go`` (per-node estimates of pods placed since
the last metrics sample, with the per-task record a deallocate takes back) of volcano-sh/volcano
at master ed72c7c81 (2026-08-20; the same files as v1.16.0-alpha.0/1). ``plugins/usage/usage.py`` is
the plugin; this module is its two helper files, kept apart as upstream keeps them."""

from __future__ import annotations

from dataclasses import dataclass

from plugins.support.goint import go_int64

MAX_NODE_SCORE = 100
"""``fwk.MaxNodeScore``."""


# --- estimator.go ------------------------------------------------------------------------------


def calc_load_composite_percentage(
    cpu: float, mem: float, cpu_weight: int, mem_weight: int
) -> float:
    """``CalcLoadCompositePercentage``."""
    total = go_int64(cpu_weight + mem_weight)
    if total == 0:
        return 0.0
    return (cpu * float(cpu_weight) + mem * float(mem_weight)) / float(total)


def calc_applied_risk_factor(load: float, risk_threshold: float, risk_factor: float) -> float:
    """``CalcAppliedRiskFactor``."""
    if risk_factor < 1.0:
        return 1.0
    if load >= risk_threshold:
        return risk_factor
    return 1.0


def _clamp(number: float, low: float, high: float) -> float:
    if number < low:
        return low
    if number > high:
        return high
    return number


def estimate_pod_resource(
    request: float, limit: float, request_weight: float, burst_weight: float, risk: float
) -> float:
    """``EstimatePodResource`` for one dimension."""
    if request < 0:
        request = 0.0
    effective_limit = limit
    if effective_limit <= 0 or effective_limit < request:
        effective_limit = request
    burst = effective_limit - request
    if burst < 0:
        burst = 0.0
    estimate = (request * request_weight + burst * burst_weight) * risk
    return _clamp(estimate, 0.0, effective_limit)


def estimate_best_effort_resource(configured: float, risk: float) -> float:
    """``EstimateBestEffortResource``."""
    if configured < 0:
        configured = 0.0
    return configured * risk


def calc_composite_utilization(real_percent: float, shadow: float, capacity: float) -> float:
    """``CalcCompositeUtilization``: ``(pct / 100 * capacity + shadow) / capacity`` in 0..1."""
    if capacity <= 0:
        return 0.0
    real = real_percent / 100.0 * capacity
    composite = (real + shadow) / capacity
    if composite > 1.0:
        return 1.0
    if composite < 0:
        return 0.0
    return composite


def calc_node_score(
    cpu_comp: float, mem_comp: float, cpu_weight: int, mem_weight: int, usage_weight: int
) -> float:
    """``CalcNodeScore``."""
    total = go_int64(cpu_weight + mem_weight)
    if total == 0:
        return 0.0
    cpu_score = (1.0 - cpu_comp) * float(cpu_weight)
    mem_score = (1.0 - mem_comp) * float(mem_weight)
    score = (cpu_score + mem_score) / float(total)
    return score * float(MAX_NODE_SCORE) * float(usage_weight)


# --- shadow_cache.go ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodEstSnapshot:
    node_name: str
    cpu_millis: float
    mem_bytes: float


class ShadowLoadCache:
    """``ShadowLoadCache``: per-node estimates and the per-task record they came from."""

    def __init__(self) -> None:
        self.node_cpu: dict[str, float] = {}
        self.node_mem: dict[str, float] = {}
        self.snapshots: dict[str, PodEstSnapshot] = {}

    def is_clean(self) -> bool:
        return not self.node_cpu and not self.node_mem and not self.snapshots

    def reset(self) -> None:
        self.node_cpu.clear()
        self.node_mem.clear()
        self.snapshots.clear()

    def add_estimate(self, node: str, task_id: str, cpu: float, mem: float) -> None:
        """``AddEstimate``: an earlier record of the task is taken out first."""
        previous = self.snapshots.get(task_id)
        if previous is not None:
            self._subtract(previous)
        self.node_cpu[node] = self.node_cpu.get(node, 0.0) + cpu
        self.node_mem[node] = self.node_mem.get(node, 0.0) + mem
        self.snapshots[task_id] = PodEstSnapshot(node, cpu, mem)

    def sub_estimate_by_snapshot(self, task_id: str) -> None:
        """``SubEstimateBySnapshot``: no record, nothing."""
        snapshot = self.snapshots.pop(task_id, None)
        if snapshot is not None:
            self._subtract(snapshot)

    def _subtract(self, snapshot: PodEstSnapshot) -> None:
        node = snapshot.node_name
        self.node_cpu[node] = max(self.node_cpu.get(node, 0.0) - snapshot.cpu_millis, 0.0)
        self.node_mem[node] = max(self.node_mem.get(node, 0.0) - snapshot.mem_bytes, 0.0)

    def get_node_est(self, node: str) -> tuple[float, float]:
        return self.node_cpu.get(node, 0.0), self.node_mem.get(node, 0.0)
