"""The wheel as a user installs it: built from the checkout, installed into a fresh virtualenv
with its runtime dependencies only (pinned to uv.lock's versions, so the proof does not move when
the package index does), and nothing of the checkout on the path."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "plugins", "schemas")  # what pyproject's wheel target ships


def uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def caldera(self) -> Path:
        return self.venv / "bin" / "caldera"


def install_wheel(work: Path) -> Installed:
    """Build the wheel and install it, runtime dependencies only, into ``work/venv``."""
    dist, venv = work / "dist", work / "venv"
    run = [*uv()]
    subprocess.run([*run, "build", "--wheel", "--out-dir", str(dist), str(ROOT)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    [wheel] = dist.glob("caldera*.whl")
    constraints = work / "runtime-constraints.txt"
    exported = subprocess.run(
        [*run, "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes",
         "--format", "requirements-txt", "--project", str(ROOT)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    constraints.write_text(exported.stdout)
    subprocess.run([*run, "venv", "--quiet", "--python", sys.executable, str(venv)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    subprocess.run(
        [*run, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         "--constraint", str(constraints), str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return Installed(venv, wheel)


# Run by the installed interpreter in isolated mode (-I: no checkout, no PYTHONPATH, no user
# site): every module of the shipped packages imports, from the virtualenv.
IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
venv, skip = sys.argv[1], set(sys.argv[2].split(",")) - {""}
imported, failed = [], {}
for name in sys.argv[3:]:
    package = importlib.import_module(name)
    if not package.__file__.startswith(venv):
        failed[name] = "imported from " + package.__file__
        continue
    imported.append(name)
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        if module.name in skip:
            continue
        try:
            importlib.import_module(module.name)
            imported.append(module.name)
        except BaseException as exc:
            failed[module.name] = type(exc).__name__ + ": " + str(exc)
print(json.dumps({"imported": imported, "failed": failed}))
"""
