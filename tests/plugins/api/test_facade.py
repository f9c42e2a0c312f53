"""The plugin API is complete at its facade: built-in plugins import ``plugins.api``, never one
of its submodules, and the test kit reaches ``app`` through its one seam."""

from __future__ import annotations

import ast
from pathlib import Path

import plugins.api

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = ROOT / "plugins"
API = PLUGINS / "api"
TESTING = API / "testing.py"


def submodule_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {m}"
            for m in modules
            if m.startswith("plugins.api.")
        ]
    return found


def test_built_in_plugins_import_only_the_facade() -> None:
    built_ins = [p for p in PLUGINS.rglob("*.py") if API not in p.parents]
    assert len(built_ins) > 10
    assert [line for path in built_ins for line in submodule_imports(path)] == []


def test_the_facade_exports_every_name_of_its_all() -> None:
    assert plugins.api.__all__ == sorted(plugins.api.__all__, key=lambda n: (not n.isupper(), n))
    assert [name for name in plugins.api.__all__ if not hasattr(plugins.api, name)] == []


def test_the_test_kit_imports_app_only_through_its_seam() -> None:
    tree = ast.parse(TESTING.read_text())
    allowed: set[int] = set()
    for node in ast.walk(tree):
        is_seam = isinstance(node, ast.ClassDef) and node.name == "_Service"
        is_types = (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        )
        if is_seam or is_types:
            allowed.update(id(inner) for inner in ast.walk(node))
    outside = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        if any(m == "app" or m.startswith("app.") for m in modules) and id(node) not in allowed:
            outside.append(f"testing.py:{node.lineno}")
    assert outside == []
