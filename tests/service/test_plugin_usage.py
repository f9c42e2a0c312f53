"""usage through the real server (Volcano 1.16): node load from ``ResourceUsage`` sampled just
now, a pod bound since the last sample counted by the warm-up, an allocation lowering its node's
score and the rollback deallocate restoring it, the thresholds, stale metrics, and the v1.15
plugin, which has no shadow load."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.service.conftest import CalderaProcess, StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, post, resource, task

GI = 2**30
PLUGIN = 'name: usage\narguments: {usage.weight: 5, thresholds: {cpu: 80}, metrics.interval: "1m"}'
BOUND = 16


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod(name: str, status: int, node_name: str = "") -> dict[str, Any]:
    body = task("ml", name, "pg", status=status, phase="Pending")
    body["Resreq"] = resource(1000, GI, {"pods": 1})
    body["NodeName"] = node_name
    body["BestEffort"] = False
    return body


def node(name: str, cpu: float, mem: float, tasks: list[dict[str, Any]], age: timedelta) -> Any:
    capacity = resource(4000, 8 * GI, {"pods": 110})
    metrics = {"MetricsTime": rfc3339(datetime.now(UTC) - age),
               "CPUUsageAvg": {"10m": cpu}, "MEMUsageAvg": {"10m": mem}}  # fmt: skip
    return {"Name": name, "Node": {"metadata": {"name": name}}, "State": {"Phase": 1},
            "Releasing": resource(), "Idle": capacity, "Used": resource(),
            "Allocatable": capacity, "Capacity": capacity, "ResourceUsage": metrics,
            "Tasks": {f"ml/{t['Name']}": t for t in tasks}}  # fmt: skip


WARM = pod("warm", BOUND, "n2")
T1 = pod("t1", TASK_PENDING)


async def open_session(server: CalderaProcess) -> list[dict[str, Any]]:
    fresh = timedelta(seconds=5)
    nodes = [node("n1", 30, 50, [], fresh), node("n2", 60, 50, [WARM], fresh),
             node("hot", 81, 10, [], fresh), node("stale", 95, 95, [], timedelta(minutes=6))]  # fmt: skip
    body = {"Jobs": {}, "Nodes": {n["Name"]: n for n in nodes}, "Queues": {},
            "NamespaceInfo": {}, "RevocableNodes": {}}  # fmt: skip
    assert await post(server, "onSessionOpen", body) == {}
    return nodes


async def test_usage_through_the_server(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config(PLUGIN, version="1.16"))
    nodes = await open_session(server)
    n1, n2, hot, stale = nodes

    answers = [await post(server, "predicate", {"task": T1, "node": n}) for n in nodes]
    assert answers == [
        {"status": "", "code": 0},
        {"status": "", "code": 0},
        {"status": "the CPU load of the node exceeds the upper limit.", "code": 3},
        {"status": "", "code": 0},  # stale metrics: the filter is off
    ]
    # n2 carries the warm pod: (2400 + 700) / 4000 cpu, (4 + 0.7) / 8 Gi memory.
    scores = (await post(server, "prioritize", {"task": T1, "nodes": nodes}))["nodeScore"]
    assert scores == {"n1": 300.0, "n2": pytest.approx(159.375), "hot": pytest.approx(272.5),
                      "stale": 0.0}  # fmt: skip

    placed = {**T1, "NodeName": "n1", "Status": 2}
    assert await post(server, "allocate", {"task": placed}) == {"errorMessage": ""}
    scores = (await post(server, "prioritize", {"task": T1, "nodes": [n1, n2]}))["nodeScore"]
    assert scores == {"n1": 234.375, "n2": pytest.approx(159.375)}

    # The statement is discarded: the rollback deallocate takes the estimate back.
    rollback = {**T1, "NodeName": "n1", "Status": TASK_PENDING}
    assert await post(server, "deallocate", {"task": rollback}) == {"errorMessage": ""}
    scores = (await post(server, "prioritize", {"task": T1, "nodes": [n1]}))["nodeScore"]
    assert scores == {"n1": 300.0}
    del hot, stale


async def test_usage_v1_15_has_no_shadow_load(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config(PLUGIN, version="1.15"))
    nodes = await open_session(server)
    placed = {**T1, "NodeName": "n1", "Status": 2}
    assert await post(server, "allocate", {"task": placed}) == {"errorMessage": ""}
    scores = (await post(server, "prioritize", {"task": T1, "nodes": nodes[:2]}))["nodeScore"]
    assert scores == {"n1": 300.0, "n2": 225.0}
