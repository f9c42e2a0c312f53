"""Sessions: one scheduling cycle, from onSessionOpen to onSessionClose.

onSessionOpen replaces the snapshot whole and builds fresh plugin instances from the
configuration, opening each in tier order, as Volcano's ``OpenSession`` does every cycle. A verb
keeps the session it started with even if a new one opens meanwhile. Verbs that arrive with no
open session are answered by the "sessionless" set: the plugins that do not need a snapshot,
built once; the others abstain (or pass), and a counter records it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from app.config import CalderaConfig
from app.errors import PluginFailure
from app.events import PodGroupEvents
from app.explain import DecisionRecord
from app.framework import Framework, Slot
from app.metrics import Metrics
from app.plugin_faults import Fault, FaultKind, OnError, PluginFaults
from plugins.api.arguments import warn_once
from plugins.api.base import Background, Session, utc_now
from plugins.api.extension_points import Verb
from plugins.api.release import Release
from plugins.support.resources import total_allocatable
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.session")


@dataclass(slots=True)
class SessionNumbers:
    """The number of the last session opened, for the life of the process. A live reload or a
    promoted shadow builds a new :class:`SessionManager` (app/server/runtime.py, ``switch``), so a count
    kept in each manager started again at 1, and ``caldera explain`` and ``/debug/session``
    showed two sessions numbered 1: every manager of a process is handed the same one."""

    last: int = 0


@dataclass(slots=True)
class OpenSession:
    """An open session: its snapshot (seen by plugins through ``ssn``) and its framework."""

    number: int
    ssn: Session
    framework: Framework
    opened_monotonic: float = field(default_factory=time.monotonic)
    opened_at: datetime = field(default_factory=utc_now)

    def age(self) -> float:
        return time.monotonic() - self.opened_monotonic

    def describe(self) -> dict[str, object]:
        """What /debug/session shows: counts and plugin names, never object contents."""
        return {
            "session": self.number,
            "openedAt": self.opened_at.isoformat(),
            "ageSeconds": round(self.age(), 3),
            "snapshot": {
                "jobs": len(self.ssn.jobs),
                "nodes": len(self.ssn.nodes),
                "queues": len(self.ssn.queues),
                "namespaces": len(self.ssn.namespace_info),
                "tasks": sum(len(job.Tasks or ()) for job in self.ssn.jobs.values()),
            },
            "activePlugins": self.framework.active_plugins(),
        }


SNAPSHOT_PARTS = {
    "jobs": "jobs",
    "nodes": "nodes",
    "queues": "queues",
    "namespaces": "namespace_info",
}
"""The ``kind`` label of ``caldera_snapshot_objects`` and the Session mapping it counts."""


class SessionManager:
    """Builds sessions from the configuration and holds the open one."""

    def __init__(
        self,
        config: CalderaConfig,
        metrics: Metrics,
        backgrounds: Mapping[tuple[int, int], Background] | None = None,
        clock: Callable[[], datetime] = utc_now,
        record: DecisionRecord | None = None,
        events: PodGroupEvents | None = None,
        faults: PluginFaults | None = None,
        numbers: SessionNumbers | None = None,
    ) -> None:
        self.config = config
        self.faults = faults if faults is not None else PluginFaults(metrics, clock)
        """Every plugin's faults (kept across sessions and configuration switches)."""
        self.counts_open_failures = faults is not None
        """Whether a plugin that cannot be built or opened is counted in ``faults``: the
        server's managers are given theirs; the ones check-config and volcano-config build to
        look at a configuration report such a plugin themselves (app/config_checks.py)."""
        self.metrics = metrics
        self.record = record
        self.events = events
        """PodGroup Events on verdict changes (``explainEvents``), kept across switches too."""
        """Where sessions log their decisions (kept across configuration switches)."""
        self.backgrounds = dict(backgrounds or {})
        self.clock = clock
        self.release = config.release
        """The release sessions are built for: the configured one, or the inferred one."""
        self.current: OpenSession | None = None
        self.numbers = numbers if numbers is not None else SessionNumbers()
        # One labelled child per snapshot part, looked up once: labels() takes a lock and
        # validates the values, a tenth of onSessionClose's time over HTTP.
        self._snapshot_size = {kind: metrics.snapshot_size.labels(kind) for kind in SNAPSHOT_PARTS}
        self.without_snapshot = self._build_without_snapshot()

    def _build_without_snapshot(self) -> Framework:
        ssn = Session(release=self.release, now=self.clock, clamped=self._clamped)
        return self._build(ssn, snapshot=False)

    def set_release(self, release: Release) -> None:
        """Build the next sessions for ``release`` (``volcanoVersion: auto``)."""
        if release != self.release:
            self.release = release
            self.without_snapshot = self._build_without_snapshot()

    def _clamped(self, plugin: str, resource: str) -> None:
        warn_once(
            logger,
            f"plugin {plugin}: its {resource} accounting would have gone negative and was"
            " floored at zero (an allocate/deallocate whose other half Caldera never saw)",
        )
        self.metrics.clamped.labels(plugin, resource).inc()

    def _build(self, ssn: Session, snapshot: bool, number: int = 0) -> Framework:
        """Fresh plugin instances for every tier entry, opened in tier order (skipping the
        snapshot-bound ones when there is no snapshot)."""
        tiers: list[list[Slot]] = [[] for _ in self.config.tiers]
        for entry in self.config.entries:
            if entry.cls.needs_snapshot and not snapshot:
                continue
            kind = FaultKind.BUILD
            try:
                plugin = entry.cls(entry.arguments, self.backgrounds.get((entry.tier, entry.index)))
                kind = FaultKind.RAISED
                plugin.on_session_open(ssn)
            except Exception as exc:
                failure = PluginFailure(entry.name, Verb.ON_SESSION_OPEN, exc)
                if self.counts_open_failures:
                    self._open_failed(
                        entry.name, OnError(entry.option.onError or entry.cls.on_error), kind, exc
                    )
                    failure.logged = True
                raise failure from exc
            # Asked after opening: some plugins register hooks per Volcano release.
            tiers[entry.tier].append(Slot(entry.option, plugin, plugin.hooks()))
        log = (
            self.record.open(number, self.clock()) if snapshot and self.record is not None else None
        )
        return Framework(
            tiers, self.release, self.metrics, log, self.clock, self.events if snapshot else None,
            self.faults, sessionless=not snapshot,
        )  # fmt: skip

    def _open_failed(self, plugin: str, policy: OnError, kind: FaultKind, exc: Exception) -> None:
        """Count, log and show in ``/readyz`` a plugin that could not be built or opened. What
        follows is the caller's: a configuration just switched to gives way to the one served
        before it (app/server/config_watch.py), otherwise onSessionOpen is answered with the
        error."""
        step = "building it" if kind is FaultKind.BUILD else "opening the session"
        fault = Fault(
            plugin, Verb.ON_SESSION_OPEN, kind, f"{step} raised {type(exc).__name__}: {exc}", policy,
            dropped=False, failed=True, at=self.clock(),
            outcome="no session was opened with its configuration",
        )  # fmt: skip
        self.faults.record(fault, exc)

    def open(self, request: OnSessionOpenRequest) -> OpenSession:
        """Replace the open session with one built from ``request``."""
        nodes = request.Nodes or {}
        ssn = Session(
            jobs=request.Jobs or {},
            nodes=nodes,
            queues=request.Queues or {},
            namespace_info=request.NamespaceInfo or {},
            total_resource=total_allocatable(nodes),
            has_snapshot=True,
            release=self.release,
            now=self.clock,
            clamped=self._clamped,
        )
        previous, self.current = self.current, None
        if previous is not None:
            previous.framework.close()
        number = self.numbers.last + 1  # taken once the session is built: no gap on failure
        framework = self._build(ssn, snapshot=True, number=number)
        self.numbers.last = number
        self.current = OpenSession(number, ssn, framework)
        self.metrics.sessions_opened.inc()
        for kind, part in SNAPSHOT_PARTS.items():
            self._snapshot_size[kind].set(len(getattr(ssn, part)))
        return self.current

    def close(self) -> None:
        current, self.current = self.current, None
        if current is not None:
            current.framework.close()
        for gauge in self._snapshot_size.values():
            gauge.set(0)

    def framework(self) -> tuple[Framework, bool]:
        """The framework a verb should use now, and whether a session is open."""
        current = self.current
        if current is None:
            return self.without_snapshot, False
        return current.framework, True
