"""task-topology through the real server, in Volcano's order: onSessionOpen with a job whose
PodGroup asks for ps/worker affinity and ps anti-affinity, then for each task predicate (not
implemented: passes), prioritize and allocate; the buckets follow the allocations within the
session and start again from the next snapshot."""

from __future__ import annotations

from typing import Any

from tests.service.conftest import CalderaProcess, StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, post, resource, task

GI = 2**30
PLUGIN = "name: task-topology\narguments: {task-topology.weight: 2}"


def pod(name: str, spec: str) -> dict[str, Any]:
    body = task("ml", name, "tf", status=TASK_PENDING, phase="Pending",
                annotations={"volcano.sh/task-spec": spec})  # fmt: skip
    body["TaskRole"] = spec
    body["Resreq"] = resource(1000, GI, {"pods": 1})
    return body


PS0, PS1 = pod("tf-ps-0", "ps"), pod("tf-ps-1", "ps")
W0, W1 = pod("tf-worker-0", "worker"), pod("tf-worker-1", "worker")


def job(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    annotations = {
        "volcano.sh/task-topology-affinity": "ps,worker",
        "volcano.sh/task-topology-anti-affinity": "ps",
    }
    return {
        "UID": "ml/tf",
        "Name": "tf",
        "Namespace": "ml",
        "Queue": "default",
        "MinAvailable": 4,
        "Tasks": {t["UID"]: t for t in tasks},
        "PodGroup": {
            "metadata": {"name": "tf", "namespace": "ml", "annotations": annotations},
            "spec": {"minMember": 4, "queue": "default"},
            "status": {"phase": "Inqueue"},
            "Version": "v1beta1",
        },
    }


def node(name: str, cpu: float = 8000) -> dict[str, Any]:
    idle = resource(cpu, 32 * GI, {"pods": 110})
    return {"Name": name, "Node": {"metadata": {"name": name}}, "State": {"Phase": 1},
            "Releasing": resource(), "Idle": idle, "Used": resource(), "Allocatable": idle,
            "Capacity": idle, "Tasks": {}}  # fmt: skip


NODES = [node("n1"), node("n2")]


async def open_session(server: CalderaProcess) -> None:
    body = {"Jobs": {"ml/tf": job([PS0, PS1, W0, W1])}, "Nodes": {n["Name"]: n for n in NODES},
            "Queues": {}, "NamespaceInfo": {}, "RevocableNodes": {}}  # fmt: skip
    assert await post(server, "onSessionOpen", body) == {}


async def place(server: CalderaProcess, t: dict[str, Any], expect: dict[str, float]) -> str:
    """One allocation as Volcano's allocate action makes it; returns the chosen node."""
    for n in NODES:
        assert await post(server, "predicate", {"task": t, "node": n}) == {"status": "", "code": 0}
    scores = (await post(server, "prioritize", {"task": t, "nodes": NODES}))["nodeScore"]
    assert scores == expect
    best = min(scores, key=lambda name: (-scores[name], name))
    answer = await post(server, "allocate", {"task": {**t, "NodeName": best, "Status": 2}})
    assert answer == {"errorMessage": ""}
    return best


async def test_task_topology_through_the_server(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config(PLUGIN, version="1.15"))
    # Before any session the plugin (it needs the snapshot) is not consulted.
    assert await post(server, "prioritize", {"task": PS0, "nodes": NODES}) == {
        "nodeScore": {},
        "errorMessage": "",
    }
    await open_session(server)
    # Buckets: {ps-0, worker-0} and {ps-1, worker-1}; largest bucket 2, weight 2.
    # ps-0: 2 unplaced on either node -> 2 * 2 * 100 / 2 = 200.
    assert await place(server, PS0, {"n1": 200.0, "n2": 200.0}) == "n1"
    # ps-1 (anti-affine to ps-0, now on n1): n1 -1 + 2 = 1 -> 100; n2 2 -> 200.
    assert await place(server, PS1, {"n1": 100.0, "n2": 200.0}) == "n2"
    # worker-0 follows ps-0: n1 1 placed + 1 unplaced = 2 -> 200; n2 1 -> 100.
    assert await place(server, W0, {"n1": 200.0, "n2": 100.0}) == "n1"
    # worker-1 follows ps-1 to n2.
    assert await place(server, W1, {"n1": 100.0, "n2": 200.0}) == "n2"
    # A rolled-back allocation is not undone (upstream has no DeallocateFunc).
    assert await post(server, "deallocate", {"task": {**W1, "NodeName": "n2"}}) == {
        "errorMessage": ""
    }
    # worker-1 still counts as placed on n2 (2 of its bucket there), nothing left unplaced.
    scores = (await post(server, "prioritize", {"task": W1, "nodes": NODES}))["nodeScore"]
    assert scores == {"n1": 0.0, "n2": 200.0}

    # A new session rebuilds the buckets from its snapshot.
    await open_session(server)
    scores = (await post(server, "prioritize", {"task": PS1, "nodes": NODES}))["nodeScore"]
    assert scores == {"n1": 200.0, "n2": 200.0}
    # A node the task cannot fit scores 0.
    tiny = node("tiny", cpu=500)
    scores = (await post(server, "prioritize", {"task": PS1, "nodes": [tiny]}))["nodeScore"]
    assert scores == {"tiny": 0.0}
