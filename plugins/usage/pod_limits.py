"""``GetPodResourceLimit`` of Volcano's ``pkg/scheduler/api/pod_info.go`` (volcano-sh/volcano at
master ed72c7c81, 2026-08-20), for cpu and memory: what a pod may use at most, which the usage
plugin's estimator weighs against its request."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from schemas.k8s import Container, ContainerStatus, Pod
from schemas.quantity import QuantityError, milli_value, value


def _quantity(limits: Mapping[str, str] | None, name: str, milli: bool) -> float | None:
    raw = (limits or {}).get(name)
    if raw is None:
        return None
    try:
        return float(milli_value(raw) if milli else value(raw))
    except (QuantityError, TypeError):
        return None


def _limits(
    container: Container, statuses: Mapping[str, ContainerStatus] | None
) -> tuple[float, float]:
    """One container's (milli-CPU, bytes) limit: ``maxFn(spec limits, status limits)`` when the
    container status carries resources."""
    spec = container.resources.limits if container.resources is not None else None
    status = statuses.get(container.name) if statuses is not None else None
    applied = status.resources.limits if status is not None and status.resources else None
    result = []
    for name, milli in (("cpu", True), ("memory", False)):
        candidates = (_quantity(spec, name, milli), _quantity(applied, name, milli))
        amounts = [amount for amount in candidates if amount is not None]
        result.append(max(amounts) if amounts else 0.0)
    return result[0], result[1]


def _statuses(entries: Iterable[ContainerStatus] | None) -> dict[str, ContainerStatus]:
    return {status.name: status for status in entries or ()}


def pod_resource_limit(pod: Pod | None) -> tuple[float, float]:
    """``GetPodResourceLimit``: the pod's (milli-CPU, bytes) limit."""
    if pod is None or pod.spec is None:
        return 0.0, 0.0
    spec = pod.spec
    status = pod.status
    statuses = _statuses(status.containerStatuses if status is not None else None)
    cpu = mem = 0.0
    for container in spec.containers or ():
        c, m = _limits(container, statuses)
        cpu += c
        mem += m
    init_statuses = _statuses(status.initContainerStatuses if status is not None else None)
    sidecar_cpu = sidecar_mem = init_cpu = init_mem = 0.0
    for container in spec.initContainers or ():
        if container.restartPolicy == "Always":
            c, m = _limits(container, init_statuses)
            cpu += c
            mem += m
            sidecar_cpu += c
            sidecar_mem += m
            c, m = sidecar_cpu, sidecar_mem
        else:
            c, m = _limits(container, None)
            c += sidecar_cpu
            m += sidecar_mem
        init_cpu = max(init_cpu, c)
        init_mem = max(init_mem, m)
    cpu = max(cpu, init_cpu)
    mem = max(mem, init_mem)
    pod_limits = spec.resources.limits if spec.resources is not None else None
    if pod_limits:
        pod_cpu = _quantity(pod_limits, "cpu", True)
        if pod_cpu is not None:
            cpu = pod_cpu
        pod_mem = _quantity(pod_limits, "memory", False)
        if pod_mem is not None:
            mem = pod_mem
    if spec.overhead:
        if cpu != 0:
            cpu += _quantity(spec.overhead, "cpu", True) or 0.0
        if mem != 0:
            mem += _quantity(spec.overhead, "memory", False) or 0.0
    return cpu, mem
