"""Misbehaving plugins against a real ``caldera serve`` (issue 35): a plugin that raises in each
hook, one that answers each hook with a wrong type, one that takes 3 s, installed through the
``caldera.plugins`` entry points beside a well-behaved one. Each fault is named, counted in
``caldera_plugin_errors_total``, explained by ``/debug/explain`` and handled by the entry's
``onError``; the server stays ready, and the probes answer while the slow hook runs."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio

from tests.examples import example_bytes
from tests.service.conftest import CalderaProcess, free_port, start_caldera
from tests.service.plugin_bodies import job

HERE = Path(__file__).resolve().parent
MODULE = "caldera_misbehaving"
PLUGINS = {
    "misbehave-raise": "Raises",
    "misbehave-wrong-type": "WrongType",
    "misbehave-slow": "Slow",
    "misbehave-foreign-victim": "ForeignVictim",
    "steady": "Steady",
}


def install(site: Path) -> Path:
    """The plugins as an installed distribution: the module and a dist-info naming its entry
    points, which is what ``pip install`` of a wheel leaves behind."""
    site.mkdir()
    shutil.copy(HERE / "misbehaving_plugins.py", site / f"{MODULE}.py")
    info = site / f"{MODULE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {MODULE}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[caldera.plugins]\n"
        + "".join(f"{name} = {MODULE}:{cls}\n" for name, cls in PLUGINS.items())
    )
    return site


def configuration(policy: str) -> str:
    return f"""
volcanoVersion: "1.16"
tiers:
- plugins:
  - name: misbehave-raise
    onError: {policy}
  - name: misbehave-wrong-type
    onError: {policy}
  - name: misbehave-slow
    onError: {policy}
  - name: misbehave-foreign-victim
    onError: {policy}
  - name: steady
"""


def task(name: str) -> dict[str, Any]:
    return {"UID": f"uid-{name}", "Name": name, "Namespace": "ns", "Job": "ns/j"}


def node(name: str) -> dict[str, Any]:
    return {"Name": name}


JOB = job("ns", "j")
HOLD = job("ns", "hold")
EVICTING = ("preemptable", "reclaimable")
EVICT = {"evictor": task("evictor"), "evictees": [task("keep"), task("go")]}

# (case, verb, body, the answer steady alone gives, the subject explain is asked about)
CASES: list[tuple[str, str, dict[str, Any], Any, str]] = [
    ("predicate", "predicate", {"task": task("p"), "node": node("full")},
     {"status": "steady: full", "code": 3}, "task=ns/p"),
    ("prioritize", "prioritize", {"task": task("p"), "nodes": [node("n1"), node("n2")]},
     {"nodeScore": {"n1": 5.0, "n2": 5.0}, "errorMessage": ""}, "task=ns/p"),
    ("preemptable", "preemptable", EVICT, {"status": 1, "victims": [task("go")]},
     "task=ns/evictor"),
    ("reclaimable", "reclaimable", EVICT, {"status": 1, "victims": [task("go")]},
     "task=ns/evictor"),
    ("jobEnqueueable", "jobEnqueueable", {"job": HOLD}, {"status": -1}, "job=ns/hold"),
    ("jobEnqueued", "jobEnqueued", {"job": JOB}, {}, ""),
    ("queueOverused", "queueOverused", {"queue": {"Name": "busy"}}, {"overused": True}, ""),
    ("jobReady", "jobReady", {"job": HOLD}, {"status": False}, "job=ns/hold"),
    ("allocate", "allocate", {"task": task("no-room")}, {"errorMessage": "steady: no room"},
     "task=ns/no-room"),
    ("deallocate", "deallocate", {"task": task("d")}, {"errorMessage": ""}, ""),
]  # fmt: skip


@pytest_asyncio.fixture
async def abstaining(tmp_path: Path) -> AsyncIterator[tuple[CalderaProcess, str]]:
    site = install(tmp_path / "site")
    health_port = free_port()
    server = await start_caldera(
        configuration("abstain"),
        tmp_path,
        {"PYTHONPATH": str(site)},
        extra_args=["--health-host", "127.0.0.1", "--health-port", str(health_port)],
    )
    try:
        opened = await server.client.post(
            "/onSessionOpen", content=example_bytes("head", "onSessionOpen.request.json")
        )
        assert opened.status_code == 200, opened.text
        yield server, f"http://127.0.0.1:{health_port}"
    finally:
        assert await server.stop() == 0, server.log()


def errors(metrics: str, plugin: str, verb: str, kind: str) -> float:
    prefix = f'caldera_plugin_errors_total{{kind="{kind}",plugin="{plugin}",verb="{verb}"}} '
    values = [
        float(line[len(prefix) :]) for line in metrics.splitlines() if line.startswith(prefix)
    ]
    return values[0] if values else 0.0


async def test_each_fault_is_named_counted_explained_and_its_answer_dropped(
    abstaining: tuple[CalderaProcess, str],
) -> None:
    server, health = abstaining
    client = server.client
    for case, verb, body, expected, subject in CASES:
        answer = await client.post(f"/{verb}", content=json.dumps(body, separators=(",", ":")))
        assert answer.status_code == 200, (case, answer.text)
        assert answer.json() == expected, case  # the steady plugin's answer stands
        metrics = (await client.get("/metrics")).text
        assert errors(metrics, "misbehave-raise", verb, "raised") >= 1, case
        assert errors(metrics, "misbehave-wrong-type", verb, "wrong_type") >= 1, case
        if subject:
            explained = (await client.get(f"/debug/explain?{subject}")).json()
            text = json.dumps(explained)
            assert f"plugin misbehave-raise failed in {verb} (raised: RuntimeError:" in text, case
            assert f"plugin misbehave-wrong-type failed in {verb} (wrong_type: returned" in text
            assert "its answer was dropped (onError: abstain)" in text, case
        if verb in EVICTING:  # a victim it was not given: its fault, not an unattributed 500
            assert errors(metrics, "misbehave-foreign-victim", verb, "wrong_type") == 1, case
            assert (
                f"plugin misbehave-foreign-victim failed in {verb} (wrong_type: returned a"
                " victim that is not one of the evictees it was given: TaskInfo /stranger"
                " UID 'uid-keep' (its UID is an evictee's: a copy)"
            ) in json.dumps(explained), case

    summary = (await client.get("/debug/explain?job=ns/hold")).json()["summary"]
    assert (
        "plugin misbehave-wrong-type failed in jobReady (wrong_type: returned 'no' (str);"
        " expected bool | Explained[bool]): its answer was dropped (onError: abstain)"
        " (asked about job ns/hold)"
    ) in summary

    async with httpx.AsyncClient(base_url=health, timeout=5.0) as probes:
        ready = await probes.get("/readyz")
        assert ready.status_code == 200, ready.text  # abstaining faults keep the pod ready
        faults = ready.json()["pluginErrors"]
        assert faults["misbehave-raise"]["count"] >= len(CASES)
        assert faults["misbehave-wrong-type"]["last"]["kind"] == "wrong_type"
        assert faults["misbehave-wrong-type"]["last"]["onError"] == "abstain"
        assert "steady" not in faults
    # Logged once per plugin, verb and kind: asking again adds no line.
    lines = server.log().count("failed in jobReady (raised")
    await client.post("/jobReady", content=json.dumps({"job": JOB}))
    await asyncio.sleep(0.2)
    assert server.log().count("failed in jobReady (raised") == lines == 1


async def test_probes_answer_while_a_hook_runs_three_seconds(
    abstaining: tuple[CalderaProcess, str],
) -> None:
    server, health = abstaining
    slow = server.client.post("/jobReady", content=json.dumps({"job": job("ns", "slow")}))
    pending = asyncio.ensure_future(slow)
    await asyncio.sleep(0.5)  # the verb is in the slow hook now
    async with httpx.AsyncClient(base_url=health, timeout=5.0) as probes:
        for path in ("/healthz", "/readyz", "/metrics"):
            started = time.monotonic()
            answer = await probes.get(path)
            took = time.monotonic() - started
            assert answer.status_code == 200, (path, answer.text)
            # The probe answered while the hook was still running (it ends 3 s after it began):
            assert not pending.done(), f"{path} waited for the hook ({took:.3f} s)"
            assert took < 1.0, f"{path} took {took:.3f} s"
    answered = await pending
    assert answered.status_code == 200 and answered.json() == {"status": True}
    metrics = (await server.client.get("/metrics")).text
    assert errors(metrics, "misbehave-slow", "jobReady", "over_budget") == 1
    summary = (await server.client.get("/debug/explain?job=ns/slow")).json()["summary"]
    assert any(
        line.startswith("plugin misbehave-slow failed in jobReady (over_budget: took 3")
        and "over its 100 ms budget (1 of 3 in a row before onError applies)" in line
        and line.endswith("its answer was used (asked about job ns/slow)")
        for line in summary
    ), summary
    assert "caldera_plugin_call_duration_seconds_bucket" in metrics


async def test_fail_answers_each_verb_with_an_error_naming_plugin_and_verb(
    tmp_path: Path,
) -> None:
    site = install(tmp_path / "site")
    server = await start_caldera(configuration("fail"), tmp_path, {"PYTHONPATH": str(site)})
    try:
        for case, verb, body, _, _ in CASES:
            answer = await server.client.post(f"/{verb}", content=json.dumps(body))
            assert answer.status_code == 500, case
            error = answer.json()
            assert (error["plugin"], error["verb"]) == ("misbehave-raise", verb), case
            assert error["error"].startswith(f"plugin misbehave-raise failed in {verb}:"), case
        ready = await server.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["pluginErrors"]["misbehave-raise"]["last"]["consequence"] == (
            "the verb was answered with an error (onError: fail)"
        )
    finally:
        assert await server.stop() == 0, server.log()
