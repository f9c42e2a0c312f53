"""The suite's taint-toleration plugin (tests/plugins/taint_toleration.py) served by a real
``caldera serve``: it arrives through the ``caldera.plugins`` entry-point group (a distribution's
metadata on PYTHONPATH, as an installed wheel leaves it) and answers predicate bodies carrying
the node's taints and the pod's tolerations in Volcano's JSON, built on the body Volcano v1.15.1
really sent (plugins/api/captured/volcano-1.15/predicate.request.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from plugins.api.testing import captured_body
from tests.plugins.test_taint_toleration import CASES
from tests.service.conftest import start_caldera

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = json.loads(captured_body("1.15", "predicate"))


def entry_point_site(directory: Path) -> Path:
    """A directory holding the metadata pip leaves for a distribution declaring the plugin."""
    info = directory / "caldera_taint_toleration-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: caldera-taint-toleration\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[caldera.plugins]\ntaint-toleration = tests.plugins.taint_toleration:TaintToleration\n"
    )
    return directory


def body(taints: list[dict[str, Any]] | None, tolerations: list[dict[str, Any]] | None) -> Any:
    captured = copy.deepcopy(CAPTURED)
    if taints is not None:
        captured["node"]["Node"]["spec"]["taints"] = taints
    if tolerations is not None:
        captured["task"]["Pod"]["spec"]["tolerations"] = tolerations
    return captured


async def test_the_plugin_answers_every_case_over_http(tmp_path: Path) -> None:
    site = entry_point_site(tmp_path / "site")
    config = "tiers: [{plugins: [{name: taint-toleration}]}]\n"
    server = await start_caldera(config, tmp_path, extra_env={"PYTHONPATH": f"{site}:{ROOT}"})
    try:
        assert (await server.client.get("/readyz")).json()["plugins"] == ["taint-toleration"]
        answers = {}
        for name, (taints, tolerations, _) in CASES.items():
            response = await server.client.post("/predicate", json=body(taints, tolerations))
            assert response.status_code == 200, response.text
            answers[name] = response.json()
        expected = {
            name: {"status": message, "code": 3} if message else {"status": "", "code": 0}
            for name, (_, _, message) in CASES.items()
        }
        assert answers == expected
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("name", "taints"),
    [
        ("taints not a list", {"key": "a"}),
        ("a taint's key not a string", [{"key": 7, "effect": "NoSchedule"}]),
    ],
)
async def test_malformed_taints_are_a_json_400(tmp_path: Path, name: str, taints: Any) -> None:
    """A lazy field is decoded when the plugin reads it, not with the body: a malformed one
    still answers a JSON 4xx naming the field, never a 500."""
    site = entry_point_site(tmp_path / "site")
    config = "tiers: [{plugins: [{name: taint-toleration}]}]\n"
    server = await start_caldera(config, tmp_path, extra_env={"PYTHONPATH": f"{site}:{ROOT}"})
    try:
        response = await server.client.post("/predicate", json=body(taints, None))
        assert response.status_code == 400, (name, response.status_code, response.text)
        assert "taints" in response.json()["error"], response.text
    finally:
        await server.stop()


async def test_lazy_fields_leave_the_snapshot_buffer_free_after_the_session(
    tmp_path: Path,
) -> None:
    """A lazy field is a view of the body it came from (schemas/lazy.py): the session's objects
    hold the snapshot's buffer until onSessionClose, and no longer, so the next snapshot is
    received into the same buffer (app/server/buffers.py ``reused``, not ``held``)."""
    site = entry_point_site(tmp_path / "site")
    config = (
        "maxRequestBytes: 134217728\n"
        "tiers: [{plugins: [{name: taint-toleration}, {name: priority}, {name: task-topology},"
        " {name: nodegroup}]}]\n"
    )
    server = await start_caldera(config, tmp_path, extra_env={"PYTHONPATH": f"{site}:{ROOT}"})
    pad = "x" * 12_000
    task = copy.deepcopy(CAPTURED["task"])
    task["Pod"]["spec"]["tolerations"] = CASES["Exists on the key tolerates any value"][1]
    task["Pod"]["spec"]["affinity"] = {"nodeAffinity": {}}
    task["Pod"]["metadata"]["annotations"]["example.com/pad"] = pad
    tasks = {f"t{i}": {**task, "UID": f"t{i}", "Name": f"p{i}"} for i in range(3000)}
    node = copy.deepcopy(CAPTURED["node"])
    node["Node"]["spec"]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    snapshot = json.dumps({
        "Jobs": {"ns1/j": {"UID": "ns1/j", "Name": "j", "Namespace": "ns1", "Tasks": tasks}},
        "Nodes": {"node1": node},
    }).encode()  # fmt: skip
    assert len(snapshot) > 33 << 20
    try:
        for _ in range(2):
            opened = await server.client.post("/onSessionOpen", content=snapshot)
            assert opened.status_code == 200, opened.text
            assert (await server.client.post("/onSessionClose", json={})).status_code == 200
        text = (await server.client.get("/metrics")).text
        assert 'caldera_body_buffers_total{outcome="first"} 1.0' in text
        assert 'caldera_body_buffers_total{outcome="reused"} 1.0' in text
        assert 'caldera_body_buffers_total{outcome="held"} 0.0' in text
    finally:
        await server.stop()
