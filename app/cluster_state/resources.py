"""The resource arithmetic of a pod's resource request as Volcano's cache computes it
(``api.GetPodResourceRequest``, ``pkg/scheduler/api/pod_info.go``, v1.14.1; the request itself
is :func:`app.cluster_state.objects.pod_resource_request`, computed when a pod is decoded)."""

from __future__ import annotations

from schemas.api import Resource
from schemas.k8s import ResourceList
from schemas.quantity import QuantityError, parse_quantity


def _greater(a: str, b: str) -> bool:
    """``a.Cmp(b) > 0``; an unparseable quantity never wins (the API server refuses them)."""
    try:
        return parse_quantity(a) > parse_quantity(b)
    except QuantityError:
        return False


def max_resource_lists(first: ResourceList | None, *others: ResourceList | None) -> ResourceList:
    """``maxFn``: a copy of ``first`` raised to every larger quantity of ``others``."""
    result = dict(first or {})
    for other in others:
        for name, quantity in (other or {}).items():
            if name not in result or _greater(quantity, result[name]):
                result[name] = quantity
    return result


def set_max_in_place(res: Resource, other: Resource) -> None:
    """``Resource.SetMaxResource``, including its early return: when ``res`` has no scalar map
    it takes a copy of ``other``'s and stops."""
    res.MilliCPU = max(res.MilliCPU, other.MilliCPU)
    res.Memory = max(res.Memory, other.Memory)
    for name, amount in (other.ScalarResources or {}).items():
        if res.ScalarResources is None:
            res.ScalarResources = dict(other.ScalarResources or {})
            return
        if name not in res.ScalarResources or amount > res.ScalarResources[name]:
            res.ScalarResources[name] = amount
