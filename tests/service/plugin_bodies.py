"""Volcano-shaped request bodies for the per-plugin service tests (Go field names, compact JSON
as ``json.Marshal`` writes it) and a poster that checks the HTTP status."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tests.service.conftest import CalderaProcess

TASK_RUNNING = 32
TASK_PENDING = 1


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def config(plugin_yaml: str, version: str = "1.15") -> str:
    """A configuration with one tier; ``plugin_yaml`` is the plugin entry's lines after ``- ``."""
    entry = "\n".join(("  - " if i == 0 else "    ") + line
                      for i, line in enumerate(plugin_yaml.strip().splitlines()))  # fmt: skip
    return f'volcanoVersion: "{version}"\ntiers:\n- plugins:\n{entry}\n'


def job(
    namespace: str,
    name: str,
    *,
    priority: int = 0,
    created: datetime | None = None,
    waiting_time: int | None = None,
) -> dict[str, Any]:
    """A JobInfo keyed ``namespace/name`` in the snapshot (a zero metav1.Time is null)."""
    stamp = None if created is None else rfc3339(created)
    return {
        "UID": f"{namespace}/{name}",
        "PgUID": f"pg-{namespace}-{name}",
        "Name": name,
        "Namespace": namespace,
        "Queue": "q1",
        "Priority": priority,
        "MinAvailable": 1,
        "WaitingTime": waiting_time,
        "Tasks": {},
        "CreationTimestamp": stamp,
        "PodGroup": {
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": stamp},
            "spec": {"minMember": 1, "queue": "q1", "minResources": {"cpu": "1"}},
            "status": {"phase": "Pending"},
            "Version": "v1beta1",
        },
    }


def task(
    namespace: str,
    name: str,
    group: str,
    *,
    priority: int = 1,
    status: int = TASK_RUNNING,
    priority_class: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A TaskInfo with its Pod, as the extender plugin marshals it."""
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
        "schedulerName": "volcano",
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "UID": f"uid-{namespace}-{name}",
        "Job": f"{namespace}/{group}",
        "Name": name,
        "Namespace": namespace,
        "TaskRole": "worker",
        "Resreq": {"MilliCPU": 1000, "Memory": 0, "ScalarResources": None, "MaxTaskNum": 0},
        "NodeName": "node-1" if status == TASK_RUNNING else "",
        "Status": status,
        "Priority": priority,
        "Preemptable": False,
        "Pod": {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "labels": labels or {},
                "annotations": {"scheduling.k8s.io/group-name": group, **(annotations or {})},
            },
            "spec": spec,
            "status": {"phase": phase, "conditions": conditions or []},
        },
    }


def scheduled_condition(at: datetime, status: str = "True") -> dict[str, Any]:
    return {"type": "PodScheduled", "status": status, "lastProbeTime": None,
            "lastTransitionTime": rfc3339(at)}  # fmt: skip


async def post(server: CalderaProcess, verb: str, body: dict[str, Any]) -> Any:
    response = await server.client.post(
        f"/{verb}",
        content=json.dumps(body, separators=(",", ":")).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200, (verb, response.text)
    return response.json()


async def open_session(
    server: CalderaProcess,
    jobs: list[dict[str, Any]],
    queues: list[dict[str, Any]] | None = None,
) -> None:
    """Open a session holding ``jobs`` and the QueueInfos ``queues`` (keyed by ``Name``)."""
    body = {
        "Jobs": {f"{j['Namespace']}/{j['Name']}": j for j in jobs},
        "Nodes": {},
        "Queues": {q["Name"]: q for q in queues or []},
        "NamespaceInfo": {},
        "RevocableNodes": {},
        "NodeList": None,
    }
    assert await post(server, "onSessionOpen", body) == {}


async def evict(
    server: CalderaProcess, verb: str, evictor: dict[str, Any], evictees: list[dict[str, Any]]
) -> Any:
    return await post(server, verb, {"evictor": evictor, "evictees": evictees})


def resource(
    cpu: float = 0, memory: float = 0, scalars: dict[str, float] | None = None
) -> dict[str, Any]:
    """An ``api.Resource``: MilliCPU, Memory in bytes, scalars in milli-units."""
    return {"MilliCPU": cpu, "Memory": memory, "ScalarResources": scalars, "MaxTaskNum": 0}


def admission_job(
    name: str, min_resources: dict[str, str] | None, *, phase: str = "Pending", ns: str
) -> dict[str, Any]:
    """A JobInfo with no tasks whose PodGroup asks for ``min_resources`` (None: no minimum),
    as the enqueue action sees it."""
    spec: dict[str, Any] = {"minMember": 1, "queue": "default"}
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {
        "UID": f"{ns}/{name}",
        "Name": name,
        "Namespace": ns,
        "Queue": "default",
        "MinAvailable": 1,
        "Tasks": {},
        "Allocated": resource(),
        "TotalRequest": resource(),
        "PodGroup": {
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": phase},
            "Version": "v1beta1",
        },
    }
