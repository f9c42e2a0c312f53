"""A pod's resource request as Volcano's cache computes it (``api.GetPodResourceRequest``,
``pkg/scheduler/api/pod_info.go``, v1.14.1), with ``InPlacePodVerticalScaling`` on (its default
from Kubernetes 1.33; Volcano v1.14.1 vendors k8s 1.34.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from plugins.support.resources import add_in_place, new_resource
from schemas.api import Resource
from schemas.k8s import Container, ResourceList
from schemas.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from app.cluster_state.objects import WatchedPod


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


def _requests(
    watched: WatchedPod, container: Container, statuses: Mapping[str, ResourceList | None]
) -> ResourceList | None:
    """The container's requests, or ``determineContainerReqs`` when the kubelet reported the
    container's resources (an in-place resize in progress or done)."""
    requests = container.resources.requests if container.resources else None
    if container.name not in statuses:
        return requests
    reported = statuses[container.name]
    allocated = (watched.allocated or {}).get(container.name)
    if watched.resize_infeasible:
        return max_resource_lists(reported, allocated)
    return max_resource_lists(requests, reported, allocated)


def _reported(watched: WatchedPod, init: bool) -> dict[str, ResourceList | None]:
    """Container name to ``status.(init)containerStatuses[].resources.requests``, for the
    statuses that carry ``resources`` (``cs.Resources != nil``)."""
    status = watched.pod.status
    if status is None:
        return {}
    statuses = status.initContainerStatuses if init else status.containerStatuses
    return {cs.name: cs.resources.requests for cs in statuses or () if cs.resources is not None}


def pod_resource_request(watched: WatchedPod) -> Resource:
    """``GetPodResourceRequest``: the containers' sum plus overhead, raised to the largest init
    container (restartable ones, sidecars, add to both), plus ``pods: 1``."""
    spec = watched.pod.spec
    result = Resource()
    if spec is None:
        result.ScalarResources = {"pods": 1.0}
        return result
    reported = _reported(watched, init=False)
    for container in spec.containers or ():
        add_in_place(result, new_resource(_requests(watched, container, reported)))
    if spec.overhead is not None:
        add_in_place(result, new_resource(spec.overhead))

    restartable = Resource()
    init_requests = Resource()
    reported_init = _reported(watched, init=True)
    for container in spec.initContainers or ():
        sidecar = container.restartPolicy == "Always"
        request = container.resources.requests if container.resources else None
        if sidecar:
            request = _requests(watched, container, reported_init)
        container_request = new_resource(request)
        if sidecar:
            add_in_place(result, container_request)
            add_in_place(restartable, container_request)
            container_request = restartable
        else:
            combined = Resource()
            add_in_place(combined, container_request)
            add_in_place(combined, restartable)
            container_request = combined
        set_max_in_place(init_requests, container_request)
    set_max_in_place(result, init_requests)
    if result.ScalarResources is None:
        result.ScalarResources = {}
    result.ScalarResources["pods"] = result.ScalarResources.get("pods", 0.0) + 1
    return result
