"""Identifiers-mode calls (app/identifiers.py): bodies that name their objects, answered in
``sessionState: cluster`` from the derived state exactly as the same objects sent in today's
bodies are answered. The oracle is a second Caldera in cluster mode on the same cluster, sent
Volcano's objects as JSON (each encoded from the identifiers session's own objects at that
moment, so after an allocation both see the placed task); the objects' change itself is proven
against a derivation in tests/app/cluster_state/test_session_objects.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from app.cluster_state.encode import encode_state
from app.config import load_config_text
from app.identifiers import IdentifierCalls
from app.server.main import create_app
from app.server.options import ServeOptions
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import node
from tests.app.cluster_state.test_cluster_mode import SESSION_PLUGINS, client, cluster_app, config
from tests.app.cluster_state.test_compare import matching_objects

SESSION = "7f3c9a0e-5d1b-4b8a-9d62-3e0f5a7c1b24"
WORKER = {"task": "ns1-worker-0", "job": "ns1/pg-pending"}
RUNNER = {"uid": "ns1-runner-0", "job": "ns1/pg-running"}
NODES = ["node1", "node2"]
ROSTER = {
    "session": SESSION,
    "jobs": ["ns1/pg-pending", "ns1/pg-running"],
    "nodes": NODES,
    "queues": ["q1"],
    "revocableNodes": [],
}


PLUGINS = SESSION_PLUGINS.replace(
    "  - name: nodegroup\n", "  - name: nodegroup\n    arguments:\n      strict: false\n"
)
"""nodegroup not strict: a node without a group passes, one in a group q1 has no affinity to
fails."""


def objects_with_a_node_group() -> dict[str, Any]:
    """node2 is in a node group that q1 has no affinity to: nodegroup fails it."""
    objects = matching_objects()
    objects["nodes"][1] = node("node2", labels={"volcano.sh/nodegroup-name": "g1"})
    return objects


def ids(**fields: Any) -> bytes:
    return json.dumps({"session": SESSION, **fields}).encode()


class Volcano:
    """The two Caldera: one sent identifiers, one sent the same objects."""

    def __init__(self, names: httpx.AsyncClient, objects: httpx.AsyncClient, app: Any) -> None:
        self.names, self.objects, self.app = names, objects, app

    def state(self) -> dict[str, Any]:
        """The identifiers session's objects now, as Volcano's JSON."""
        calls: IdentifierCalls = self.app.runtime.extender.identifiers
        objects = calls.objects
        assert objects is not None
        now = OnSessionOpenRequest(
            Jobs=objects.jobs, Nodes=objects.nodes, Queues=dict(objects.queues)
        )
        state: dict[str, Any] = json.loads(bytes(encode_state(now)))
        return state

    def task(self, job: str, uid: str) -> Any:
        return self.state()["Jobs"][job]["Tasks"][uid]

    async def both(self, verb: str, names: bytes, objects: dict[str, Any]) -> tuple[Any, Any]:
        a = await self.names.post(f"/{verb}", content=names)
        b = await self.objects.post(f"/{verb}", content=json.dumps(objects).encode())
        assert a.status_code == b.status_code == 200, (a.text, b.text)
        return a.json(), b.json()


@pytest.fixture
async def volcano() -> Any:
    objects = objects_with_a_node_group()
    names_app, objects_app = cluster_app(objects, PLUGINS), cluster_app(objects, PLUGINS)
    async with client(names_app) as names, client(objects_app) as sent:
        yield Volcano(names, sent, names_app)


async def test_every_verb_answers_as_on_the_objects_sent(volcano: Volcano) -> None:
    v = volcano
    assert (await v.names.post("/onSessionOpen", content=ids(**ROSTER))).status_code == 200
    job = lambda name: v.state()["Jobs"][name]  # noqa: E731
    a, b = await v.both("jobEnqueueable", ids(job="ns1/pg-pending"), {"job": job("ns1/pg-pending")})
    assert a == b

    worker = v.task("ns1/pg-pending", "ns1-worker-0")
    per_node = {}
    for name in NODES:
        a, b = await v.both(
            "predicate",
            ids(**WORKER, node=name),
            {"task": worker, "node": v.state()["Nodes"][name]},
        )
        assert a == b
        per_node[name] = a
    assert per_node["node1"]["status"] == ""
    assert per_node["node2"]["code"] == 3  # nodegroup: UnschedulableAndUnresolvable
    batch = await v.names.post("/batchPredicate", content=ids(**WORKER, nodes=NODES))
    assert batch.status_code == 200
    assert batch.json() == {
        "failedNodes": {
            n: {"code": a["code"], "reason": a["status"]}
            for n, a in per_node.items()
            if a["status"]
        }
    }

    a, b = await v.both(
        "prioritize",
        ids(**WORKER, nodes=NODES),
        {"task": worker, "nodes": [v.state()["Nodes"][n] for n in NODES]},
    )
    assert a == b

    runner = v.task("ns1/pg-running", "ns1-runner-0")
    for verb in ("preemptable", "reclaimable"):
        a, b = await v.both(
            verb,
            ids(evictor={"uid": WORKER["task"], "job": WORKER["job"]}, evictees=[RUNNER]),
            {"evictor": worker, "evictees": [runner]},
        )
        assert a["status"] == b["status"]
        assert a["victims"] == [t["UID"] for t in b["victims"] or []]

    a, b = await v.both("queueOverused", ids(queue="q1"), {"queue": v.state()["Queues"]["q1"]})
    assert a == b

    # An allocation: both then see the task placed (the objects' copy from the session's state).
    a = await v.names.post("/allocate", content=ids(**WORKER, node="node1", status="Allocated"))
    b = await v.objects.post(
        "/allocate", content=json.dumps({"task": v.task("ns1/pg-pending", "ns1-worker-0")})
    )
    assert a.status_code == b.status_code == 200 and a.json() == b.json()
    placed = v.task("ns1/pg-pending", "ns1-worker-0")
    assert placed["Status"] == 2 and placed["NodeName"] == "node1"
    held = v.app.runtime.extender.identifiers.objects.nodes["node1"].Tasks
    assert (
        "ns1/worker-0" in held
    )  # (encode_state writes no node's Tasks: no plugin here reads them)
    a, b = await v.both("jobReady", ids(job="ns1/pg-pending"), {"job": job("ns1/pg-pending")})
    assert a == b
    a, b = await v.both(
        "predicate",
        ids(**WORKER, node="node1"),
        {"task": placed, "node": v.state()["Nodes"]["node1"]},
    )
    assert a == b
    a = await v.names.post("/deallocate", content=ids(**WORKER, node="node1", status="Pending"))
    b = await v.objects.post(
        "/deallocate", content=json.dumps({"task": v.task("ns1/pg-pending", "ns1-worker-0")})
    )
    assert a.status_code == b.status_code == 200 and a.json() == b.json()
    a, b = await v.both("jobEnqueueable", ids(job="ns1/pg-pending"), {"job": job("ns1/pg-pending")})
    assert a == b
    assert (await v.names.post("/onSessionClose", content=ids())).status_code == 200
    assert v.app.runtime.extender.sessions.current is None


async def test_capabilities_say_identifiers_in_cluster_mode_only() -> None:
    async with client(cluster_app(matching_objects())) as c:
        answer = await c.get("/capabilities")
    assert answer.json() == {"bodies": ["objects", "identifiers"], "batchPredicate": True}
    snapshot = create_app(ServeOptions.of(load_config_text(config("snapshot"), "c.yaml")))
    async with client(snapshot) as c:
        answer = await c.get("/capabilities")
        refused = await c.post("/predicate", content=ids(**WORKER, node="node1"))
        no_batch = await c.post("/batchPredicate", content=ids(**WORKER, nodes=NODES))
        refused_open = await c.post("/onSessionOpen", content=ids(**ROSTER))
        refused_vote = await c.post("/jobEnqueueable", content=ids(job="ns1/pg-pending"))
    assert answer.json() == {"bodies": ["objects"], "batchPredicate": False}
    assert refused.status_code == 400
    assert "sessionState cluster" in refused.json()["error"]
    assert "runs sessionState snapshot" in refused.json()["error"]
    assert no_batch.status_code == 404
    # The roster would read as an empty snapshot: refused, not a session of nothing.
    for answer in (refused_open, refused_vote):
        assert answer.status_code == 400 and "sessionState cluster" in answer.json()["error"]


async def test_the_roster_decides_the_sessions_objects() -> None:
    """A node Volcano's session does not hold is not Caldera's either; one Caldera lacks is
    counted, fails the batched predicate with Error, and a per-node call on it is a 409."""
    app = cluster_app(objects_with_a_node_group(), PLUGINS)
    roster = {**ROSTER, "nodes": ["node1", "node9"]}
    async with client(app) as c:
        assert (await c.post("/onSessionOpen", content=ids(**roster))).status_code == 200
        assert app.runtime.extender.sessions.current.ssn.nodes.keys() == {"node1"}
        batch = await c.post(
            "/batchPredicate", content=ids(**WORKER, nodes=["node1", "node2", "node9"])
        )
        unknown = await c.post("/predicate", content=ids(**WORKER, node="node2"))
        scraped = (await c.get("/metrics")).text
    assert batch.json()["failedNodes"].keys() == {"node2", "node9"}
    assert batch.json()["failedNodes"]["node9"]["code"] == 1
    assert unknown.status_code == 409 and unknown.json()["error"].startswith("node 'node2'")
    assert (
        'caldera_identifiers_roster_differences_total{section="nodes",side="volcano"} 1.0'
        in scraped
    )
    assert (
        'caldera_identifiers_roster_differences_total{section="nodes",side="caldera"} 1.0'
        in scraped
    )
    assert 'caldera_identifiers_unknown_objects_total{verb="predicate"} 2.0' in scraped


async def test_without_onsessionopen_the_first_call_opens_the_session_and_a_new_id_another() -> (
    None
):
    app = cluster_app(matching_objects())
    extender = app.runtime.extender
    async with client(app) as c:
        assert (
            await c.post("/jobEnqueueable", content=ids(job="ns1/pg-pending"))
        ).status_code == 200
        first = extender.sessions.current
        assert first is not None and len(first.ssn.nodes) == 2  # the whole derived state
        assert (await c.post("/jobReady", content=ids(job="ns1/pg-pending"))).status_code == 200
        assert extender.sessions.current is first
        other = json.dumps({"session": "another", "job": "ns1/pg-pending"}).encode()
        assert (await c.post("/jobReady", content=other)).status_code == 200
        assert extender.sessions.current is not first
        assert extender.identifiers.objects.session == "another"
        debug = (await c.get("/debug/session")).json()
    assert debug["identifiers"] == {"calls": 3, "session": "another", "events": 0}


@pytest.mark.parametrize(
    ("verb", "body", "error"),
    [
        ("predicate", {"task": "t", "job": "j"}, "`node` (one node) or `nodes`"),
        ("jobEnqueueable", {"job": 3}, "Expected `str`, got `int` - at `job`"),
        ("allocate", {"task": "ns1-worker-0", "job": "ns1/pg-pending", "node": "node1"},
         "missing required field `status`"),
        ("jobEnqueueable", {"job": "ns1/ghost"}, "job 'ns1/ghost' is not in the session"),
    ],
    ids=["predicate without node", "wrong type", "missing field", "unknown job"],
)  # fmt: skip
async def test_bad_identifiers_bodies_are_clear_4xx(
    verb: str, body: dict[str, Any], error: str
) -> None:
    async with client(cluster_app(matching_objects())) as c:
        answer = await c.post(f"/{verb}", content=ids(**body))
    assert 400 <= answer.status_code < 500
    assert error in answer.json()["error"]


async def test_a_session_before_the_watches_listed_holds_in_identifiers_mode_too() -> None:
    """No state yet (a sidecar restarted under a running vc-scheduler): held as a stale
    session is (onStaleState hold): the batched predicate fails every node, the vote rejects,
    and an allocate event, which has no state to be replayed on, does not fail Volcano's
    statement."""
    app = create_app(ServeOptions.of(load_config_text(config("cluster", PLUGINS), "c.yaml")))
    async with client(app) as c:
        assert (await c.post("/onSessionOpen", content=ids(**ROSTER))).status_code == 200
        batch = await c.post("/batchPredicate", content=ids(**WORKER, nodes=NODES))
        vote = await c.post("/jobEnqueueable", content=ids(job="ns1/pg-pending"))
        event = await c.post("/allocate", content=ids(**WORKER, node="node1", status="Allocated"))
    failed = batch.json()["failedNodes"]
    assert failed.keys() == set(NODES)
    assert all("stale" in f["reason"] and f["code"] == 3 for f in failed.values()), failed
    assert vote.json() == {"status": -1}
    assert event.status_code == 200 and event.json() == {"errorMessage": ""}
