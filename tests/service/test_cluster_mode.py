"""``caldera serve`` with ``sessionState: cluster`` against an API server (tests/cluster_api.py):
not ready until every collection has been listed once, then each session opened at its first
call on the listed objects; and the configurations the mode refuses, refused at start."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.app.cluster_state.objects import quota
from tests.app.cluster_state.test_compare import matching_objects
from tests.cluster_api import ClusterApi
from tests.examples import example_bytes
from tests.service.conftest import start_caldera

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
