"""A third-party plugin arrives through the ``caldera.plugins`` entry-point group: build a wheel
of the README's example plugin, install it, and serve it from a real ``caldera serve``."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.service.conftest import start_caldera

ROOT = Path(__file__).resolve().parents[2]
DIST = "caldera_gpu_model"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- example-plugin -->\n```python\n(.*?)```", text, re.S)
    assert match, "README lost its example plugin"
    return match.group(1)


def build_wheel(directory: Path) -> Path:
    """A pure-Python wheel, as any build backend would produce for the README's pyproject."""
    info = f"{DIST}-0.1.0.dist-info"
    files = {
        f"{DIST}.py": readme_example(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[caldera.plugins]\ngpu-model = {DIST}:GpuModel\n",
    }
    record = []
    for name, content in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(content.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(content.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = directory / f"{DIST}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return wheel


def install(wheel: Path, target: Path) -> None:
    if importlib.util.find_spec("pip") is not None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                "--target",
                str(target),
                str(wheel),
            ],
            check=True,
        )
    else:  # uv's environments ship without pip; a pure wheel installs by unpacking it
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)


def test_readme_example_is_short() -> None:
    lines = [line for line in readme_example().splitlines() if line.strip()]
    assert len(lines) <= 30


async def test_installed_plugin_is_discovered_and_served(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(build_wheel(tmp_path), site)
    config = "tiers: [{plugins: [{name: gpu-model, arguments: {node-label: gpu}}]}]\n"

    (tmp_path / "without").mkdir()
    with pytest.raises(RuntimeError, match="unknown plugin 'gpu-model'"):
        await start_caldera(config, tmp_path / "without")  # not installed: refused at startup

    server = await start_caldera(config, tmp_path, extra_env={"PYTHONPATH": str(site)})
    try:
        task = {
            "UID": "t1",
            "Name": "p",
            "Namespace": "ns",
            "Pod": {"metadata": {"name": "p", "annotations": {"example.com/gpu-model": "H100"}}},
        }
        node = {"Name": "n1", "Node": {"metadata": {"name": "n1", "labels": {"gpu": "A100"}}}}
        miss = await server.client.post("/predicate", json={"task": task, "node": node})
        assert miss.json() == {"status": "n1 has no H100", "code": 3}
        node["Node"]["metadata"]["labels"]["gpu"] = "H100"  # type: ignore[index]
        fits = await server.client.post("/predicate", json={"task": task, "node": node})
        assert fits.json() == {"status": "", "code": 0}
        assert (await server.client.get("/readyz")).json()["plugins"] == ["gpu-model"]
    finally:
        await server.stop()
