"""CI's slow tier (.ci/tiers.py): a slow step runs when the content it proves changed since it
last passed, and only then; every path its row names exists, and .ci/run runs every row.

The script runs as .ci/run runs it, in a scratch git repository holding a copy of it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
TIERS = REPO / ".ci" / "tiers.py"


def load_tiers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_tiers", TIERS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


tiers = load_tiers()


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with .ci/tiers.py, a plugin, the v1.8 module and a file no step proves."""
    (tmp_path / ".ci").mkdir()
    shutil.copy2(TIERS, tmp_path / ".ci" / "tiers.py")
    for path, text in {
        "plugins/sla.py": "sla = 1\n",
        "tests/conformance/volcano-1.8/go.mod": "module v18\n",
        "tests/conformance/volcano-1.10/go.mod": "module v110\n",
        "app/shadow/worker.py": "worker = 1\n",
        "README.md": "readme\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def run(repo: Path, *args: str, tier: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CALDERA_CI_TIER"}
    if tier is not None:
        env["CALDERA_CI_TIER"] = tier
    return subprocess.run(
        ["python3", ".ci/tiers.py", *args], cwd=repo, env=env, capture_output=True, text=True
    )


def commit(repo: Path, path: str, text: str) -> None:
    (repo / path).write_text(text)
    git(repo, "commit", "-qam", f"change {path}")


def test_a_slow_step_runs_until_it_passed_on_this_content(repo: Path) -> None:
    first = run(repo, "due", "differential-1.8")
    assert first.returncode == 0, first.stdout
    assert "its paths changed since it last passed" in first.stdout
    recorded = run(repo, "record", "differential-1.8", "150")
    assert recorded.returncode == 0 and "recorded" in recorded.stdout
    again = run(repo, "due", "differential-1.8")
    assert again.returncode == 1
    assert "passed on this very content" in again.stdout
    assert "150s" in again.stdout


@pytest.mark.parametrize(
    ("changed", "due"),
    [
        pytest.param("plugins/sla.py", True, id="a plugin it proves changed"),
        pytest.param("tests/conformance/volcano-1.8/go.mod", True, id="its release module"),
        pytest.param("tests/conformance/volcano-1.10/go.mod", False, id="another release"),
        pytest.param("app/shadow/worker.py", False, id="code no answer goes through"),
        pytest.param("README.md", False, id="docs"),
    ],
)
def test_which_change_reruns_a_slow_step(repo: Path, changed: str, due: bool) -> None:
    run(repo, "record", "differential-1.8", "150")
    git(repo, "add", ".ci/slow-tier-passed")
    git(repo, "commit", "-qm", "record")
    commit(repo, changed, "changed\n")
    result = run(repo, "due", "differential-1.8")
    assert (result.returncode == 0) is due, result.stdout


def test_an_uncommitted_change_reruns_it_and_is_never_recorded(repo: Path) -> None:
    run(repo, "record", "differential-1.8", "150")
    (repo / "plugins" / "sla.py").write_text("edited, not committed\n")
    result = run(repo, "due", "differential-1.8")
    assert result.returncode == 0 and "uncommitted" in result.stdout
    record = run(repo, "record", "differential-1.8", "150")
    assert "not recorded" in record.stdout
    assert len((repo / ".ci" / "slow-tier-passed").read_text().splitlines()) == 1


def test_content_not_history_decides(repo: Path) -> None:
    """A change made and then undone leaves the content it passed on: no rerun."""
    run(repo, "record", "differential-1.8", "150")
    commit(repo, "plugins/sla.py", "changed\n")
    assert run(repo, "due", "differential-1.8").returncode == 0
    commit(repo, "plugins/sla.py", "sla = 1\n")
    assert run(repo, "due", "differential-1.8").returncode == 1


@pytest.mark.parametrize(
    ("tier", "step", "due", "says"),
    [
        pytest.param("full", "differential-1.8", True, "CALDERA_CI_TIER=full", id="full runs it"),
        pytest.param("fast", "differential-1.8", False, "LEFT OUT", id="fast leaves it out"),
        pytest.param("slow", "differential-1.8", True, "runs", id="slow runs it"),
        pytest.param("auto", "differential-1.14", True, "", id="a fast step runs"),
        pytest.param("fast", "differential-1.14", True, "", id="fast runs a fast step"),
        pytest.param("slow", "differential-1.14", False, "left out", id="slow leaves it out"),
    ],
)
def test_what_each_tier_runs(repo: Path, tier: str, step: str, due: bool, says: str) -> None:
    result = run(repo, "due", step, tier=tier)
    assert (result.returncode == 0) is due, result.stdout
    assert says in result.stdout


def test_an_unknown_tier_or_command_is_refused(repo: Path) -> None:
    bad_tier = run(repo, "due", "differential-1.8", tier="nightly")
    assert bad_tier.returncode != 0
    assert "CALDERA_CI_TIER must be auto, full, fast or slow" in bad_tier.stderr
    usage = run(repo, "record", "differential-1.8", "soon")
    assert usage.returncode == 2 and "tiers.py due STEP" in usage.stderr


@pytest.mark.parametrize("step_id", list(tiers.STEPS))
def test_every_path_a_slow_step_names_exists(step_id: str) -> None:
    """A path renamed away would silently fall out of the fingerprint. (Checked on disk: the
    suite runs in a copy of the tracked files, which is no git checkout: .ci/run's first step.)"""
    for path in tiers.STEPS[step_id].paths:
        assert (REPO / path).exists(), path


def test_ci_run_asks_about_every_slow_step() -> None:
    script = (REPO / ".ci" / "run").read_text()
    releases = re.search(r"CALDERA_CONFORMANCE_RELEASES:-([\d.,]+)\}", script)
    assert releases is not None
    for step_id in tiers.STEPS:
        kind, _, release = step_id.rpartition("-")
        if kind in ("differential", "mutations") and release[:1].isdigit():
            assert f'slow_due "{kind}-$r"' in script
            assert release in releases.group(1).split(",")
        else:
            assert f"slow_due {step_id}" in script
            assert f"slow_passed {step_id}" in script
