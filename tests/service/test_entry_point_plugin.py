"""A third-party plugin arrives through the ``caldera.plugins`` entry-point group: build a wheel
of the README's example plugin, install it, and serve it from a real ``caldera serve``."""

from __future__ import annotations

import importlib.util
import re
import shutil
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


def guide_pyproject() -> str:
    """The plugin-author guide's own pyproject.toml (its "Publishing a plugin" section)."""
    text = (ROOT / "docs" / "plugin-author-guide.md").read_text()
    section = text[text.index("## Publishing a plugin") :]
    match = re.search(r"```toml\n(.*?)```", section, re.S)
    assert match, "the guide lost its pyproject.toml"
    return match.group(1)


def build_wheel(directory: Path) -> Path:
    """The guide's pyproject and the README's module, built as a plugin author would (uv
    build; its cache holds hatchling, with which Caldera itself was built)."""
    source = directory / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text(guide_pyproject())
    (source / f"{DIST}.py").write_text(readme_example())
    uv = shutil.which("uv")
    assert uv, "uv builds the wheel (the README's test command installs it)"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(directory), str(source)],
        check=True,
        capture_output=True,
    )
    [wheel] = directory.glob(f"{DIST}-0.1.0-*.whl")
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


async def test_a_plugin_installed_while_serving_is_refused_on_reload_naming_the_cause(
    tmp_path: Path,
) -> None:
    """Plugins are discovered at start: live reload naming one installed since is rejected,
    and the error says why (and what to do)."""
    import asyncio
    import time

    site = tmp_path / "site"
    site.mkdir()
    server = await start_caldera(
        "tiers: [{plugins: [{name: priority}]}]\n",
        tmp_path,
        extra_env={"PYTHONPATH": str(site), "CALDERA_CONFIG_WATCH_SECONDS": "0.1"},
    )
    try:
        install(build_wheel(tmp_path), site)
        (config,) = tmp_path.glob("caldera-*.yaml")
        config.write_text("tiers: [{plugins: [{name: gpu-model}]}]\n")
        deadline = time.monotonic() + 10
        while "rejected" not in (state := (await server.client.get("/readyz")).json()["config"]):
            assert time.monotonic() < deadline, state
            await asyncio.sleep(0.1)
        error = state["rejected"]["error"]
        assert "unknown plugin 'gpu-model'" in error
        assert (
            "plugins are discovered when caldera starts: restart it after installing one" in error
        )
        assert (await server.client.get("/readyz")).json()["plugins"] == ["priority"]
    finally:
        await server.stop()
