"""Issue 34 item 5, over a real ``caldera serve``: no optional feature can stop the scheduler.
Each failure of docs/operator-guide.md's "Optional features" table: Caldera starts and keeps
serving, logs one ERROR naming the feature, sets ``caldera_feature_degraded{feature}`` and shows
why in ``/readyz``'s ``features``."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.examples import example_bytes
from tests.service.conftest import CalderaProcess, free_port, start_caldera

SNAPSHOT = example_bytes("volcano-1.15", "onSessionOpen.request.json")
CONFIG = 'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: priority\n'


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose API server is a closed port on this machine."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://127.0.0.1:{free_port()}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


async def degraded(server: CalderaProcess, feature: str) -> tuple[int, dict[str, Any]]:
    """``/readyz`` once ``feature`` shows degraded there (the data sources are looked at every
    second)."""
    deadline = time.monotonic() + 15
    while True:
        answer = await server.client.get("/readyz")
        body: dict[str, Any] = answer.json()
        if feature in body["features"] or time.monotonic() > deadline:
            return answer.status_code, body
        await asyncio.sleep(0.2)


def error_lines(server: CalderaProcess, feature: str) -> list[str]:
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return [
        line["message"]
        for line in lines
        if line["level"] == "error" and line["message"].startswith(f"{feature} does not work")
    ]


async def assert_serving_degraded(
    server: CalderaProcess, feature: str, reason: str, ready: bool = True
) -> None:
    status, body = await degraded(server, feature)
    assert reason in body["features"][feature]["reason"], body
    assert (status, body["status"]) == ((200, "degraded") if ready else (503, "not ready"))
    answer = await server.client.post("/onSessionOpen", content=SNAPSHOT)
    assert answer.status_code == 200  # the verbs are answered all along
    metrics = (await server.client.get("/metrics")).text
    assert f'caldera_feature_degraded{{feature="{feature}"}} 1.0' in metrics
    [message] = error_lines(server, feature)
    assert "Caldera keeps serving without it" in message and reason in message
    assert server.process.poll() is None


@pytest.mark.parametrize("unusable", ["a file", "under a file"])
async def test_an_unusable_record_directory_serves_without_recording(
    tmp_path: Path, unusable: str
) -> None:
    """It exited 2: a native sidecar that exits keeps vc-scheduler from starting."""
    (tmp_path / "file").write_text("{}")
    record = tmp_path / "file" if unusable == "a file" else tmp_path / "file" / "recording"
    server = await start_caldera(CONFIG, tmp_path, extra_args=["--record", str(record)])
    try:
        await assert_serving_degraded(server, "record", f"record directory {record}")
    finally:
        assert await server.stop() == 0


async def test_a_record_directory_that_fails_while_serving_stops_recording_loudly(
    tmp_path: Path,
) -> None:
    record = tmp_path / "recording"
    server = await start_caldera(CONFIG, tmp_path, extra_args=["--record", str(record)])
    try:
        shutil.rmtree(record)  # the volume went away
        assert (await server.client.post("/onSessionOpen", content=SNAPSHOT)).status_code == 200
        await assert_serving_degraded(server, "record", f"writing to {record} failed")
    finally:
        assert await server.stop() == 0


async def test_podgroup_events_without_a_kubeconfig_are_degraded_from_the_start(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    config = f"{CONFIG}explainEvents: true\nexplainEventsKubeconfig: {missing}\n"
    server = await start_caldera(config, tmp_path)
    try:
        await assert_serving_degraded(server, "explainEvents", str(missing))
    finally:
        assert await server.stop() == 0


async def test_pdb_with_an_unreachable_api_server_is_degraded_and_keeps_serving(
    tmp_path: Path,
) -> None:
    """Not ready during the start's grace (the startupProbe holds vc-scheduler back, so its
    first session has the budgets); the ERROR, the gauge and the reason come at once.
    After the grace, ready and degraded: tests/app/server/test_features.py."""
    kubeconfig = unreachable_kubeconfig(tmp_path)
    config = f"{CONFIG}  - name: pdb\n    arguments: {{kubeconfig: {kubeconfig}}}\n"
    server = await start_caldera(config, tmp_path)
    try:
        await assert_serving_degraded(server, "pdb (tiers[0].plugins[1])", "Connect", ready=False)
    finally:
        assert await server.stop() == 0
