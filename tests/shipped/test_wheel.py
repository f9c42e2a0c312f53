"""What ships is what is tested (issue 34): the wheel, installed into a fresh virtualenv with its
runtime dependencies only, imports every module and runs every CLI subcommand and every command
README.md and docs/ show. The suite itself runs under uv with the dev group, which hid a runtime
module importing httpx (a test dependency) until an operator ran ``caldera explain``."""

from __future__ import annotations

import json
import pkgutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.commands.cli import parser
from tests.shipped.install import (
    IMPORT_EVERY_MODULE,
    PACKAGES,
    ROOT,
    Installed,
    install_wheel,
)
from tests.shipped.walkthrough import Walkthrough, documented_commands


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    yield install_wheel(tmp_path_factory.mktemp("shipped"))


def source_modules() -> set[str]:
    names = set(PACKAGES)
    for package in PACKAGES:
        names |= {m.name for m in pkgutil.walk_packages([str(ROOT / package)], f"{package}.")}
    return names


def imports(installed: Installed, cwd: Path, skip: set[str]) -> dict[str, Any]:
    result = subprocess.run(
        [str(installed.python), "-I", "-c", IMPORT_EVERY_MODULE, str(installed.venv),
         ",".join(sorted(skip)), *PACKAGES],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_every_shipped_module_imports_with_runtime_dependencies_only(
    shipped: Installed, tmp_path: Path
) -> None:
    report = imports(shipped, tmp_path, set())
    assert report["failed"] == {}
    # The wheel holds every module of the checkout: none is left out of the package list.
    assert set(report["imported"]) == source_modules()


def test_every_subcommand_answers_from_the_wheel(shipped: Installed, tmp_path: Path) -> None:
    subcommands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    version = subprocess.run([str(shipped.caldera), "--version"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert version.returncode == 0 and version.stdout.startswith("caldera "), version
    for name in subcommands:
        result = subprocess.run([str(shipped.caldera), name, "--help"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert result.returncode == 0, (name, result.stderr)
        assert "Traceback" not in result.stderr, (name, result.stderr)


def test_the_documents_caldera_commands_run_from_the_wheel(
    shipped: Installed, tmp_path: Path
) -> None:
    commands = documented_commands()
    # The walk-through must reach every subcommand the documents show, explain among them.
    assert {
        "serve", "explain", "shadow", "replay", "check-config", "check-plugin", "volcano-config",
        "openapi",
    } <= {c.subcommand for c in commands}  # fmt: skip
    walk = Walkthrough([str(shipped.caldera)], tmp_path / "scratch")
    walk.walk(commands)
    assert walk.problems == [], "\n\n".join(walk.problems)
    assert len(walk.outcomes) >= len(commands)


def test_the_docs_page_files_ship_with_the_runtime_dependencies(
    shipped: Installed, tmp_path: Path
) -> None:
    """/docs works without internet access only if the wheel's runtime dependencies bring
    Swagger UI's files (app/server/routes/docs.py): read them as the installed server does."""
    read = (
        "import json; from app.server.routes.docs import ASSETS, asset;"
        " print(json.dumps({name: len(asset(name)) for name in ASSETS}))"
    )
    result = subprocess.run([str(shipped.python), "-I", "-c", read], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    sizes = json.loads(result.stdout)
    assert sorted(sizes) == ["favicon.png", "swagger-ui-bundle.js", "swagger-ui.css"]
    assert sizes["swagger-ui-bundle.js"] > 500_000, sizes
