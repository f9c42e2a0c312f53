"""The guides name files, commands and alerts of this repository: they must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from app.commands.cli import parser

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [
    ROOT / "docs" / "operator-guide.md",
    ROOT / "docs" / "plugin-author-guide.md",
    ROOT / "docs" / "new-volcano-release.md",
]
PATH = re.compile(r"`((?:app|plugins|schemas|tests|bench|deploy|docs)/[\w./-]+?)`")


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_every_repository_path_a_guide_names_exists(guide: Path) -> None:
    paths = PATH.findall(guide.read_text())
    assert paths, f"{guide.name} names no file"
    for path in paths:
        if "X.Y" in path:  # the name a guide tells the reader to create
            continue
        assert (ROOT / path.rstrip("/")).exists(), f"{guide.name} names missing {path}"


def test_the_readme_links_the_guides() -> None:
    readme = (ROOT / "README.md").read_text()
    for guide in GUIDES:
        assert f"](docs/{guide.name})" in readme


def test_caldera_options_the_operator_guide_uses_exist() -> None:
    text = GUIDES[0].read_text()
    subcommands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command, options in re.findall(
        r"caldera (serve|replay|volcano-config|explain)(?: [\w./-]+)?((?: --[\w-]+(?: \d+)?)+)",
        text,
    ):
        known = {o for action in subcommands[command]._actions for o in action.option_strings}
        for option in options.split():
            if not option.isdigit():
                assert option in known, f"caldera {command} has no {option}"


def test_the_documented_caldera_explain_reaches_the_shipped_sidecar() -> None:
    """`kubectl exec … -- caldera explain … --port N` in the guides: N is the port the shipped
    sidecar's verb listener serves (it is given as an argument of serve, which explain does not
    see), in the container the guides name."""
    sidecar = ROOT / "deploy" / "kubernetes" / "sidecar" / "scheduler-sidecar.yaml"
    [deployment] = [d for d in yaml.safe_load_all(sidecar.read_text()) if d]
    pod = deployment["spec"]["template"]["spec"]
    [caldera] = [c for c in pod.get("initContainers", []) + pod.get("containers", [])
                 if c["name"] == "caldera"]  # fmt: skip
    port = caldera["args"][caldera["args"].index("--port") + 1]
    commands = [
        line
        for doc in (ROOT / "README.md", GUIDES[0])
        for line in doc.read_text().splitlines()
        if "-- caldera explain" in line
    ]
    assert len(commands) >= 3
    for command in commands:
        assert command.startswith(
            "kubectl -n volcano-system exec deploy/volcano-scheduler -c caldera -- "
        )
        assert command.endswith(f" --port {port}"), command


def test_the_operator_guide_lists_every_alert() -> None:
    document = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "prometheusrule.yaml").read_text())
    text = GUIDES[0].read_text()
    for group in document["spec"]["groups"]:
        for rule in group["rules"]:
            assert f"`{rule['alert']}`" in text


async def test_the_readmes_curl_block_runs_and_answers_as_commented(tmp_path: Path) -> None:
    """README "Debugging with curl", line by line against a real server on the embedded default
    configuration: each command succeeds, and where its comment is JSON the answer is that."""
    import json
    import subprocess

    from tests.service.conftest import start_caldera

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Debugging with curl") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README lost its curl block"
    server = await start_caldera(None, tmp_path)
    host = server.url.removeprefix("http://")
    try:
        for line in block.group(1).splitlines():
            command, _, comment = (
                line.partition("   # ") if "   # " in line else line.partition(" # ")
            )
            command = command.strip().replace("localhost:8090", host)
            result = subprocess.run(
                ["bash", "-c", f"set -o pipefail; {command}"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert result.returncode == 0, (line, result.stderr)
            assert result.stdout.strip(), line
            comment = comment.strip()
            if comment.startswith("{") and "..." not in comment:
                assert json.loads(result.stdout) == json.loads(comment), (line, result.stdout)
    finally:
        await server.stop()


def test_the_guides_extraction_commands_write_the_configmaps_data(tmp_path: Path) -> None:
    """Issue 24: the guide's `yq` commands needed mikefarah's yq v4 (Debian's `yq` writes a
    JSON-quoted string into the ConfigMap). They are Python one-liners with PyYAML, which
    Caldera's own install brings; each writes exactly the ConfigMap's data entry."""
    import shlex
    import subprocess
    import sys

    text = GUIDES[0].read_text()
    commands = [
        line for line in text.splitlines() if line.startswith("python3 -c 'import sys, yaml")
    ]
    assert len(commands) == 1
    for line in commands:
        command, _, target = line.rpartition(" > ")
        argv = shlex.split(command)
        argv[0] = sys.executable
        result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True)
        manifest, key = argv[-2], argv[-1]
        expected = yaml.safe_load((ROOT / manifest).read_text())["data"][key]
        assert result.stdout == expected, target
        assert yaml.safe_load(result.stdout), "the data entry is YAML, not a quoted string"


def test_the_readmes_check_config_commands_run_as_written(tmp_path: Path) -> None:
    """README's `caldera check-config` lines (``--strict`` for CI), each run by bash with the
    installed `caldera`, an absolute path standing for a file of the embedded default's plugins
    (tests/shipped runs them from the wheel too): exit 0 and an effective configuration."""
    import os
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    commands = [
        line.partition("   # ")[0].strip()
        for block in blocks
        for line in block.splitlines()
        if line.startswith("caldera check-config")
    ]
    assert any("--strict" in command for command in commands), commands
    default = (ROOT / "app" / "default_config.yaml").read_text()
    (tmp_path / "caldera.yaml").write_text('volcanoVersion: "1.15"\n' + default)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    for command in commands:
        command = re.sub(r"(?<=\s)/\S*?([\w.-]+\.yaml)", r"\1", command)
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PATH": path},
        )
        assert result.returncode == 0, (command, result.stderr)
        assert ": valid." in result.stdout.splitlines()[0], command
