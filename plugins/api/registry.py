"""Plugin registry: names to plugin classes (Volcano's ``framework.RegisterPluginBuilder``).

Built-in plugins register with :func:`register` when their module is imported; third-party
plugins arrive through the ``caldera.plugins`` entry-point group, so an operator adds one with
``pip install``. An entry point's name is the plugin name and its object a :class:`Plugin`
subclass.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from importlib.metadata import entry_points
from typing import TypeVar

from plugins.api.base import Plugin

logger = logging.getLogger("caldera.plugins")

ENTRY_POINT_GROUP = "caldera.plugins"
PLUGIN_PACKAGE = "plugins"
"""Every plain module directly in this package is a plugin module, imported on first lookup so
it registers what it defines. Subpackages are not: ``plugins.api`` is the plugin API and
``plugins.support`` the helpers several plugins share, so no list of exceptions is kept."""

_registry: dict[str, type[Plugin]] = {}
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
    package = importlib.import_module(PLUGIN_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        if not module.ispkg and not module.name.startswith("_"):
            importlib.import_module(f"{PLUGIN_PACKAGE}.{module.name}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken third-party package must not hide the others
            logger.error("plugin entry point %s (%s) failed to load: %s", ep.name, ep.value, exc)
            continue
        if not (isinstance(obj, type) and issubclass(obj, Plugin)):
            logger.error("plugin entry point %s (%s) is not a Plugin subclass", ep.name, ep.value)
            continue
        if obj.name != ep.name:
            logger.error("plugin entry point %s names class with name %r", ep.name, obj.name)
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


def names() -> list[str]:
    _load()
    return sorted(_registry)
