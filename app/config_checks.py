"""What a valid configuration may still get wrong, said before it is served: arguments the
plugins warn about or never read, and files a plugin will read that are not there. ``caldera
check-config`` prints them, ``caldera serve`` logs them at start, and a live reload logs them
when it takes a changed file (``app/config_watch.py``)."""

from __future__ import annotations

import contextlib

from app.config import CalderaConfig
from app.session import SessionManager
from schemas.requests import OnSessionOpenRequest


def argument_warnings(config: CalderaConfig) -> list[str]:
    """Build each plugin once so the argument getters report what Volcano would warn about,
    then name every argument no plugin read (after a session opened on an empty snapshot, as
    some plugins read theirs there)."""
    warnings: list[str] = []
    for entry in config.entries:
        try:
            entry.cls(entry.arguments, None)
        except Exception as exc:
            warnings.append(f"plugin {entry.name}: building it failed: {exc}")
        warnings.extend(entry.arguments.warnings)
    return warnings + path_problems(config) + unread_arguments(config)


def path_problems(config: CalderaConfig) -> list[str]:
    """Every file a plugin will read that does not exist here (pdb's budgets or kubeconfig):
    the plugin would never sync and /readyz would stay 503."""
    return [
        f"plugin {entry.name} ({entry.where}.arguments.{key}): {problem}"
        for entry in config.entries
        for key, problem in entry.cls.path_problems(entry.arguments).items()
    ]


def unread_arguments(config: CalderaConfig) -> list[str]:
    """One warning per ``arguments`` key no plugin reads: a typo (``sla-waiting-tme``) that
    would quietly leave the default in force, or an argument this release's plugin lacks.
    Volcano ignores both silently; Caldera says so at check-config and at serve start."""
    # A plugin that cannot open on an empty snapshot: what it read before failing still counts.
    with contextlib.suppress(Exception):
        SessionManager(config).open(OnSessionOpenRequest())
    return [
        f"plugin {entry.name} ({entry.where}): argument {key!r} is not read by this plugin on"
        f" Volcano {config.release} (a typo? Volcano ignores it too, and the default stays)"
        for entry in config.entries
        for key in entry.arguments.unread()
    ]
