"""pdb through the real server, with ``source: file``: /readyz reports the loaded budgets, and
/preemptable and /reclaimable keep every PodDisruptionBudget at or above zero (Permit, even when
nothing is left). The file is re-read when it changes; a missing file keeps every pod."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.service.conftest import CalderaProcess, StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, evict, open_session, task

EVICTOR = task("team-a", "evictor", "pg-a", status=TASK_PENDING, phase="Pending")
WEB1 = task("default", "web-1", "web", labels={"app": "web"})
WEB2 = task("default", "web-2", "web", labels={"app": "web"})
WEB3 = task("default", "web-3", "web", labels={"app": "web"})
BARE = task("default", "bare", "misc")  # no labels: never a victim
OTHER = task("team-b", "db-1", "db", labels={"app": "db"})
OTHER_FREE = task("team-b", "cache-1", "cache", labels={"app": "cache"})


def budgets(web_allowed: int) -> str:
    items = [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": web_allowed, "disruptedPods": {"web-3": "2026-08-01T10:00:00Z"}},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "team-b"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}},
            "status": {"disruptionsAllowed": 0},
        },
    ]  # fmt: skip
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def pdb_config(path: Path) -> str:
    return config(f"name: pdb\narguments: {{source: file, file: {json.dumps(str(path))}}}")


async def pdb_status(server: CalderaProcess) -> tuple[int, dict[str, Any]]:
    response = await server.client.get("/readyz")
    body = response.json()
    entries = [v for k, v in body["backgrounds"].items() if k.endswith(":pdb")]
    assert len(entries) == 1, body
    return response.status_code, entries[0]


@pytest.mark.parametrize("verb", ["preemptable", "reclaimable"])
async def test_pdb_file_source(caldera_server: StartCaldera, tmp_path: Path, verb: str) -> None:
    path = tmp_path / "pdbs.json"
    path.write_text(budgets(1))
    server = await caldera_server(pdb_config(path))
    status, entry = await pdb_status(server)
    assert status == 200
    assert entry["ready"] is True
    assert entry["source"] == "file"
    assert entry["count"] == 2
    assert entry["lastError"] is None

    await open_session(server, [])
    # web: one disruption allowed, web-3 already disrupted (counts nothing); db: none allowed.
    answer = await evict(server, verb, EVICTOR, [BARE, WEB1, OTHER, WEB2, WEB3, OTHER_FREE])
    assert answer == {"status": 1, "victims": [WEB1, WEB3, OTHER_FREE]}
    # Budgets are fresh on every call, and consumed in the order the candidates come.
    answer = await evict(server, verb, EVICTOR, [WEB2, WEB1])
    assert answer == {"status": 1, "victims": [WEB2]}
    # Nothing may go: the answer is still a decision (Permit) with no victims.
    answer = await evict(server, verb, EVICTOR, [OTHER, BARE])
    assert answer == {"status": 1, "victims": []}

    # The file changes: the server picks it up within its polling interval.
    path.write_text(budgets(5) + "\n")

    async def reloaded() -> None:
        while (await evict(server, verb, EVICTOR, [WEB1, WEB2]))["victims"] != [WEB1, WEB2]:
            await asyncio.sleep(0.1)

    await asyncio.wait_for(reloaded(), 15)
    metrics = (await server.client.get("/metrics")).text
    assert 'key="relists"' in metrics and 'key="objects"' in metrics


async def test_pdb_without_a_session(caldera_server: StartCaldera, tmp_path: Path) -> None:
    """pdb reads the budgets, not the snapshot, so it answers with no session open."""
    path = tmp_path / "pdbs.json"
    path.write_text(budgets(0))
    server = await caldera_server(pdb_config(path))
    answer = await evict(server, "preemptable", EVICTOR, [WEB1, OTHER_FREE])
    assert answer == {"status": 1, "victims": [OTHER_FREE]}


async def test_pdb_missing_file_keeps_every_pod(
    caldera_server: StartCaldera, tmp_path: Path
) -> None:
    server = await caldera_server(pdb_config(tmp_path / "absent.yaml"))
    status, entry = await pdb_status(server)
    assert status == 503
    assert entry["ready"] is False
    assert "cannot stat" in entry["lastError"]
    await open_session(server, [])
    for verb in ("preemptable", "reclaimable"):
        answer = await evict(server, verb, EVICTOR, [WEB1, OTHER_FREE])
        assert answer == {"status": 1, "victims": []}
