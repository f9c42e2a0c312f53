"""What a valid configuration may still get wrong, said before it is served: arguments the
plugins warn about or never read, and files a plugin will read that are not there. ``caldera
check-config`` prints them, ``caldera serve`` logs them at start, and a live reload logs them
when it takes a changed file (``app/server/config_watch.py``)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from app.cluster_state import multi_scheduler
from app.cluster_state.modes import SessionStateMode
from app.config import CalderaConfig, PluginEntry
from app.metrics import Metrics
from app.session import SessionManager
from plugins.api.base import Background, Session
from plugins.pdb.kube import default_config, kubeconfig_config
from schemas.requests import OnSessionOpenRequest


def build_problems(
    config: CalderaConfig, backgrounds: Mapping[tuple[int, int], Background] | None = None
) -> list[tuple[str, str]]:
    """Every plugin of ``config`` whose constructor, or whose session open on an empty snapshot,
    raises: (where it stands, what failed), one each. Such a configuration cannot serve
    (``caldera serve`` exits 2, ``check-config`` fails the file, a live reload rejects it),
    because every onSessionOpen would fail and Volcano would run its cycles without any of
    Caldera's plugins; a sessionless plugin's would fail the start itself.

    Each entry is built on its own, as the first onSessionOpen builds it (with its data source,
    when ``backgrounds`` has one), so that every failing plugin is named, not only the first."""
    problems: list[tuple[str, str]] = kubeconfig_problems(config)
    problems += multi_scheduler.problems(config.sessionState, os.environ)
    for entry in config.entries:
        ssn = Session(has_snapshot=True, release=config.release)
        background = (backgrounds or {}).get((entry.tier, entry.index))
        step = "building it"
        try:
            plugin = entry.cls(entry.arguments, background)
            step = "opening a session (on an empty snapshot)"
            plugin.on_session_open(ssn)
        except Exception as exc:
            problems.append(
                (entry.where, f"plugin {entry.name}: {step} raised {type(exc).__name__}: {exc}")
            )
    return problems


def kubeconfig_problems(config: CalderaConfig) -> list[tuple[str, str]]:
    """A ``sessionStateKubeconfig`` that is not there or does not parse, in compare or cluster
    mode: the watch would never list, so cluster mode could never open a session (/readyz
    503 for good) and compare mode never compare. Named with the setting, as an error."""
    path = config.sessionStateKubeconfig
    if config.sessionState == SessionStateMode.SNAPSHOT or not path:
        return []
    if not Path(path).is_file():
        return [
            (
                "sessionStateKubeconfig",
                f"{path}: no such file here: the cluster could not be"
                f" watched, and sessionState {config.sessionState} never gets a state",
            )
        ]
    try:
        kubeconfig_config(path).release()
    except Exception as exc:
        return [("sessionStateKubeconfig", f"{path}: does not parse as a kubeconfig: {exc}")]
    return []


def kubeconfig_warnings(config: CalderaConfig) -> list[str]:
    """No ``sessionStateKubeconfig`` and no cluster this machine would reach by default (not in
    a pod, no $KUBECONFIG, no ~/.kube/config): fine for a file checked on a workstation and
    served in a pod, whose service account is used there; said so it is not a surprise."""
    if config.sessionState == SessionStateMode.SNAPSHOT or config.sessionStateKubeconfig:
        return []
    try:
        default_config(setting="sessionStateKubeconfig").release()
    except Exception as exc:
        return [
            f"sessionStateKubeconfig is unset and {exc}: in a pod the service account is used,"
            " here nothing would be watched"
        ]
    return []


def argument_warnings(config: CalderaConfig) -> list[str]:
    """Every problem of a valid configuration, all at once: what the plugins warn about their
    arguments (each built, and a session opened on an empty snapshot, as some read theirs
    there), the files they will read that are missing, the arguments no plugin reads, and a
    configuration that hosts no plugin at all."""
    return (
        plugin_warnings(config)
        + path_problems(config)
        + kubeconfig_warnings(config)
        + multi_scheduler.warnings(config.sessionState, os.environ)
        + unread_arguments(config)
        + ([NO_PLUGIN] if not config.entries else [])
    )


NO_PLUGIN = (
    "no plugin is configured (an empty file, or empty tiers): Caldera answers every verb"
    " neutrally, as if Volcano had no extender; list plugins under tiers"
)


def plugin_warnings(config: CalderaConfig) -> list[str]:
    """Build each plugin and open a session on an empty snapshot, so that every argument
    getter runs and reports what Volcano would warn about (each logged once as it is met)."""
    # A plugin that cannot be built or opened is an error (build_problems); what it read
    # before failing still counts here.
    for entry in config.entries:
        with contextlib.suppress(Exception):
            entry.cls(entry.arguments, None)
    with contextlib.suppress(Exception):
        SessionManager(config, Metrics()).open(OnSessionOpenRequest())
    return [
        shaped(entry, problem, entry.arguments.warning_keys.get(problem))
        for entry in config.entries
        for problem in entry.arguments.warnings
    ]


def shaped(entry: PluginEntry, problem: str, key: str | None) -> str:
    """Every warning in one shape: ``plugin NAME (KEY PATH = VALUE AS WRITTEN): problem``, the
    plugin's own prefix (``sla: ``, ``plugin overcommit: ``) taken off the problem."""
    problem = re.sub(rf"^(plugin )?{re.escape(entry.name)}: ", "", problem)
    if key is None:
        return f"plugin {entry.name} ({entry.where}.arguments): {problem}"
    path = f"{entry.where}.arguments.{key}"
    if key in entry.option.arguments:
        path += f" = {entry.option.arguments[key]!r}"
    return f"plugin {entry.name} ({path}): {problem}"


def path_problems(config: CalderaConfig) -> list[str]:
    """Every file Caldera will read that does not exist here: a plugin's (pdb's budgets or
    kubeconfig: the plugin would never sync and /readyz would stay 503), and the kubeconfig
    PodGroup Events are sent with (none would ever be sent)."""
    problems = [
        shaped(entry, problem, key)
        for entry in config.entries
        for key, problem in entry.cls.path_problems(entry.arguments).items()
    ]
    kubeconfig = config.explainEventsKubeconfig
    if config.explainEvents and kubeconfig and not Path(kubeconfig).is_file():
        problems.append(
            f"explainEventsKubeconfig: {kubeconfig}: no such file here: no PodGroup Event"
            " would be sent (explainEvents is on)"
        )
    return problems


def unread_arguments(config: CalderaConfig) -> list[str]:
    """One warning per ``arguments`` key no plugin reads: a typo (``sla-waiting-tme``) that
    would quietly leave the default in force, or an argument this release's plugin lacks.
    Volcano ignores both silently; Caldera says so at check-config and at serve start."""
    plugin_warnings(config)
    return [
        shaped(
            entry,
            f"not read by this plugin on Volcano {config.release} (a typo? Volcano ignores it"
            " too, and the default stays)",
            key,
        )
        for entry in config.entries
        for key in entry.arguments.unread()
    ]


def log_problems(config: CalderaConfig, log: logging.Logger) -> None:
    """What ``caldera serve`` logs at start, and a live reload when it takes a changed file:
    the plugins' argument problems (logged by the plugins as they are built, once each), a
    missing file as an ERROR (the plugin would never sync), the rest as WARNINGs."""
    plugin_warnings(config)
    for problem in path_problems(config):
        log.error("%s", problem)
    for warning in (
        multi_scheduler.warnings(config.sessionState, os.environ)
        + unread_arguments(config)
        + ([NO_PLUGIN] if not config.entries else [])
    ):
        log.warning("%s", warning)
