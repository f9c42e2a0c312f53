"""`.ci/run` without a Go toolchain, or without a container engine: a CI service (CI=true)
fails, a contributor's machine skips.

Runs the real script with a PATH holding no `go` and a stand-in `uv` (every step it runs passes at
once, `caldera openapi` prints the committed document), so only the Go decision is exercised."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CI_RUN = REPO / ".ci" / "run"

# What .ci/run calls outside bash's builtins up to the end-to-end step (uv is the stand-in).
TOOLS = ("git", "tar", "mktemp", "rm", "mkdir", "diff", "dirname", "cat", "tail", "env", "sed")

FAKE_UV = """#!/bin/sh
# Stand-in for uv: `uv run caldera openapi` prints the committed document, all else passes.
case "$*" in
  *"caldera openapi"*) exec cat openapi/openapi.json ;;
esac
exit 0
"""


def path_without_go(tmp_path: Path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, f"{tool} is needed to run .ci/run"
        (bin_dir / tool).symlink_to(found)
    uv = bin_dir / "uv"
    uv.write_text(FAKE_UV)
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    return str(bin_dir)


def checkout_of_the_script(tmp_path: Path) -> Path:
    """A git checkout holding .ci/run and what the stand-in reads: .ci/run copies its tracked
    files with ``git ls-files``, and the suite itself runs in such a copy, which is no git
    checkout (.ci/run's first step)."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / "openapi").mkdir()
    shutil.copy2(CI_RUN, repo / ".ci" / "run")
    shutil.copy2(REPO / "openapi" / "openapi.json", repo / "openapi" / "openapi.json")
    git = shutil.which("git")
    assert git is not None
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    subprocess.run([git, "-C", str(repo), "add", "-A"], check=True)
    return repo


def run_ci(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    script = checkout_of_the_script(tmp_path) / ".ci" / "run"
    env = {
        "PATH": path_without_go(tmp_path),
        "HOME": str(tmp_path),
        "CALDERA_IMAGE_TEST": "0",
        "CALDERA_E2E": "0",
    }
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [bash, str(script)], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("name", "ci", "returncode", "says"),
    [
        ("a CI service fails", "true", 1, "CI=true but Go is not installed"),
        ("a contributor's machine skips the suite", None, 0, "not run, Go is not installed"),
        ("CI=false is not a CI service", "false", 0, "not run, Go is not installed"),
    ],
)
def test_missing_go(tmp_path: Path, name: str, ci: str | None, returncode: int, says: str) -> None:
    done = run_ci(tmp_path, ci)
    assert done.returncode == returncode, (name, done.stdout[-2000:], done.stderr[-2000:])
    assert says in done.stdout + done.stderr, name


def test_the_stand_in_path_has_no_go(tmp_path: Path) -> None:
    # The cases above mean nothing if a `go` is reachable on the PATH they hand the script.
    assert shutil.which("go", path=path_without_go(tmp_path)) is None
    assert os.access(CI_RUN, os.X_OK)


NO_ENGINE = """#!/bin/sh
# Stand-in for tests/image/run.sh on a machine where no container engine can start.
echo "no container engine: dockerd cannot start here"
exit 77
"""
STAND_IN_GO = "#!/bin/sh\nexit 0\n"


@pytest.mark.parametrize(
    ("name", "ci", "returncode", "says"),
    [
        ("a CI service fails", "true", 1, "CI=true but no container engine can start here"),
        ("a contributor's machine goes on", None, 0, "image test: NOT RUN"),
    ],
)
def test_missing_container_engine(
    tmp_path: Path, name: str, ci: str | None, returncode: int, says: str
) -> None:
    """Issue 47 item 13: under CI=true a missing engine turned the image test and the
    image-mode e2e into "NOT RUN" and CI passed."""
    bash = shutil.which("bash")
    assert bash is not None
    repo = checkout_of_the_script(tmp_path)
    run_sh = repo / "tests" / "image" / "run.sh"
    run_sh.parent.mkdir(parents=True)
    run_sh.write_text(NO_ENGINE)
    run_sh.chmod(0o755)
    bin_dir = path_without_go(tmp_path)
    go = Path(bin_dir) / "go"  # present, passing the differential suite of a stand-in release
    go.write_text(STAND_IN_GO)
    go.chmod(0o755)
    module = repo / "tests" / "conformance" / "volcano-stand-in" / "go.mod"
    module.parent.mkdir(parents=True)
    module.write_text("module stand.in\n")
    env = {"PATH": bin_dir, "HOME": str(tmp_path), "CALDERA_E2E": "0",
           "CALDERA_CONFORMANCE_RELEASES": "stand-in"}  # fmt: skip
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run(
        [bash, str(repo / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == returncode, (name, done.stdout[-2000:], done.stderr[-2000:])
    assert says in done.stdout + done.stderr, name
