"""Plugin registry: names to plugin classes (Volcano's ``framework.RegisterPluginBuilder``).

Built-in plugins are listed in :data:`BUILT_IN` and register with :func:`register` when their
module is imported; third-party plugins arrive through the ``caldera.plugins`` entry-point group,
so an operator adds one with ``pip install``. An entry point's name is the plugin name and its
object a :class:`Plugin` subclass.
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points
from typing import TypeVar

from plugins.api.base import Plugin

logger = logging.getLogger("caldera.plugins")

ENTRY_POINT_GROUP = "caldera.plugins"
BUILT_IN = (
    "plugins.cdp",
    "plugins.conformance",
    "plugins.min_runtime",
    "plugins.nodegroup",
    "plugins.overcommit",
    "plugins.pdb",
    "plugins.priority",
    "plugins.resource_strategy_fit",
    "plugins.resourcequota",
    "plugins.sla",
    "plugins.task_topology",
    "plugins.usage",
)
"""The built-in plugins: a module, or a package (``plugins/<name>/``, its helpers beside it)
whose ``__init__`` imports the plugin module. Imported on first lookup so each registers what
it defines. ``plugins.api`` (the plugin API) and ``plugins.support`` (helpers two or more
plugins share) are not plugins; tests/plugins/api/test_registry.py checks that every other
module and package of ``plugins/`` is listed here."""

_registry: dict[str, type[Plugin]] = {}
_failed: dict[str, str] = {}
"""Entry points that are installed but gave no plugin: name to why (an import that raised, an
object that is not a Plugin), so a configuration naming one is told that, not to install it."""
_P = TypeVar("_P", bound=Plugin)
_loaded = False


class PluginLoadError(RuntimeError):
    """An entry point that does not resolve to a Plugin subclass."""


def register(cls: type[_P]) -> type[_P]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    existing = _registry.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"plugin name {cls.name!r} is registered twice")
    _registry[cls.name] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    _failed.clear()
    for module in BUILT_IN:
        importlib.import_module(module)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken third-party package must not hide the others
            logger.error("plugin entry point %s (%s) failed to load: %s", ep.name, ep.value, exc)
            _failed[ep.name] = f"importing {ep.value} raised {type(exc).__name__}: {exc}"
            continue
        if not (isinstance(obj, type) and issubclass(obj, Plugin)):
            logger.error("plugin entry point %s (%s) is not a Plugin subclass", ep.name, ep.value)
            _failed[ep.name] = f"{ep.value} is not a Plugin subclass"
            continue
        if obj.name != ep.name:
            logger.error("plugin entry point %s names class with name %r", ep.name, obj.name)
            _failed[ep.name] = f"{ep.value} is a plugin named {obj.name!r}, not {ep.name!r}"
            continue
        if ep.name in _registry and _registry[ep.name] is not obj:
            logger.error("plugin entry point %s clashes with a plugin of that name", ep.name)
            continue
        _registry[ep.name] = obj


def reload() -> None:
    """Forget what was discovered and look again (after installing a plugin, in tests)."""
    global _loaded
    _loaded = False
    _load()


def get(name: str) -> type[Plugin] | None:
    _load()
    return _registry.get(name)


def failure(name: str) -> str | None:
    """Why the installed entry point ``name`` gave no plugin; ``None`` when none failed."""
    _load()
    return _failed.get(name)


def names() -> list[str]:
    _load()
    return sorted(_registry)
