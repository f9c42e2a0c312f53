"""docs/operator-guide.md §9, "Turn Volcano's snapshot off": its configuration and both
commands, run as written; the entry printed is the one the section describes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from app.cluster_state.store import COLLECTIONS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operator-guide.md"


def section() -> str:
    text = GUIDE.read_text()
    start = text.index("## 9. Turn Volcano's snapshot off: `sessionState: cluster`")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_guides_commands_run_and_print_the_entry_it_describes(tmp_path: Path) -> None:
    text = section()
    [config] = re.findall(r"```yaml\n(.*?)```", text, re.S)
    [block] = re.findall(r"```sh\n(.*?)```", text, re.S)
    (tmp_path / "caldera.yaml").write_text(config)
    bin_dir = str(Path(sys.executable).parent)  # the caldera script next to this interpreter
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    printed = []
    for command in block.strip().splitlines():
        result = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {command}"],
            capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
        )  # fmt: skip
        assert result.returncode == 0, (command, result.stderr)
        printed.append(result.stdout)
    check, entry = printed
    assert "sessionState: cluster" in check
    [extender] = yaml.safe_load(entry)
    verbs = {key for key in extender["arguments"] if key.endswith("Verb")}
    assert "extender.onSessionOpenVerb" not in verbs
    for key in ("onSessionCloseVerb", "allocateFuncVerb", "deallocateFuncVerb"):
        assert f"extender.{key}" in verbs, key
        assert f"`{key}`" in text  # the section names what the entry has
    assert "no\n`onSessionOpenVerb`" in text or "no `onSessionOpenVerb`" in text


def test_the_section_names_every_watched_collection() -> None:
    text = " ".join(section().split())
    for collection in COLLECTIONS.values():
        kind = collection.kind
        assert kind + ("es" if kind.endswith("s") else "s") in text, kind
