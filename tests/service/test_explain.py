"""Why a job waits, over the real server: GET /debug/explain and ``caldera explain`` after the
verbs Volcano would send. A job rejected by overcommit, one by resourcequota, one that waits for
its SLA, a task no node fits (nodegroup), a victim protected by min-runtime and one by a
PodDisruptionBudget, each explained with its numbers."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.service import test_plugin_min_runtime as min_runtime
from tests.service import test_plugin_nodegroup as nodegroup
from tests.service.conftest import CalderaProcess, StartCaldera, caldera_command
from tests.service.plugin_bodies import admission_job, evict, open_session, post, rfc3339
from tests.service.test_plugin_overcommit import node
from tests.service.test_plugin_pdb import EVICTOR, WEB1, WEB2, budgets, pdb_config

GI = 2**30
ADMISSION = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 1.0}
  - name: resourcequota
"""


def explain(server: CalderaProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``caldera explain`` as an operator runs it beside the server."""
    return subprocess.run(
        [*caldera_command(), "explain", *args, "--url", server.url],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


async def get_explain(server: CalderaProcess, **query: str) -> dict[str, Any]:
    response = await server.client.get("/debug/explain", params=query)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_admission_rejections_and_the_sla_wait(caldera_server: StartCaldera) -> None:
    server = await caldera_server(ADMISSION)
    created = datetime.now(UTC) - timedelta(minutes=10)
    too_big = admission_job("train-42", {"cpu": "8", "memory": "1Gi"}, ns="team-a")
    over_quota = admission_job("etl", {"cpu": "2"}, ns="team-b")
    for body in (too_big, over_quota):
        body["CreationTimestamp"] = body["PodGroup"]["metadata"]["creationTimestamp"] = rfc3339(
            created
        )
    snapshot = {
        "Jobs": {},
        "Nodes": {"n1": node("n1", "2", "4Gi", 2000, 4 * GI),
                  "n2": node("n2", "4", "16Gi", 4000, 16 * GI)},
        "Queues": {},
        "NamespaceInfo": {"team-b": {"Name": "team-b", "QuotaStatus": {
            "compute": {"hard": {"cpu": "3"}, "used": {"cpu": "1500m"}}}}},
        "RevocableNodes": {},
    }  # fmt: skip
    assert await post(server, "onSessionOpen", snapshot) == {}
    assert (await post(server, "jobEnqueueable", {"job": too_big}))["status"] == -1
    assert (await post(server, "jobEnqueueable", {"job": over_quota}))["status"] == -1

    big = await get_explain(server, job="team-a/train-42")
    assert big["summary"] == [
        "overcommit rejects job team-a/train-42 (jobEnqueueable): needs 8 CPU with 0 CPU"
        " already admitted, 6 CPU idle (6 CPU x 1 less 0 CPU in use)"
    ]
    sla = next(v for v in big["verdicts"] if v["plugin"] == "sla")
    assert (sla["answer"], sla["code"]) == ("abstain", "within-sla")
    assert sla["message"].startswith("waited 10m") and "of its SLA 1h (deadline " in sla["message"]

    quota = await get_explain(server, job="team-b/etl")
    assert quota["summary"] == [
        "resourcequota rejects job team-b/etl (jobEnqueueable): quota compute of namespace"
        " team-b: cpu 2 requested, 1500m used or admitted of 3"
    ]

    printed = explain(server, "team-a/train-42")
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0].startswith("job team-a/train-42 (session 1, opened ")
    assert lines[1] == "  " + big["summary"][0]
    as_json = explain(server, "team-b/etl", "--json")
    assert json.loads(as_json.stdout)["summary"] == quota["summary"]

    missing = explain(server, "team-a/nothing")
    assert missing.returncode == 1
    assert "no decision about job team-a/nothing in the 1 session kept" in missing.stderr
    assert explain(server, "no-namespace").returncode == 2

    metrics = (await server.client.get("/metrics")).text
    assert (
        'caldera_rejections_total{plugin="overcommit",reason="insufficient-idle",'
        'verb="jobEnqueueable"} 1.0' in metrics
    )


ASKED_BY_ADDRESS = [
    # (case, arguments after the name, environment): the forms README and the operator guide
    # show inside the sidecar, where --url is not given. Issue 47: each exited 2 with
    # "invalid setting: --shadow False", explain's flag read as serve's shadow file.
    ("--port", ["--port", "{port}"], {}),
    ("--host and --port", ["--host", "127.0.0.1", "--port", "{port}"], {}),
    ("CALDERA_PORT", [], {"CALDERA_PORT": "{port}"}),
    ("a wildcard CALDERA_HOST", [], {"CALDERA_HOST": "0.0.0.0", "CALDERA_PORT": "{port}"}),
    ("--json with --port", ["--json", "--port", "{port}"], {}),
]


async def test_explain_reaches_the_server_by_its_address(caldera_server: StartCaldera) -> None:
    server = await caldera_server(ADMISSION)
    port = server.url.rsplit(":", 1)[1]
    nodes = {"n1": node("n1", "2", "4Gi", 2000, 4 * GI)}
    assert await post(server, "onSessionOpen", {"Jobs": {}, "Nodes": nodes}) == {}
    too_big = admission_job("train-42", {"cpu": "8", "memory": "1Gi"}, ns="team-a")
    created = rfc3339(datetime.now(UTC) - timedelta(minutes=10))
    too_big["CreationTimestamp"] = too_big["PodGroup"]["metadata"]["creationTimestamp"] = created
    assert (await post(server, "jobEnqueueable", {"job": too_big}))["status"] == -1
    for case, args, environment in ASKED_BY_ADDRESS:
        env = {**os.environ, **{k: v.format(port=port) for k, v in environment.items()}}
        env.pop("CALDERA_URL", None)
        printed = subprocess.run(
            [*caldera_command(), "explain", "team-a/train-42", *(a.format(port=port) for a in args)],
            capture_output=True, text=True, timeout=30, env=env,
        )  # fmt: skip
        assert printed.returncode == 0, (case, printed.stderr)
        assert "overcommit rejects job team-a/train-42" in printed.stdout, case
    # --shadow with --port reaches the same server, which says it runs no shadow.
    shadow = subprocess.run(
        [*caldera_command(), "explain", "team-a/train-42", "--shadow", "--port", port],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert "invalid setting" not in shadow.stderr
    assert "no shadow" in (shadow.stdout + shadow.stderr).lower(), shadow
    # A setting still refused names what the user typed.
    refused = subprocess.run(
        [*caldera_command(), "explain", "team-a/train-42", "--port", "99999"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert refused.returncode == 2 and "--port 99999" in refused.stderr, refused.stderr


async def test_a_task_no_node_fits(caldera_server: StartCaldera) -> None:
    server = await caldera_server(nodegroup.config(nodegroup.PLUGIN, version="1.16"))
    body = {"Jobs": {"ml/pg": nodegroup.job()},
            "Nodes": {n["Name"]: n for n in nodegroup.NODES},
            "Queues": {q["Name"]: q for q in nodegroup.QUEUES}, "NamespaceInfo": {},
            "RevocableNodes": {}}  # fmt: skip
    assert await post(server, "onSessionOpen", body) == {}
    t3, group_a = nodegroup.T3, nodegroup.NODES[0]
    for t in (nodegroup.T1, nodegroup.T2):  # group a fills up to its 3 CPU limit
        assert await post(server, "allocate", {"task": {**t, "NodeName": "na", "Status": 2}})
    for n in nodegroup.NODES:
        if n is not nodegroup.NODES[1]:  # nb would fit: Volcano asks every node
            await post(server, "predicate", {"task": t3, "node": n})
    explained = await get_explain(server, task="ml/t3")
    assert explained["summary"] == [
        "0/3 nodes are available: 1 nodegroup: node does not satisfy the node group affinity,"
        " 1 nodegroup: node group label not found,"
        " 1 nodegroup: node group resource limit exceeded"
    ]
    await post(server, "predicate", {"task": t3, "node": group_a})
    job = await get_explain(server, job="ml/pg")
    assert any(line.startswith("task ml/t3: 0/3 nodes") for line in job["summary"])
    printed = explain(server, "ml/t3", "--task")
    assert printed.returncode == 0 and "0/3 nodes are available" in printed.stdout


async def test_victims_min_runtime_and_a_pdb_protect(
    caldera_server: StartCaldera, tmp_path: Path
) -> None:
    server = await caldera_server(min_runtime.config(min_runtime.PLUGIN, version="1.15"))
    jobs = min_runtime.cluster().jobs  # start times from the clock now, as the session opens
    await min_runtime.open_session(server, jobs, min_runtime.QUEUES)
    answer = await evict(server, "reclaimable", min_runtime.NEW_A, min_runtime.TRAIN)
    assert answer == {"status": 1, "victims": []}
    spared = await get_explain(server, task="research/train-0")
    [line] = spared["summary"]
    assert line.startswith(
        "min-runtime spares it from research/new-a-0 (reclaimable): job research/train started "
    )
    # the gang's start is its KAI annotation; vision-b's reclaim minimum is 1h from it
    [train] = [j for j in jobs if j["Name"] == "train"]
    started = datetime.fromisoformat(
        train["PodGroup"]["metadata"]["annotations"][min_runtime.LAST_START]
    )
    assert line.endswith(
        f"job research/train started {started.isoformat()} with a reclaim minimum runtime"
        f" of 1h: protected until {(started + timedelta(hours=1)).isoformat()}"
    )
    preemptor = await get_explain(server, task="research/new-a-0")
    assert preemptor["evictions"][0]["vetoed"] == 2

    path = tmp_path / "pdbs.json"
    path.write_text(budgets(0))
    pdb = await caldera_server(pdb_config(path))
    await open_session(pdb, [])  # only a session's decisions are recorded
    assert (await evict(pdb, "preemptable", EVICTOR, [WEB1, WEB2]))["victims"] == []
    protected = await get_explain(pdb, task="default/web-1")
    assert protected["summary"] == [
        "pdb spares it from team-a/evictor (preemptable): PodDisruptionBudget default/web allows"
        " no disruption now"
    ]
