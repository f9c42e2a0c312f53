"""Kubernetes objects as the API server serves them, built for the cluster-state tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.cluster_state.objects import (
    ClusterObjects,
    decode_node,
    decode_pod,
    decode_podgroup,
    decode_priority_class,
    decode_queue,
    decode_quota,
)
from plugins.pdb.kube import object_key
from tests.examples import example_bytes


def pod(
    name: str,
    *,
    namespace: str = "ns1",
    uid: str | None = None,
    phase: str = "Pending",
    node: str = "",
    group: str | None = None,
    requests: dict[str, str] | None = None,
    scheduler: str = "volcano",
    deleting: bool = False,
    priority: int | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    extra_spec: dict[str, Any] | None = None,
    extra_status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"{namespace}-{name}",
        "resourceVersion": "1",
    }
    notes = dict(annotations or {})
    if group is not None:
        notes["scheduling.k8s.io/group-name"] = group
    if notes:
        meta["annotations"] = notes
    if labels:
        meta["labels"] = labels
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T06:00:00Z"
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"requests": requests or {}}}],
        **(extra_spec or {}),
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, **(extra_status or {})},
    }


def node(
    name: str,
    allocatable: dict[str, str] | None = None,
    *,
    capacity: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    allocatable = allocatable or {"cpu": "4", "memory": "8Gi", "pods": "10"}
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {},
        # What the API server writes for a node whose kubelet reported nothing else: Go
        # marshals these two structs even when zero, and so does Volcano's snapshot.
        "status": {
            "allocatable": allocatable,
            "capacity": capacity or allocatable,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(NODE_INFO_KEYS, ""),
        },
    }


NODE_INFO_KEYS = (
    "machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
    "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture",
)  # fmt: skip


def podgroup(
    name: str,
    *,
    namespace: str = "ns1",
    queue: str = "q1",
    min_member: int = 1,
    priority_class: str = "",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    min_task_member: dict[str, int] | None = None,
    min_resources: dict[str, str] | None = None,
    phase: str = "Pending",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    spec: dict[str, Any] = {"minMember": min_member}
    if queue:
        spec["queue"] = queue
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    *,
    weight: int = 1,
    capability: dict[str, str] | None = None,
    deserved: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability is not None:
        spec["capability"] = capability
    if deserved is not None:
        spec["deserved"] = deserved
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee} if guarantee else {}
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": meta,
        "spec": spec,
        "status": {"state": "Open", "reservation": {}},
    }


def quota(
    name: str, namespace: str, hard: dict[str, str], used: dict[str, str] | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {"hard": hard}
    if used is not None:
        status["used"] = used
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": hard},
        "status": status,
    }


def priority_class(name: str, value: int, *, global_default: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }


def cluster(
    pods: Sequence[dict[str, Any]] = (),
    nodes: Sequence[dict[str, Any]] = (),
    podgroups: Sequence[dict[str, Any]] = (),
    queues: Sequence[dict[str, Any]] = (),
    quotas: Sequence[dict[str, Any]] = (),
    priority_classes: Sequence[dict[str, Any]] = (),
) -> ClusterObjects:
    return ClusterObjects(
        pods={object_key(o): decode_pod(o) for o in pods},
        nodes={object_key(o): decode_node(o) for o in nodes},
        podgroups={object_key(o): decode_podgroup(o) for o in podgroups},
        queues={object_key(o): decode_queue(o) for o in queues},
        quotas={object_key(o): decode_quota(o) for o in quotas},
        priority_classes={object_key(o): decode_priority_class(o) for o in priority_classes},
    )


def captured_in_a_cluster() -> bytes:
    """The captured v1.14 onSessionOpen body as it reads where its pods exist: it comes from
    Volcano's test cache, whose pods name no scheduler, while in a cluster a pending pod is in
    Volcano's cache only when it names Volcano's scheduler (its informer's filter)."""
    body = json.loads(example_bytes("volcano-1.14", "onSessionOpen.request.json"))
    tasks = [t for job in body["Jobs"].values() for t in (job.get("Tasks") or {}).values()]
    tasks += [t for node in body["Nodes"].values() for t in (node.get("Tasks") or {}).values()]
    for task in tasks:
        task["Pod"]["spec"]["schedulerName"] = "volcano"
    return json.dumps(body).encode()
