"""The Kubernetes objects the derivation reads, decoded from their API JSON.

Each watched object is kept as two parts: the typed view plugins read from a snapshot
(``schemas.k8s.Pod``, ``schemas.k8s.Node``, ``schemas.api.PodGroup``/``Queue``), so a derived
``TaskInfo.Pod`` is the same object a decoded snapshot holds, and the few fields Volcano's cache
reads that no plugin does (``spec.nodeName``, ``spec.schedulerName``, ``deletionTimestamp``…),
declared here rather than in ``schemas/k8s.py`` so the plugins' views stay what plugins read.
Everything else in an object is skipped unbuilt, which is what keeps the store small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec
from msgspec import Struct

from app.cluster_state.resources import max_resource_lists, set_max_in_place
from plugins.support.resources import add_in_place, new_resource
from schemas.api import Guarantee, PodGroup, Queue, Resource
from schemas.k8s import Container, Node, Pod, ResourceList, ResourceQuotaStatus, api_json

# --- the cache-only fields --------------------------------------------------------------------


class _Meta(Struct, gc=False):
    name: str = ""
    namespace: str = ""
    deletionTimestamp: datetime | None = None


class _ContainerStatus(Struct, gc=False):
    name: str = ""
    allocatedResources: ResourceList | None = None


class _Condition(Struct, gc=False):
    type: str = ""
    reason: str = ""


class _PodSpec(Struct, gc=False):
    nodeName: str = ""
    schedulerName: str = ""
    priority: int | None = None


class _PodStatus(Struct, gc=False):
    conditions: list[_Condition] | None = None
    containerStatuses: list[_ContainerStatus] | None = None
    initContainerStatuses: list[_ContainerStatus] | None = None


class _PodExtras(Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _PodStatus = msgspec.field(default_factory=_PodStatus)


class _NodeStatus(Struct, gc=False):
    allocatable: ResourceList | None = None
    capacity: ResourceList | None = None


class _NodeExtras(Struct, gc=False):
    status: _NodeStatus = msgspec.field(default_factory=_NodeStatus)


class _QuotaMeta(Struct, gc=False):
    name: str = ""
    namespace: str = ""


class _ResourceQuota(Struct, gc=False):
    metadata: _QuotaMeta = msgspec.field(default_factory=_QuotaMeta)
    status: ResourceQuotaStatus | None = None


class _PriorityClass(Struct, gc=False):
    metadata: _QuotaMeta = msgspec.field(default_factory=_QuotaMeta)
    value: int = 0
    globalDefault: bool = False


# --- what the store keeps ---------------------------------------------------------------------


class WatchedPod(Struct, gc=False):
    pod: Pod
    node_name: str
    scheduler_name: str
    priority: int | None
    """``spec.priority`` (set by the Priority admission plugin); None when absent."""
    deleting: bool
    """``metadata.deletionTimestamp`` is set."""
    resize_infeasible: bool
    """A ``PodResizePending`` condition with reason ``Infeasible`` (``IsPodResizeInfeasible``)."""
    allocated: dict[str, ResourceList] | None
    """Container name to ``status.containerStatuses[].allocatedResources`` (init and regular)."""
    resreq: Resource | None = None
    """``GetPodResourceRequest``, computed once per object version when it is decoded (it
    was most of a derivation's time): a derived task gets a copy."""


class WatchedNode(Struct, gc=False):
    node: Node
    allocatable: ResourceList | None
    capacity: ResourceList | None
    allocatable_resource: Resource | None = None
    capacity_resource: Resource | None = None
    """``NewResource`` of ``allocatable`` and ``capacity``, computed when decoded."""


class WatchedQuota(Struct, gc=False):
    namespace: str
    name: str
    status: ResourceQuotaStatus


class WatchedPriorityClass(Struct, gc=False):
    name: str
    value: int
    global_default: bool


# --- a pod's resource request -----------------------------------------------------------------
# As Volcano's cache computes it (``api.GetPodResourceRequest``, ``pkg/scheduler/api/pod_info.go``,
# v1.14.1), with ``InPlacePodVerticalScaling`` on (its default from Kubernetes 1.33; Volcano
# v1.14.1 vendors k8s 1.34.1).


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


def decode_pod(obj: Mapping[str, Any]) -> WatchedPod:
    body = api_json(obj)
    extras = msgspec.json.decode(body, type=_PodExtras)
    allocated: dict[str, ResourceList] = {}
    for statuses in (extras.status.containerStatuses, extras.status.initContainerStatuses):
        for cs in statuses or ():
            if cs.allocatedResources is not None:
                allocated[cs.name] = cs.allocatedResources
    watched = WatchedPod(
        pod=msgspec.json.decode(body, type=Pod),
        node_name=extras.spec.nodeName,
        scheduler_name=extras.spec.schedulerName,
        priority=extras.spec.priority,
        deleting=extras.metadata.deletionTimestamp is not None,
        resize_infeasible=any(
            c.type == "PodResizePending" and c.reason == "Infeasible"
            for c in extras.status.conditions or ()
        ),
        allocated=allocated or None,
    )
    watched.resreq = pod_resource_request(watched)
    return watched


def decode_node(obj: Mapping[str, Any]) -> WatchedNode:
    body = api_json(obj)
    extras = msgspec.json.decode(body, type=_NodeExtras)
    return WatchedNode(
        node=msgspec.json.decode(body, type=Node),
        allocatable=extras.status.allocatable,
        capacity=extras.status.capacity,
        allocatable_resource=new_resource(extras.status.allocatable),
        capacity_resource=new_resource(extras.status.capacity),
    )


def decode_podgroup(obj: Mapping[str, Any]) -> PodGroup:
    """A ``scheduling.volcano.sh/v1beta1`` PodGroup as the cache holds it: ``Version`` is
    ``v1beta1`` (``api.PodGroupVersionV1Beta1``)."""
    pg = msgspec.json.decode(api_json(obj), type=PodGroup)
    pg.Version = "v1beta1"
    return pg


_GO_EMPTY_STRUCT = msgspec.Raw(b"{}")


def decode_queue(obj: Mapping[str, Any]) -> Queue:
    """A Queue as Volcano's snapshot carries it: the cache converts the informer's v1beta1 Queue
    to ``scheduling.Queue`` (``AddQueueV1beta1``, cache/event_handlers.go), whose
    ``spec.guarantee`` and ``status.reservation`` are structs, not pointers (volcano.sh/apis
    v1.14.0 ``pkg/apis/scheduling/types.go``): Go's encoder writes them as ``{}`` when the object
    has none (``omitempty`` does not omit a struct). The API server keeps a custom resource's JSON
    as written, so a Queue whose status was never written (a new one) or whose spec came from
    YAML without ``guarantee`` lacks them."""
    queue = msgspec.json.decode(api_json(obj), type=Queue)
    if queue.spec.guarantee is None:
        queue.spec.guarantee = Guarantee()
    if bytes(queue.status.reservation_raw) in (b"null", b""):
        queue.status.reservation_raw = _GO_EMPTY_STRUCT
    return queue


def decode_quota(obj: Mapping[str, Any]) -> WatchedQuota:
    quota = msgspec.convert(obj, _ResourceQuota)
    return WatchedQuota(
        namespace=quota.metadata.namespace,
        name=quota.metadata.name,
        status=quota.status or ResourceQuotaStatus(),
    )


def decode_priority_class(obj: Mapping[str, Any]) -> WatchedPriorityClass:
    pc = msgspec.convert(obj, _PriorityClass)
    return WatchedPriorityClass(
        name=pc.metadata.name, value=pc.value, global_default=pc.globalDefault
    )


@dataclass(frozen=True)
class ChangeMark:
    """A point in a store's change log: ``log`` is the log's list (a restarted log is a new
    list), ``length`` how many entries it had. Between two marks on the same list, the entries
    in between are every change, in order."""

    log: list[tuple[str, bool]]
    length: int

    def since(self, earlier: ChangeMark | None) -> list[tuple[str, bool]] | None:
        """The changes from ``earlier`` to this mark; None when the log cannot tell."""
        if earlier is None or earlier.log is not self.log or earlier.length > self.length:
            return None
        return self.log[earlier.length : self.length]


@dataclass(frozen=True)
class ClusterObjects:
    """One consistent view of the watched collections, keyed as client-go keys them
    (``namespace/name``, or ``name`` for cluster-scoped objects)."""

    pods: Mapping[str, WatchedPod] = field(default_factory=dict)
    nodes: Mapping[str, WatchedNode] = field(default_factory=dict)
    podgroups: Mapping[str, PodGroup] = field(default_factory=dict)
    queues: Mapping[str, Queue] = field(default_factory=dict)
    quotas: Mapping[str, WatchedQuota] = field(default_factory=dict)
    priority_classes: Mapping[str, WatchedPriorityClass] = field(default_factory=dict)
    quota_namespaces: frozenset[str] = frozenset()
    """Every namespace that has had a ResourceQuota since the watch started: Volcano's cache
    keeps a namespace's collection when its last quota goes (``deleteResourceQuota``), so its
    snapshot still carries the namespace, with no quota."""
    marks: Mapping[str, ChangeMark] = field(default_factory=dict, compare=False)
    """Per collection (``pods``, ``nodes``...), where its store's change log stood when frozen
    (none for objects not frozen from a store)."""
