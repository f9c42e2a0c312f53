"""``sessionState: cluster`` wired into the service: no onSessionOpen, the session's first call
opens a session on the state derived from the watched objects, onSessionClose ends it, and the
plugins answer as they do on the same state sent as Volcano's snapshot (the watch itself is
replaced by a store filled in the test; tests/service/test_cluster_mode.py runs it against an
API server)."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest

from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.compare import compare
from app.cluster_state.derive import derive
from app.config import load_config_text
from app.server.main import create_app
from app.server.options import ServeOptions
from app.session_events import SessionListener
from plugins.pdb.kube import ClusterConfig, object_key
from schemas.api import TaskStatus
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import (
    captured_in_a_cluster,
    cluster,
    pod,
    podgroup,
    quota,
)
from tests.app.cluster_state.test_compare import matching_objects
from tests.examples import example_bytes

CAPTURED = "volcano-1.14"
SESSION_PLUGINS = (
    "tiers:\n- plugins:\n  - name: priority\n  - name: sla\n  - name: resourcequota\n"
    "  - name: overcommit\n  - name: min-runtime\n  - name: nodegroup\n"
    "  - name: task-topology\n  - name: cdp\n  - name: resource-strategy-fit\n"
)
"""Every built-in plugin that reads the session's state, and a few that do not (usage is refused
in cluster mode; pdb reads its budgets from its own watch)."""

VERBS = (
    ("jobEnqueueable", "jobEnqueueable"),
    ("predicate", "predicate"),
    ("prioritize", "prioritize"),
    ("preemptable", "preemptable"),
    ("reclaimable", "reclaimable"),
    ("queueOverused", "queueOverused"),
    ("allocate", "allocateFunc"),
    ("jobReady", "jobReady"),
    ("deallocate", "deallocateFunc"),
    ("jobEnqueueable", "jobEnqueueable"),
)
"""One session's calls, in an order an allocate action makes them (the answers after allocate
read the plugins' per-session accounting)."""


def config(mode: str, plugins: str = SESSION_PLUGINS) -> str:
    return f'volcanoVersion: "1.14"\nsessionState: {mode}\n' + plugins


def _unused() -> ClusterConfig:
    raise AssertionError("no cluster in this test")


def fill(state: ClusterSessionState, objects: dict[str, list[dict[str, Any]]]) -> None:
    for name, store in state.store.stores().items():
        store.replace({object_key(o): o for o in objects.get(name, [])})


def synced(state: ClusterSessionState) -> None:
    state.watch.reflectors = state.store.reflectors(_unused)
    for reflector in state.watch.reflectors:
        reflector.status.synced = True


def cluster_app(objects: dict[str, list[dict[str, Any]]], plugins: str = SESSION_PLUGINS) -> Any:
    app = create_app(ServeOptions.of(load_config_text(config("cluster", plugins), "c.yaml")))
    state = app.runtime.session_state
    assert isinstance(state, ClusterSessionState)
    fill(state, objects)
    synced(state)
    return app


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caldera")


async def session_answers(c: httpx.AsyncClient) -> list[tuple[str, int, Any]]:
    answers = []
    for verb, name in VERBS:
        response = await c.post(f"/{verb}", content=example_bytes(CAPTURED, f"{name}.request.json"))
        answers.append((verb, response.status_code, response.json()))
    return answers


# --- the same answers as the same state sent as a snapshot ------------------------------------


def _full_quota(objects: dict[str, Any], body: dict[str, Any]) -> None:
    used = {"cpu": "10", "memory": "1Gi"}
    objects["quotas"] = [quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"}, used)]
    body["NamespaceInfo"]["ns1"]["QuotaStatus"]["quota"]["used"] = used


def _as_captured(objects: dict[str, Any], body: dict[str, Any]) -> None:
    pass


STATES: list[tuple[str, Callable[[dict[str, Any], dict[str, Any]], None], dict[str, int]]] = [
    ("as captured", _as_captured, {"jobEnqueueable": 1}),
    ("the namespace quota is used up", _full_quota, {"jobEnqueueable": -1}),
]
"""(name, the same change to the objects and to Volcano's snapshot, jobEnqueueable's vote):
the vote shows the plugins read the state (resourcequota rejects the job when the quota is
full), so an equality of answers cannot come from states both ignored."""


@pytest.mark.parametrize(("change", "vote"), [s[1:] for s in STATES], ids=[s[0] for s in STATES])
async def test_the_same_answers_as_the_same_state_sent_as_a_snapshot(
    change: Callable[[dict[str, Any], dict[str, Any]], None], vote: dict[str, int]
) -> None:
    objects = matching_objects()
    body = json.loads(captured_in_a_cluster())
    change(objects, body)
    sent = msgspec.json.decode(json.dumps(body), type=OnSessionOpenRequest)
    derived = derive(cluster(**objects)).snapshot
    assert compare(sent, derived) == []  # the same state, field by field of what plugins read

    snapshot_app = create_app(ServeOptions.of(load_config_text(config("snapshot"), "c.yaml")))
    async with client(snapshot_app) as c:
        assert (await c.post("/onSessionOpen", content=json.dumps(body))).status_code == 200
        from_snapshot = await session_answers(c)
        explained_snapshot = await c.get("/debug/explain", params={"job": "ns1/pg-pending"})
    async with client(cluster_app(objects)) as c:
        from_cluster = await session_answers(c)
        explained_cluster = await c.get("/debug/explain", params={"job": "ns1/pg-pending"})

    assert from_cluster == from_snapshot
    assert all(status == 200 for _, status, _ in from_cluster), from_cluster
    assert from_cluster[0][2]["status"] == vote["jobEnqueueable"]
    # The decision record works per session in cluster mode too.
    assert explained_cluster.status_code == explained_snapshot.status_code == 200
    assert explained_cluster.json()["summary"] == explained_snapshot.json()["summary"]


# --- session boundaries -----------------------------------------------------------------------


async def test_the_first_call_opens_a_session_and_onsessionclose_ends_it() -> None:
    app = cluster_app(matching_objects())
    state: ClusterSessionState = app.runtime.session_state
    sessions = app.runtime.extender
    job = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    async with client(app) as c:
        assert (await c.get("/debug/session")).json()["open"] is False
        assert (await c.post("/jobEnqueueable", content=job)).json() == {"status": 1}
        first = sessions.sessions.current
        assert first is not None and first.number == 1
        # The view is frozen at the session's first call: a quota filled meanwhile is not
        # seen until the next session.
        used = {"cpu": "10", "memory": "1Gi"}
        state.store.quotas.upsert(
            "ns1/quota", quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"}, used)
        )
        assert (await c.post("/jobEnqueueable", content=job)).json() == {"status": 1}
        assert sessions.sessions.current is first

        assert (await c.post("/onSessionClose", content=b"{}")).status_code == 200
        assert sessions.sessions.current is None
        debug = (await c.get("/debug/session")).json()
        assert debug["open"] is False and debug["sessionState"]["sessionsDerived"] == 1

        assert (await c.post("/jobEnqueueable", content=job)).json() == {"status": -1}
        second = sessions.sessions.current
        assert second is not None and second.number == 2
        debug = (await c.get("/debug/session")).json()
    assert debug["open"] is True and debug["session"] == 2
    section = debug["sessionState"]
    assert section["mode"] == "cluster" and section["synced"] is True
    assert section["objects"] == {
        "pods": 2, "nodes": 2, "podgroups": 2, "queues": 1, "quotas": 1, "priority_classes": 2,
    }  # fmt: skip
    assert section["sessionsDerived"] == 2 and section["lastDeriveSeconds"] is not None
    assert debug["snapshot"] == {"jobs": 2, "nodes": 2, "queues": 1, "namespaces": 1, "tasks": 2}


async def test_a_close_with_no_session_open_opens_none() -> None:
    """An idle cycle whose only call is onSessionClose derives nothing."""
    app = cluster_app(matching_objects())
    async with client(app) as c:
        for _ in range(2):
            assert (await c.post("/onSessionClose", content=b"{}")).status_code == 200
    assert app.runtime.session_state.sessions_derived == 0
    assert app.runtime.extender.sessions.current is None


async def test_an_onsessionopen_still_sent_is_a_boundary_whose_body_is_not_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Volcano left configured with onSessionOpenVerb: the session opens from the cluster at
    that call, the body is not decoded, and the operator is told once to regenerate the
    extender entry."""
    app = cluster_app(matching_objects())
    with caplog.at_level(logging.WARNING, logger="caldera.extender"):
        async with client(app) as c:
            for number in (1, 2):
                response = await c.post("/onSessionOpen", content=b'{"Jobs": "not read"}')
                assert response.status_code == 200 and response.json() == {}
                current = app.runtime.extender.sessions.current
                assert current is not None and current.number == number
                assert len(current.ssn.jobs) == 2
    warnings = [r.message for r in caplog.records if "onSessionOpenVerb" in r.message]
    assert len(warnings) == 1 and "caldera volcano-config" in warnings[0]


# --- what Volcano told Caldera it placed --------------------------------------------------------


async def test_a_committed_allocation_is_binding_in_the_next_session_until_bound() -> None:
    """Volcano's cache holds an allocated task Binding on its node until the pod shows the
    binding: so does the next session here, and jobEnqueueable/overcommit count it."""
    objects = matching_objects()
    app = cluster_app(objects)
    state: ClusterSessionState = app.runtime.session_state
    allocate = example_bytes(CAPTURED, "allocateFunc.request.json")
    task = json.loads(allocate)["task"]
    async with client(app) as c:
        assert (await c.post("/allocate", content=allocate)).status_code == 200
        assert (await c.post("/onSessionClose", content=b"{}")).status_code == 200
        assert (await c.post("/jobReady", content=b'{"job": {"UID": "x"}}')).status_code == 200
        ssn = app.runtime.extender.sessions.current.ssn
        derived_task = ssn.jobs["ns1/pg-pending"].Tasks[task["UID"]]
        assert derived_task.Status == TaskStatus.Binding
        assert derived_task.NodeName == task["NodeName"]
        node = ssn.nodes[task["NodeName"]]
        assert f"ns1/{task['Name']}" in node.Tasks
        assert ssn.jobs["ns1/pg-pending"].Allocated.MilliCPU == 1000

        # The pod is bound: the cluster shows it, the overlay forgets it.
        bound = copy.deepcopy(objects["pods"][0])
        bound["spec"]["nodeName"] = task["NodeName"]
        state.store.pods.upsert(object_key(bound), bound)
        assert (await c.post("/onSessionClose", content=b"{}")).status_code == 200
        assert (await c.post("/jobReady", content=b'{"job": {"UID": "x"}}')).status_code == 200
        ssn = app.runtime.extender.sessions.current.ssn
        assert ssn.jobs["ns1/pg-pending"].Tasks[task["UID"]].Status == TaskStatus.Bound
    assert len(state.store.overlay) == 0


async def test_an_allocation_rolled_back_in_its_session_is_not_kept() -> None:
    app = cluster_app(matching_objects())
    allocate = example_bytes(CAPTURED, "allocateFunc.request.json")
    undone = json.loads(allocate)
    undone["task"]["Status"] = int(TaskStatus.Pending)
    async with client(app) as c:
        await c.post("/allocate", content=allocate)
        await c.post("/deallocate", content=json.dumps(undone))
        await c.post("/onSessionClose", content=b"{}")
    assert len(app.runtime.session_state.store.overlay) == 0


# --- before the watch has listed --------------------------------------------------------------


async def test_not_ready_and_held_until_every_collection_listed_once() -> None:
    app = create_app(ServeOptions.of(load_config_text(config("cluster"), "c.yaml")))
    state: ClusterSessionState = app.runtime.session_state
    fill(state, matching_objects())
    state.watch.reflectors = state.store.reflectors(_unused)
    job = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    async with client(app) as c:
        ready = await c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "not ready"
        assert ready.json()["sessionState"]["synced"] is False
        # A session whose first call comes now has no state: held to its end (onStaleState
        # hold, the default), not answered without one (test_before_sync.py).
        assert (await c.post("/jobEnqueueable", content=job)).json() == {"status": -1}
        for reflector in state.watch.reflectors:
            reflector.status.synced = True
        assert (await c.post("/jobEnqueueable", content=job)).json() == {"status": -1}
        assert app.runtime.extender.sessions.current is None
        assert state.sessions_before_sync == 1
        scraped = (await c.get("/metrics")).text
        assert "caldera_verbs_without_session_total{" not in scraped

        ready = await c.get("/readyz")
        assert ready.status_code == 200, ready.json()
        assert ready.json()["sessionState"]["objects"]["pods"] == 2
        await c.post("/onSessionClose", content=b"{}")
        await c.post("/jobEnqueueable", content=job)
        assert app.runtime.extender.sessions.current is not None
        scraped = (await c.get("/metrics")).text
    assert "caldera_session_state_derive_seconds_count 1.0" in scraped


async def test_no_session_is_expected_every_period() -> None:
    """An idle cycle calls nothing but onSessionClose, so CalderaNoSessionOpened (sessions
    opened, where a snapshot is expected) must not page in cluster mode."""
    async with client(cluster_app(matching_objects())) as c:
        scraped = (await c.get("/metrics")).text
    assert "caldera_snapshot_expected 0.0" in scraped


async def test_snapshot_and_compare_modes_keep_readiness_off_the_watch() -> None:
    for mode in ("snapshot", "compare"):
        app = create_app(ServeOptions.of(load_config_text(config(mode), "c.yaml")))
        async with client(app) as c:
            ready = await c.get("/readyz")
        assert ready.status_code == 200 and "sessionState" not in ready.json(), mode


async def test_a_podgroup_deleted_between_sessions_leaves_the_next() -> None:
    """Each session's state is the cluster's at its first call, whole."""
    objects = matching_objects(podgroups=[podgroup("pg-running", priority_class="low-priority")])
    objects["pods"].append(pod("late", group="pg-late", requests={"cpu": "1"}))
    app = cluster_app(objects)
    job = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    async with client(app) as c:
        await c.post("/jobEnqueueable", content=job)
        jobs = app.runtime.extender.sessions.current.ssn.jobs
    assert set(jobs) == {"ns1/pg-running"}  # no PodGroup: no job, as Volcano's snapshot


async def test_a_staged_configuration_takes_over_at_a_sessions_first_call() -> None:
    """The session boundary a live reload waits for (app/server/config_watch.py) is, in cluster
    mode, each session's first call: once per session, before the session opens."""
    app = cluster_app(matching_objects())
    extender = app.runtime.extender
    seen: list[object] = []

    class Boundaries(SessionListener):
        def boundary(self) -> None:
            seen.append(extender.sessions.current)

    extender.listeners.add(Boundaries())
    job = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    async with client(app) as c:
        for _ in range(2):
            await c.post("/jobEnqueueable", content=job)
            await c.post("/jobEnqueueable", content=job)
            await c.post("/onSessionClose", content=b"{}")
    assert seen == [None, None]  # twice, each time with no session open yet
