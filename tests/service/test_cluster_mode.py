"""``caldera serve`` with ``sessionState: cluster`` against an API server (tests/cluster_api.py):
not ready until every collection has been listed once, then each session opened at its first
call on the listed objects; and the configurations the mode refuses, refused at start."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.app.cluster_state.objects import quota
from tests.app.cluster_state.test_compare import matching_objects
from tests.cluster_api import ClusterApi
from tests.examples import example_bytes
from tests.service.conftest import CalderaProcess, start_caldera

WAIT = 20.0
JOB = example_bytes("volcano-1.14", "jobEnqueueable.request.json")


def config(kubeconfig: str, plugins: str = "  - name: resourcequota\n  - name: sla\n") -> str:
    return (
        'volcanoVersion: "1.14"\nsessionState: cluster\n'
        f"sessionStateKubeconfig: {kubeconfig}\ntiers:\n- plugins:\n{plugins}"
    )


async def test_ready_once_listed_then_sessions_from_the_cluster(tmp_path: Path) -> None:
    api = ClusterApi(objects=matching_objects())
    used = {"cpu": "10", "memory": "1Gi"}  # the pending job's namespace has no CPU left
    api.objects["quotas"] = [quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"}, used)]
    await api.start()
    server = await start_caldera(config(api.kubeconfig(tmp_path / "kc")), tmp_path)
    try:
        client = server.client
        ready = await client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert ready.json()["sessionState"]["synced"] is False

        api.listing.set()
        deadline = time.monotonic() + WAIT
        while (ready := await client.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, ready.text
            await asyncio.sleep(0.05)
        assert sorted(api.lists) == sorted(
            ["pods", "nodes", "podgroups", "queues", "quotas", "priority_classes"]
        )
        state = ready.json()["sessionState"]
        assert state["mode"] == "cluster" and state["synced"] is True
        assert state["objects"]["pods"] == 2 and state["objects"]["quotas"] == 1

        # No onSessionOpen: the first call opens the session on the listed objects.
        answer = await client.post("/jobEnqueueable", content=JOB)
        assert answer.status_code == 200 and answer.json() == {"status": -1}
        debug = (await client.get("/debug/session")).json()
        assert debug["open"] is True and debug["snapshot"]["jobs"] == 2
        assert (await client.post("/onSessionClose", content=b"{}")).status_code == 200
        assert (await client.get("/debug/session")).json()["open"] is False
        scraped = (await client.get("/metrics")).text
        assert "caldera_session_state_derive_seconds_count 1.0" in scraped
        assert "caldera_verbs_without_session_total{" not in scraped
    finally:
        await server.stop()
        await api.stop()


REFUSED = [
    (
        "usage reads the metrics source",
        'volcanoVersion: "1.14"\nsessionState: cluster\ntiers:\n- plugins:\n  - name: usage\n',
        "plugin 'usage' cannot run with sessionState cluster",
    ),
    (
        "1.12 sends no allocate/deallocate",
        'volcanoVersion: "1.12"\nsessionState: cluster\ntiers:\n- plugins:\n  - name: sla\n',
        "Volcano 1.12 sends no allocateFunc/deallocateFunc",
    ),
]


@pytest.mark.parametrize(("text", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_refused_at_start_with_the_reason(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RuntimeError, match="caldera exited with 2") as caught:
        await start_caldera(text, tmp_path)
    assert message in str(caught.value)


PREDICATE = example_bytes("volcano-1.14", "predicate.request.json")
STALE_AFTER = "1s"


async def stale_config(api: ClusterApi, tmp_path: Path, policy: str) -> str:
    return config(
        api.kubeconfig(tmp_path / "kc"), "  - name: resourcequota\n  - name: nodegroup\n"
    ).replace("tiers:", f"sessionStateMaxStaleness: {STALE_AFTER}\nonStaleState: {policy}\ntiers:")


async def readyz_until(server: CalderaProcess, status: int) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while (ready := await server.client.get("/readyz")).status_code != status:
        assert time.monotonic() < deadline, ready.text
        await asyncio.sleep(0.1)
    body: dict[str, Any] = ready.json()
    return body


async def new_session(server: CalderaProcess) -> None:
    assert (await server.client.post("/onSessionClose", content=b"{}")).status_code == 200


# Issue 49 item 1. Each case: onStaleState, then (verb, body, the status code and answer) of a
# session opened while the API server is down past sessionStateMaxStaleness.
STALE_CASES = [
    ("hold: nothing admitted, no node fits", "hold", [
        ("jobEnqueueable", JOB, 200, {"status": -1}),
        ("predicate", PREDICATE, 200, "rejected"),
    ]),
    ("fail: a 503 naming the stale view", "fail", [
        ("jobEnqueueable", JOB, 503, "the cluster view is stale"),
    ]),
    ("answer: as from the last view", "answer", [
        ("jobEnqueueable", JOB, 200, {"status": 1}),
    ]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "calls"), [c[1:] for c in STALE_CASES], ids=[c[0] for c in STALE_CASES]
)
async def test_a_view_stale_past_the_limit_is_said_and_answered_as_configured(
    tmp_path: Path, policy: str, calls: list[tuple[str, bytes, int, Any]]
) -> None:
    api = ClusterApi(objects=matching_objects())
    api.listing.set()
    await api.start()
    port = int(api.url.rsplit(":", 1)[1])
    server = await start_caldera(await stale_config(api, tmp_path, policy), tmp_path)
    try:
        await readyz_until(server, 200)
        before = await server.client.post("/jobEnqueueable", content=JOB)
        assert before.json() == {"status": 1}, "admitted while the view is current"
        await new_session(server)

        await api.stop()  # the watches break; every retry is refused
        body = await readyz_until(server, 503)
        state = body["sessionState"]
        assert body["status"] == "stale" and state["stale"] is True
        assert f"127.0.0.1:{port}" in state["reason"]
        assert "sessionStateKubeconfig" in state["reason"]
        assert {w["collection"] for w in state["brokenWatches"]} >= {"pods", "nodes"}
        scraped = (await server.client.get("/metrics")).text
        assert "caldera_session_state_stale 1.0" in scraped
        assert (
            'caldera_session_state_watch_errors_total{collection="pods",kind="connect"}' in scraped
        )
        for verb, request, status, expected in calls:
            answer = await server.client.post(f"/{verb}", content=request)
            assert answer.status_code == status, (verb, answer.text)
            if isinstance(expected, dict):
                assert answer.json() == expected, verb
            elif verb == "predicate":
                assert answer.json()["code"] == 3, answer.text  # unresolvable: not preempted for
            else:
                assert expected in answer.json()["error"], answer.text
        await new_session(server)

        await api.start(port)  # back: a list of one object proves each watch works again
        await readyz_until(server, 200)
        assert "caldera_session_state_stale 0.0" in (await server.client.get("/metrics")).text
        after = await server.client.post("/jobEnqueueable", content=JOB)
        assert after.json() == {"status": 1}
    finally:
        await server.stop()
        await api.stop()


def job_as_volcano_sends_it() -> bytes:
    """The captured jobEnqueueable body as a real cluster's Volcano sends it: its objects at the
    versions the API server gave them and its pod with the scheduler's name (the capture, from
    Volcano's mock cache, has neither), so nothing is in flight."""
    body = json.loads(JOB)
    body["job"]["PodGroup"]["metadata"]["resourceVersion"] = "5"  # tests/cluster_api.py's
    for task in body["job"]["Tasks"].values():
        task["Pod"]["metadata"]["resourceVersion"] = "1"  # tests/app/cluster_state/objects.py
        task["Pod"]["spec"]["schedulerName"] = "volcano"  # the capture's pods carry none
    return json.dumps(body).encode()


def miscounting_objects() -> dict[str, Any]:
    """The mutant: the cluster shows worker-0 asking 2 CPUs where Volcano's job says 1; no watch
    fails, only the self-audit can see it."""
    objects = matching_objects()
    objects["pods"][0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    return objects


# Issue 49 item 2: (case, the API server's objects, whether the view ends stale)
AUDIT_CASES = [
    ("the derived state matches what Volcano sends", matching_objects, False),
    ("one field miscounted is caught by the self-audit alone", miscounting_objects, True),
]


@pytest.mark.parametrize(
    ("objects", "diverges"), [c[1:] for c in AUDIT_CASES], ids=[c[0] for c in AUDIT_CASES]
)
async def test_the_self_audit_catches_a_derived_state_volcano_does_not_share(
    tmp_path: Path, objects: Any, diverges: bool
) -> None:
    api = ClusterApi(objects=objects())
    api.listing.set()
    await api.start()
    text = config(api.kubeconfig(tmp_path / "kc")).replace(
        "tiers:", "sessionStateMaxDivergentSessions: 2\ntiers:"
    )
    server = await start_caldera(text, tmp_path)
    job = job_as_volcano_sends_it()
    try:
        await readyz_until(server, 200)
        for _ in range(2):
            answer = await server.client.post("/jobEnqueueable", content=job)
            assert answer.json() == {"status": 1}
            await new_session(server)  # the audit runs after onSessionClose's answer
        scraped = (await server.client.get("/metrics")).text
        unexplained = (
            'caldera_session_state_audit_differences_total{explained="no",kind="task.Resreq"} 2.0'
        )
        assert (unexplained in scraped) is diverges, scraped
        ready = await server.client.get("/readyz")
        assert ready.status_code == (503 if diverges else 200), ready.text
        audit = (await server.client.get("/debug/session")).json()["sessionState"]["selfAudit"]
        assert audit["sessionsAudited"] == 2 and audit["objectsAudited"] == 2
        if diverges:
            assert "self-audit found differences" in ready.json()["sessionState"]["reason"]
            held = await server.client.post("/jobEnqueueable", content=job)
            assert held.json() == {"status": -1}, "onStaleState hold: nothing admitted"
    finally:
        await server.stop()
        await api.stop()
