"""Build the Go baseline extender and the load generator into bench/results/tmp/bin."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TMP = BENCH / "results" / "tmp"
BIN = TMP / "bin"
APIS = TMP / "volcano-apis-v1.15.1"  # go-extender/go.mod: replace volcano.sh/apis => this
VOLCANO_TAG = "v1.15.1"
DEFAULT_VOLCANO_GIT = "/work/.mirror/volcano-sh+volcano/repo"


class BuildError(RuntimeError):
    pass


def have_go() -> bool:
    return shutil.which("go") is not None


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    p = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if p.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} (in {cwd}) failed:\n{p.stdout}{p.stderr}")


def ensure_apis() -> None:
    """volcano.sh/apis v1.15.1 is not on the module proxy; upstream's go.mod points at the
    staging copy inside the volcano tree. Extract that directory from a volcano git checkout
    (``$VOLCANO_GIT``, a bare or normal repository that has the v1.15.1 tag)."""
    if (APIS / "go.mod").exists():
        return
    repo = os.environ.get("VOLCANO_GIT", DEFAULT_VOLCANO_GIT)
    if not Path(repo).exists():
        raise BuildError(
            f"volcano.sh/apis {VOLCANO_TAG} is needed from the volcano source tree; set VOLCANO_GIT to a "
            f"clone of https://github.com/volcano-sh/volcano with tag {VOLCANO_TAG} (not found: {repo})"
        )
    p = subprocess.run(
        ["git", "-C", repo, "archive", VOLCANO_TAG, "staging/src/volcano.sh/apis"],
        capture_output=True,
    )
    if p.returncode != 0:
        raise BuildError(f"git archive from {repo} failed: {p.stderr.decode()}")
    APIS.mkdir(parents=True, exist_ok=True)
    prefix = "staging/src/volcano.sh/apis/"
    with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tf:
        for m in tf.getmembers():
            if not m.name.startswith(prefix) or m.name == prefix:
                continue
            m.name = m.name[len(prefix) :]
            tf.extract(m, APIS, filter="data")


def build(go_extender: bool = True) -> dict[str, Path]:
    """Returns {"loadgen": path, "go-extender": path}."""
    if not have_go():
        raise BuildError("the go toolchain is not on PATH")
    BIN.mkdir(parents=True, exist_ok=True)
    out = {"loadgen": BIN / "loadgen"}
    _run(["go", "build", "-o", str(out["loadgen"]), "."], BENCH / "loadgen")
    if go_extender:
        ensure_apis()
        out["go-extender"] = BIN / "go-extender"
        _run(["go", "build", "-o", str(out["go-extender"]), "."], BENCH / "go-extender")
    return out
