"""The plugin registry (plugins/api/registry.py): every built-in plugin is listed in BUILT_IN,
lives in its own module or package, declares what it ports, and ``plugins/support`` holds only
helpers that two or more plugins share."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from plugins.api import registry
from plugins.api.base import Plugin

PLUGINS = Path(registry.__file__).resolve().parents[1]
NOT_PLUGINS = {"api", "support"}


def plugin_classes() -> list[type[Plugin]]:
    return [registry.get(name) for name in registry.names()]  # type: ignore[misc]


def test_every_module_and_package_of_plugins_is_listed_as_built_in() -> None:
    found = {
        f"plugins.{p.stem}"
        for p in PLUGINS.iterdir()
        if not p.name.startswith(("_", "."))
        and p.stem not in NOT_PLUGINS
        and (p.suffix == ".py" or (p / "__init__.py").exists())
    }
    assert found == set(registry.BUILT_IN)


@pytest.mark.parametrize("module", registry.BUILT_IN)
def test_each_built_in_registers_exactly_one_plugin(module: str) -> None:
    importlib.import_module(module)
    own = [
        cls
        for cls in plugin_classes()
        if cls.__module__ == module or cls.__module__.startswith(module + ".")
    ]
    assert len(own) == 1, (module, own)


@pytest.mark.parametrize("name", registry.names())
def test_each_built_in_declares_what_it_ports_as_its_docstring_says(name: str) -> None:
    cls = registry.get(name)
    assert cls is not None and cls.upstream is not None, f"{name}: no upstream declaration"
    up = cls.upstream
    assert up.repository in ("volcano-sh/volcano", "kai-scheduler/KAI-Scheduler")
    assert up.files and up.commit and up.releases
    doc = sys.modules[cls.__module__].__doc__ or ""
    flat = " ".join(doc.split())
    assert up.commit in flat, f"{name}: the docstring does not cite commit {up.commit}"
    for file in up.files:
        assert Path(file).name in flat, f"{name}: the docstring does not cite {file}"


def test_support_holds_only_what_two_or_more_plugins_share() -> None:
    users: dict[str, set[str]] = {}
    for module in registry.BUILT_IN:
        root = PLUGINS / module.split(".")[1]
        sources = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
        for source in sources:
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "plugins.support."
                ):
                    users.setdefault(node.module.split(".")[2], set()).add(module)  # type: ignore[union-attr]
    helpers = {p.stem for p in (PLUGINS / "support").glob("*.py") if p.stem != "__init__"}
    single = {h: sorted(users.get(h, ())) for h in helpers if len(users.get(h, ())) < 2}
    assert not single, f"move these next to their one user (plugins/<name>/): {single}"
