"""nodegroup through the real server (Volcano 1.16, hierarchy on): a child queue without
affinity inherits its parent's; its own annotation limits it to 3 cpu on group ``a``, where one
of its tasks already runs. Predicate and prioritize follow the affinity, the limit is reached within the session
through an allocate call, and the rollback deallocate of a discarded statement frees it again."""

from __future__ import annotations

from typing import Any

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, TASK_RUNNING, config, post, resource, task

GI = 2**30
PLUGIN = "name: nodegroup\nenableHierarchy: true\narguments: {strict: true}"
AFFINITY = {
    "nodeGroupAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": ["a", "b"],
        "preferredDuringSchedulingIgnoredDuringExecution": ["a"],
    },
    "nodeGroupAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["c"]},
}
LIMITS = {"volcano.sh/nodegroup-resource-limits": '{"a":{"cpu":"3"}}'}


def queue(name: str, parent: str, spec: dict[str, Any], annotations: dict[str, str]) -> Any:
    return {"UID": name, "Name": name, "Weight": 1,
            "Queue": {"metadata": {"name": name, "annotations": annotations},
                      "spec": {"weight": 1, "parent": parent, **spec}, "status": {}}}  # fmt: skip


QUEUES = [queue("root", "", {}, {}), queue("team", "root", {"affinity": AFFINITY}, LIMITS),
          queue("team-dev", "team", {}, LIMITS)]  # fmt: skip


def pod(name: str, status: int, node_name: str = "") -> dict[str, Any]:
    body = task("ml", name, "pg", status=status,
                phase="Running" if status == TASK_RUNNING else "Pending")  # fmt: skip
    body["Resreq"] = resource(1000, GI, {"pods": 1})
    body["NodeName"] = node_name
    return body


def node(name: str, group: str | None) -> dict[str, Any]:
    labels = {} if group is None else {"volcano.sh/nodegroup-name": group}
    idle = resource(8000, 32 * GI, {"pods": 110})
    return {"Name": name, "Node": {"metadata": {"name": name, "labels": labels}},
            "State": {"Phase": 1}, "Releasing": resource(), "Idle": idle, "Used": resource(),
            "Allocatable": idle, "Capacity": idle, "Tasks": {}}  # fmt: skip


NODES = [node("na", "a"), node("nb", "b"), node("nc", "c"), node("bare", None)]
RUNNING = pod("done", TASK_RUNNING, "na")
T1, T2, T3 = pod("t1", TASK_PENDING), pod("t2", TASK_PENDING), pod("t3", TASK_PENDING)


def job() -> dict[str, Any]:
    tasks = [RUNNING, T1, T2, T3]
    return {"UID": "ml/pg", "Name": "pg", "Namespace": "ml", "Queue": "team-dev",
            "MinAvailable": 1, "Tasks": {t["UID"]: t for t in tasks},
            "PodGroup": {"metadata": {"name": "pg", "namespace": "ml"},
                         "spec": {"minMember": 1, "queue": "team-dev"},
                         "status": {"phase": "Running"}, "Version": "v1beta1"}}  # fmt: skip


PASS = {"status": "", "code": 0}
EXCEEDED = {"status": "node group resource limit exceeded", "code": 3}


async def test_nodegroup_through_the_server(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config(PLUGIN, version="1.16"))
    body = {"Jobs": {"ml/pg": job()}, "Nodes": {n["Name"]: n for n in NODES},
            "Queues": {q["Name"]: q for q in QUEUES}, "NamespaceInfo": {},
            "RevocableNodes": {}}  # fmt: skip
    assert await post(server, "onSessionOpen", body) == {}

    # team-dev has no affinity of its own: it inherits team's (hierarchy on), not its limit
    # (limits are per queue): team-dev's own annotation caps group a at 3 cpu, 1 used.
    answers = [await post(server, "predicate", {"task": T1, "node": n}) for n in NODES]
    assert answers == [
        PASS,
        PASS,
        {"status": "node does not satisfy the node group affinity", "code": 3},
        {"status": "node group label not found", "code": 3},
    ]
    scores = (await post(server, "prioritize", {"task": T1, "nodes": NODES}))["nodeScore"]
    assert scores == {"na": 150.0, "nb": 100.0, "nc": 0.0, "bare": 0.0}

    # t1 and t2 go to group a: 1 + 1 + 1 = 3 cpu, the limit.
    for t in (T1, T2):
        assert await post(server, "predicate", {"task": t, "node": NODES[0]}) == PASS
        placed = {**t, "NodeName": "na", "Status": 2}
        assert await post(server, "allocate", {"task": placed}) == {"errorMessage": ""}
    assert await post(server, "predicate", {"task": T3, "node": NODES[0]}) == EXCEEDED
    assert await post(server, "predicate", {"task": T3, "node": NODES[1]}) == PASS

    # The job's statement is discarded: Volcano sends the rollback deallocate, room again.
    rollback = {**T2, "NodeName": "na", "Status": 1}
    assert await post(server, "deallocate", {"task": rollback}) == {"errorMessage": ""}
    assert await post(server, "predicate", {"task": T3, "node": NODES[0]}) == PASS

    # A new session starts again from its snapshot.
    assert await post(server, "onSessionOpen", body) == {}
    assert await post(server, "predicate", {"task": T3, "node": NODES[0]}) == PASS
