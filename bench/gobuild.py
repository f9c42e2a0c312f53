"""Build the Go baseline extender and the load generator into bench/results/tmp/bin."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TMP = BENCH / "results" / "tmp"
BIN = TMP / "bin"


class BuildError(RuntimeError):
    pass


class ModulesUnavailable(BuildError):
    """Volcano's Go modules cannot be downloaded here. The go-extender needs the published
    volcano.sh/volcano v1.14.1 and volcano.sh/apis v1.14.0 (and their Kubernetes dependencies)
    from the Go module proxy."""


def have_go() -> bool:
    return shutil.which("go") is not None


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    p = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if p.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} (in {cwd}) failed:\n{p.stdout}{p.stderr}")


def build(go_extender: bool = True, go_marshal: bool = False) -> dict[str, Path]:
    """Returns {"loadgen": path, "go-extender": path, "go-marshal": path} for those asked.
    go-extender and go-marshal are modules of their own pinned to the same published Volcano
    release (same go.sum), so the second one built links packages the first compiled."""
    if not have_go():
        raise BuildError("the go toolchain is not on PATH")
    BIN.mkdir(parents=True, exist_ok=True)
    out = {"loadgen": BIN / "loadgen"}
    _run(["go", "build", "-o", str(out["loadgen"]), "."], BENCH / "loadgen")
    for name, wanted in (("go-extender", go_extender), ("go-marshal", go_marshal)):
        if not wanted:
            continue
        try:
            _run(["go", "mod", "download"], BENCH / name)
        except BuildError as exc:
            raise ModulesUnavailable(f"Volcano's Go modules cannot be downloaded: {exc}") from None
        out[name] = BIN / name
        _run(["go", "build", "-o", str(out[name]), "."], BENCH / name)
    return out
