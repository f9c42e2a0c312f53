"""``serve --shadow`` and ``serve --record`` / ``caldera replay`` with ``sessionState: cluster``
(tests/cluster_api.py stands in for the API server): the shadow evaluates each session on the
state the live session was derived to and finds what it finds on the same objects posted as a
snapshot; a cluster-mode recording replays to the live answers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest_asyncio

from app.cluster_state.derive import derive
from app.server.record import INDEX
from tests.app.cluster_state.objects import cluster
from tests.app.cluster_state.test_compare import matching_objects
from tests.cluster_api import ClusterApi
from tests.service.conftest import CalderaProcess, start_caldera
from tests.service.test_record_replay import replay
from tests.service.test_shadow import BIG, LIVE, SMALL, TIGHTER, shadow_state, until

WAIT = 20.0
CLUSTER = 'sessionState: cluster\nsessionStateKubeconfig: "{kubeconfig}"\n'
USAGE = 'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: usage\n'


def in_cluster_mode(text: str, kubeconfig: str) -> str:
    return CLUSTER.format(kubeconfig=kubeconfig) + text


@pytest_asyncio.fixture
async def api(tmp_path: Path) -> AsyncIterator[ClusterApi]:
    served = ClusterApi(objects=matching_objects())
    served.listing.set()
    await served.start()
    yield served
    await served.stop()


async def ready(server: CalderaProcess) -> None:
    """Once the watch has listed every collection (``/readyz`` 200)."""
    deadline = time.monotonic() + WAIT
    while (answer := await server.client.get("/readyz")).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        await asyncio.sleep(0.05)


async def call(server: CalderaProcess, verb: str, body: Any) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = await server.client.post(f"/{verb}", content=data)
    assert response.status_code == 200, (verb, response.text)
    return response.json()


async def one_session(server: CalderaProcess, snapshot: bytes | None) -> list[Any]:
    """A session's calls: onSessionOpen only in snapshot mode (``snapshot``)."""
    answers = []
    if snapshot is not None:
        answers.append(await call(server, "onSessionOpen", snapshot))
    for job in (BIG, SMALL):
        answers.append(await call(server, "jobEnqueueable", {"job": job}))
    answers.append(await call(server, "onSessionClose", {}))
    return answers


def found(body: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Each difference as (job, change, shadow plugin, shadow reason)."""
    return sorted(
        (job, d["change"], d["shadow"]["plugin"], d["shadow"]["reason"])
        for job, differences in body["jobs"].items()
        for d in differences
    )


async def test_the_shadow_finds_in_cluster_mode_what_it_finds_on_the_snapshot(
    tmp_path: Path, api: ClusterApi
) -> None:
    snapshot = msgspec.json.encode(derive(cluster(**matching_objects())).snapshot)
    shadow = tmp_path / "shadow.yaml"
    shadow.write_text(TIGHTER)
    kubeconfig = api.kubeconfig(tmp_path / "kc")
    servers = {
        "snapshot": await start_caldera(LIVE, tmp_path, extra_args=["--shadow", str(shadow)]),
        "cluster": await start_caldera(
            in_cluster_mode(LIVE, kubeconfig), tmp_path, extra_args=["--shadow", str(shadow)]
        ),
    }
    try:
        await ready(servers["cluster"])
        answers: dict[str, list[Any]] = {}
        findings: dict[str, list[Any]] = {}
        for mode, server in servers.items():
            # Two sessions: the second's state reaches the shadow as a delta (nothing changed).
            for number in (1, 2):
                live = await one_session(server, snapshot if mode == "snapshot" else None)
                answers.setdefault(mode, []).extend(a for a in live if a != {})
                body = await until(
                    server,
                    lambda b, n=number: (
                        len(b["sessions"]) >= n
                        and b["sessions"][-1]["compared"].get("jobEnqueueable") == 2
                    ),
                )
                assert body["sessions"][-1]["compared"] == {"jobEnqueueable": 2}, body
                assert "skipped" not in body["sessions"][-1], body
                findings.setdefault(mode, []).append(found(body))
        # The second state went as a delta of nothing: the shadow kept the first.
        handed = (await shadow_state(servers["cluster"]))["shadow"]["sessionState"]
        assert (handed["states"], handed["whole"], handed["lastEntries"]) == (2, 1, 0), handed
        assert "sessionState" not in (await shadow_state(servers["snapshot"]))["shadow"]
        assert answers["cluster"] == answers["snapshot"]
        assert answers["cluster"][0]["status"] != -1, "the live configuration admits the job"
        assert findings["cluster"] == findings["snapshot"]
        [(job, change, plugin, reason)] = findings["cluster"][1]
        assert (job, change, plugin) == ("team-a/train-42", "would hold it", "overcommit")
        assert "CPU x 1 less" in reason
    finally:
        for server in servers.values():
            await server.stop()


async def test_a_snapshot_only_shadow_plugin_is_refused_in_cluster_mode(
    tmp_path: Path, api: ClusterApi
) -> None:
    shadow = tmp_path / "shadow.yaml"
    shadow.write_text(USAGE)
    kubeconfig = api.kubeconfig(tmp_path / "kc")
    server = await start_caldera(
        in_cluster_mode(LIVE, kubeconfig), tmp_path, extra_args=["--shadow", str(shadow)]
    )
    try:
        await ready(server)
        body = await until(server, lambda b: b["shadow"]["status"] == "failing")
        assert body["shadow"]["status"] == "failing", body
        problem = body["shadow"]["problem"]
        assert "plugin 'usage' cannot run with sessionState cluster" in problem, problem
        assert "metrics" in problem, problem  # usage's own reason
        # The live configuration answers on.
        assert (await call(server, "jobEnqueueable", {"job": SMALL}))["status"] != -1
    finally:
        await server.stop()


async def test_a_cluster_mode_recording_replays_to_the_live_answers(
    tmp_path: Path, api: ClusterApi
) -> None:
    recorded = tmp_path / "recording"
    config = in_cluster_mode(LIVE, api.kubeconfig(tmp_path / "kc"))
    server = await start_caldera(config, tmp_path, extra_args=["--record", str(recorded)])
    try:
        await ready(server)
        live = [*await one_session(server, None), *await one_session(server, None)]
    finally:
        await server.stop()

    sessions = sorted(p for p in recorded.iterdir() if p.is_dir())
    assert [p.name for p in sessions] == ["session-000001", "session-000002"]
    for session in sessions:
        lines = [json.loads(line) for line in (session / INDEX).read_text().splitlines()]
        assert [line["verb"] for line in lines] == [
            "onSessionOpen", "jobEnqueueable", "jobEnqueueable", "onSessionClose"
        ]  # fmt: skip
        assert lines[0]["derived"] is True and "derived" not in lines[1]
        opened = json.loads((session / lines[0]["request"]).read_bytes())
        assert sorted(opened["Nodes"]) == ["node1", "node2"], opened.keys()
        assert [json.loads((session / x["response"]).read_bytes()) for x in lines[1:]] == live[:3]

    code, out = replay(recorded, tmp_path / "same.yaml", config)
    assert code == 0, out
    assert "all 8 answers are the same" in out, out
    # The derived state is what the answers came from: a tighter policy replays otherwise.
    code, out = replay(recorded, tmp_path / "tighter.yaml", in_cluster_mode(TIGHTER, "kc"))
    assert code == 1, out
    [row] = [line for line in out.splitlines() if line.startswith("jobEnqueueable")]
    assert "2 differ" in row, out
