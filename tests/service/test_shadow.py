"""A shadow configuration over the real server (``caldera serve --shadow FILE``, issue 38): it
reports what it would decide differently, with its reasons, and nothing it does — a tighter
policy, a plugin that raises, one that sleeps, a file that does not load — changes a live answer
or keeps one waiting."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.plugins.pdb.test_kube import FakeApiServer, Stream, page, pdb, write_kubeconfig
from tests.service.conftest import CalderaProcess, caldera_command, start_caldera
from tests.service.plugin_bodies import admission_job, evict, open_session, post
from tests.service.test_plugin_overcommit import node
from tests.service.test_plugin_pdb import EVICTOR, WEB1, WEB2

GI = 2**30
FAULTS = [sys.executable, "-m", "tests.service.fault_server"]

LIVE = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 2.0}
"""
TIGHTER = LIVE.replace("overcommit-factor: 2.0", "overcommit-factor: 1.0")
RAISES = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: test-raises
"""
RAISES_ABSTAINING = RAISES + "    onError: abstain\n"
"""The same broken plugin, its answer dropped rather than the verb failed."""
SLEEPS = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: test-sleeps
    arguments: {seconds: 2}
"""
SNAPSHOT = {
    "Jobs": {},
    "Nodes": {"n1": node("n1", "2", "4Gi", 2000, 4 * GI), "n2": node("n2", "4", "16Gi", 4000, 16 * GI)},
    "Queues": {},
    "NamespaceInfo": {},
    "RevocableNodes": {},
}  # fmt: skip
BIG = admission_job("train-42", {"cpu": "8", "memory": "1Gi"}, ns="team-a")
"""8 CPU on 6 idle: within an overcommit factor of 2, beyond a factor of 1."""
SMALL = admission_job("etl", {"cpu": "1"}, ns="team-b")


class Servers:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[CalderaProcess] = []

    async def start(
        self, shadow: str | None, *extra: str, prefix: list[str] | None = None, live: str = LIVE
    ) -> tuple[CalderaProcess, Path]:
        path = self.workdir / f"shadow-{len(self.started)}.yaml"
        args = list(extra)
        if shadow is not None:
            path.write_text(shadow)
            args = ["--shadow", str(path), *args]
        server = await start_caldera(live, self.workdir, command_prefix=prefix, extra_args=args)
        self.started.append(server)
        return server, path


@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    started = Servers(tmp_path)
    yield started
    for server in started.started:
        await server.stop()


async def shadow_state(server: CalderaProcess, **query: str) -> dict[str, Any]:
    response = await server.client.get("/debug/shadow", params=query)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def until(server: CalderaProcess, ready: Any, timeout: float = 15.0) -> dict[str, Any]:
    """``/debug/shadow`` once ``ready(it)`` holds (the shadow answers on its own thread)."""
    deadline = time.monotonic() + timeout
    while True:
        body = await shadow_state(server)
        if ready(body) or time.monotonic() > deadline:
            return body
        await asyncio.sleep(0.05)


def metric(text: str, name: str) -> float:
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)]
    return sum(values)


def cli(server: CalderaProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*caldera_command(), *args, "--url", server.url], capture_output=True, text=True, timeout=30
    )


async def test_a_tighter_shadow_would_hold_the_job_the_live_configuration_admits(
    servers: Servers,
) -> None:
    server, shadow_file = await servers.start(TIGHTER)
    assert await post(server, "onSessionOpen", SNAPSHOT) == {}
    live = await post(server, "jobEnqueueable", {"job": BIG})
    assert live["status"] != -1, "the live configuration admits it"
    assert (await post(server, "jobEnqueueable", {"job": SMALL}))["status"] != -1

    body = await until(
        server, lambda b: b["sessions"] and b["sessions"][-1]["compared"].get("jobEnqueueable") == 2
    )
    assert list(body["jobs"]) == ["team-a/train-42"], body  # the small job: no difference
    [difference] = body["jobs"]["team-a/train-42"]
    assert difference["change"] == "would hold it"
    assert difference["live"]["answer"] in ("permit", "abstain")
    assert difference["shadow"]["answer"] == "reject"
    assert difference["shadow"]["plugin"] == "overcommit"
    assert "6 CPU x 1 less 0 CPU in use" in difference["shadow"]["reason"]
    assert body["summary"][0].startswith("session 1: 1 difference in 2 calls compared")
    assert "jobEnqueueable: the shadow would hold it: 1 job" in body["summary"]

    sha = hashlib.sha256(shadow_file.read_text().encode()).hexdigest()[:16]
    await until(server, lambda b: b["shadow"]["status"] != "starting")
    ready = (await server.client.get("/readyz")).json()
    assert ready["status"] == "ready"
    assert (ready["shadow"]["sha256"], ready["shadow"]["status"]) == (sha, "evaluating")
    metrics = (await server.client.get("/metrics")).text
    assert (
        metric(
            metrics, 'caldera_shadow_differences_total{plugin="overcommit",verb="jobEnqueueable"}'
        )
        == 1
    )

    printed = cli(server, "shadow")
    assert printed.returncode == 0, printed.stderr
    assert "the shadow would hold it by overcommit" in printed.stdout
    diff = cli(server, "shadow", "--diff")
    assert "-    arguments: {overcommit-factor: 2.0}" in diff.stdout, diff.stdout
    assert "+    arguments: {overcommit-factor: 1.0}" in diff.stdout
    assert diff.stdout.index("configuration difference") < diff.stdout.index("decision difference")
    explained = cli(server, "explain", "team-a/train-42", "--shadow")
    assert explained.returncode == 0, explained.stderr
    assert "shadow: reject by overcommit: needs 8 CPU" in explained.stdout
    untouched = cli(server, "explain", "team-b/etl", "--shadow")
    assert "decides job team-b/etl as the live configuration does" in untouched.stdout


OVERUSED = "resource in cluster is overused"
"""What overcommit logs (at debug, as upstream's klog.V(4)) for a Reject, live or shadow alike."""


async def test_a_shadows_log_lines_say_they_are_the_shadows(servers: Servers) -> None:
    """Issue 47 item 7: both configurations reject the job and overcommit logs it in each
    process; only the shadow's line carries the mark, so it never reads as a live decision."""
    server, _ = await servers.start(
        TIGHTER.replace("1.0", "1.2"), "--log-level", "debug", live=TIGHTER
    )  # 8 CPU against 6 x 1.0 and 6 x 1.2: both reject
    assert await post(server, "onSessionOpen", SNAPSHOT) == {}
    assert (await post(server, "jobEnqueueable", {"job": BIG}))["status"] == -1
    assert await post(server, "onSessionClose", {}) == {}
    await until(server, lambda b: b["sessions"] and b["sessions"][-1]["compared"])

    deadline = time.monotonic() + 10
    while True:
        lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
        loggers = sorted(line["logger"] for line in lines if OVERUSED in line["message"])
        if len(loggers) == 2 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert loggers == ["caldera.plugins.overcommit", "shadow:caldera.plugins.overcommit"]


async def test_a_shadow_that_raises_or_sleeps_changes_no_live_answer(servers: Servers) -> None:
    alone, _ = await servers.start(None, prefix=FAULTS)
    raising, _ = await servers.start(RAISES, prefix=FAULTS)
    # Room for one snapshot and a few calls: the sleeping shadow must fall behind and drop.
    sleeping, _ = await servers.start(SLEEPS, "--shadow-max-queued-bytes", "4000", prefix=FAULTS)
    answers: dict[str, list[Any]] = {}
    slowest: dict[str, float] = {}
    for name, server in (("alone", alone), ("raising", raising), ("sleeping", sleeping)):
        seen = answers.setdefault(name, [])
        slowest[name] = 0.0
        for _ in range(3):
            seen.append(await post(server, "onSessionOpen", SNAPSHOT))
            for job in (BIG, SMALL, BIG, SMALL):
                started = time.perf_counter()
                seen.append(await post(server, "jobEnqueueable", {"job": job}))
                seen.append(await post(server, "jobReady", {"job": job}))
                slowest[name] = max(slowest[name], time.perf_counter() - started)
            seen.append(await post(server, "onSessionClose", {}))
    assert answers["raising"] == answers["alone"]
    assert answers["sleeping"] == answers["alone"]
    # The sleeping shadow takes 2 s a call; no live call waited for it.
    assert slowest["sleeping"] < 1.0, slowest

    # The failures are told as they happen and the summary once the session's report is in:
    # wait for both (under load the second can come later than the first).
    raised = await until(
        raising,
        lambda b: (
            b["shadow"]["failures"]["verb"] >= 24 and any("24 verb" in x for x in b["summary"])
        ),
    )
    assert raised["shadow"]["failures"]["verb"] == 24  # 2 verbs x 4 jobs x 3 sessions
    assert "RuntimeError: scripted failure on" in raised["shadow"]["lastFailure"]["error"]
    assert any("24 verb" in line for line in raised["summary"]), raised["summary"]
    metrics = (await raising.client.get("/metrics")).text
    assert metric(metrics, 'caldera_shadow_failures_total{stage="verb"}') == 24

    slow = await shadow_state(sleeping)
    assert slow["shadow"]["droppedSessions"] >= 1, slow["shadow"]
    metrics = (await sleeping.client.get("/metrics")).text
    assert metric(metrics, "caldera_shadow_dropped_sessions_total") >= 1
    for server in (raising, sleeping):
        assert (await server.client.get("/readyz")).json()["status"] == "ready"


@pytest.mark.parametrize(
    ("shadow", "consequence"),
    [
        pytest.param(RAISES, "PluginFailure: plugin test-raises failed in", id="onError-fail"),
        pytest.param(RAISES_ABSTAINING, "its answer was dropped (onError: abstain)", id="abstain"),
    ],
)
async def test_a_shadow_plugins_faults_are_counted_whatever_its_on_error(
    servers: Servers, shadow: str, consequence: str
) -> None:
    """Under ``abstain`` a fault fails no verb (the shadow answers without that plugin), and is
    counted, shown and exported just as one under ``fail`` is."""
    server, _ = await servers.start(shadow, prefix=FAULTS)
    for _ in range(2):
        assert await post(server, "onSessionOpen", SNAPSHOT) == {}
        for job in (BIG, SMALL):
            assert (await post(server, "jobEnqueueable", {"job": job}))["status"] != -1
            assert (await post(server, "jobReady", {"job": job}))["status"] is True
        assert await post(server, "onSessionClose", {}) == {}

    body = await until(  # the failures as they happen, the summary once the sessions reported
        server,
        lambda b: b["shadow"]["failures"]["verb"] >= 8 and any("8 verb" in x for x in b["summary"]),
    )
    assert body["shadow"]["failures"]["verb"] == 8  # 2 verbs x 2 jobs x 2 sessions
    last = body["shadow"]["lastFailure"]
    assert "RuntimeError: scripted failure on" in last["error"], last
    assert consequence in last["error"], last
    assert any("8 verb" in line for line in body["summary"]), body["summary"]
    metrics = (await server.client.get("/metrics")).text
    assert metric(metrics, 'caldera_shadow_failures_total{stage="verb"}') == 8
    assert (await server.client.get("/readyz")).json()["shadow"]["failures"]["verb"] == 8


async def test_a_shadow_file_that_does_not_load_is_shown_and_watched(servers: Servers) -> None:
    server, shadow_file = await servers.start("tiers: [{plugins: [{name: no-such-plugin}]}]\n")
    await until(server, lambda b: b["shadow"]["status"] != "starting")
    ready = (await server.client.get("/readyz")).json()
    assert ready["status"] == "ready", "the live configuration serves alone"
    assert ready["shadow"]["status"] == "failing"
    assert "no-such-plugin" in ready["shadow"]["problem"]
    assert ready["shadow"]["failures"]["load"] == 1
    # Issue 47 item 10: caldera shadow said "(sha256 none)" of a file that failed to load.
    printed = cli(server, "shadow")
    assert printed.returncode == 0, printed.stderr
    heading = printed.stdout.splitlines()[0]
    assert heading.startswith(f"shadow {shadow_file} (failed to load: "), heading
    assert "no-such-plugin" in heading and "sha256" not in heading, heading
    assert await post(server, "onSessionOpen", SNAPSHOT) == {}
    assert (await post(server, "jobEnqueueable", {"job": BIG}))["status"] != -1
    # Issue 47: explain --shadow said the shadow decides the job as the live configuration does.
    await until(server, lambda b: b["sessions"])
    explained = cli(server, "explain", "team-a/train-42", "--shadow")
    assert explained.returncode == 0, explained.stderr
    assert "as the live configuration does" not in explained.stdout, explained.stdout
    assert "it has decided nothing about job team-a/train-42" in explained.stdout
    assert explained.stdout.count("no-such-plugin") == 1, explained.stdout

    shadow_file.write_text(TIGHTER)  # fixed: applied at the next session boundary
    assert await post(server, "onSessionOpen", SNAPSHOT) == {}
    assert (await post(server, "jobEnqueueable", {"job": BIG}))["status"] != -1
    body = await until(server, lambda b: b["jobs"])
    assert body["shadow"]["status"] == "evaluating"
    assert body["jobs"]["team-a/train-42"][0]["shadow"]["answer"] == "reject"


async def test_without_a_shadow_debug_shadow_says_how_to_start_one(servers: Servers) -> None:
    server, _ = await servers.start(None)
    response = await server.client.get("/debug/shadow")
    assert response.status_code == 404
    assert "--shadow FILE" in response.json()["error"]
    assert "shadow" not in (await server.client.get("/readyz")).json()
    printed = cli(server, "shadow")
    assert printed.returncode == 1 and "--shadow FILE" in printed.stderr


def with_pdb(kubeconfig: Path, shadow: bool) -> str:
    """pdb watching the API server through ``kubeconfig``; the shadow's also at overcommit 1.0
    (the change under trial is another plugin's: pdb's entry is the live one's)."""
    text = f"""\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: pdb
    arguments: {{source: kubernetes, kubeconfig: {json.dumps(str(kubeconfig))}}}
"""
    return text + (
        "  - name: overcommit\n    arguments: {overcommit-factor: 1.0}\n" if shadow else ""
    )


@pytest.mark.parametrize(
    ("same_kubeconfig", "source", "lists"),
    [
        pytest.param(True, "shared with the live configuration", 1, id="the live entry: shared"),
        pytest.param(False, "its own", 2, id="another kubeconfig: its own watch"),
    ],
)
async def test_a_shadow_hosting_pdb_shares_the_live_watch_of_the_budgets(
    servers: Servers, tmp_path: Path, same_kubeconfig: bool, source: str, lists: int
) -> None:
    """One sidecar with a shadow lists and watches the PodDisruptionBudgets once: the shadow's
    pdb reads the live one's budgets, sent at each session (app/shadow/sources.py). Only a pdb
    entry the live configuration does not have (here, another kubeconfig) watches on its own."""
    api = FakeApiServer()
    url = await api.start()
    try:
        for _ in range(2):  # room for a second list and watch: the test counts them
            api.lists.put_nowait(page([pdb("web", "10", 1)], "100"))
            api.watches.put_nowait(Stream([], end="hang"))
        kubeconfig = Path(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
        other = tmp_path / "kc-other"
        other.write_text(kubeconfig.read_text())
        shadow_text = with_pdb(kubeconfig if same_kubeconfig else other, shadow=True)
        server, _ = await servers.start(shadow_text, live=with_pdb(kubeconfig, shadow=False))
        body = await until(server, lambda b: b["shadow"]["status"] != "starting")
        assert body["shadow"]["dataSources"] == {"tiers[0].plugins[0]:pdb": source}, body
        if lists == 2:
            await api.wait_requests("list", 2)
            await api.wait_requests("watch", 2)

        await open_session(server, [])
        live = await evict(server, "preemptable", EVICTOR, [WEB1, WEB2])
        assert live == {"status": 1, "victims": [WEB1]}  # the one disruption the PDB allows
        body = await until(
            server, lambda b: b["sessions"] and b["sessions"][-1]["compared"].get("preemptable")
        )
        if lists == 1:
            # The budgets reached the shadow: unsynced, its pdb would have spared both pods.
            assert body["tasks"] == {} and body["sessions"][-1]["differences"] == {}, body
        assert (len(api.of("list")), len(api.of("watch"))) == (lists, lists)
    finally:
        await api.stop()
