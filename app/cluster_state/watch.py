"""The running watch of the six collections: the store, one reflector per collection, and
their start, stop and status; and :class:`WatchBackedState`, what compare mode and cluster mode
share around it (each owns one watch)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from app.cluster_state.derive import Settings
from app.cluster_state.modes import SessionStateMode
from app.cluster_state.staleness import DEFAULT_MAX_STALENESS, Staleness
from app.cluster_state.store import ClusterStore
from app.session_events import SessionListener
from plugins.pdb.kube import ClusterConfig, Reflector, named_or_default_config
from schemas.api import TaskInfo

WatchErrors = Callable[[str, str], None]
"""Told (collection, kind) of each failure of a watch: ``caldera_session_state_watch_errors``."""


class ClusterWatch:
    def __init__(
        self,
        settings: Settings,
        kubeconfig: str | None = None,
        on_error: WatchErrors | None = None,
    ) -> None:
        self.store = ClusterStore(settings)
        self._kubeconfig = kubeconfig
        self._on_error = on_error
        self.reflectors: list[Reflector[Any]] = []
        self._tasks: list[asyncio.Task[None]] = []

    def _load_config(self) -> ClusterConfig:
        return named_or_default_config(self._kubeconfig, setting="sessionStateKubeconfig")

    async def start(self) -> None:
        self.reflectors = self.store.reflectors(self._load_config, self._on_error)
        self._tasks = [asyncio.create_task(r.run(), name=r.name) for r in self.reflectors]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    @property
    def synced(self) -> bool:
        """Every collection listed once (a reflector stays synced through relists: its store
        keeps the last known set)."""
        return bool(self.reflectors) and all(r.status.synced for r in self.reflectors)

    def describe(self) -> dict[str, Any]:
        """Each collection's watch, for /debug/session and /readyz."""
        return {
            r.name: {
                "synced": r.status.synced,
                "resourceVersion": r.status.resource_version,
                "lists": r.status.lists,
                "lastError": r.status.last_error,
                "errorsInARow": r.status.errors_in_a_row,
                "errors": dict(r.status.errors),
            }
            for r in self.reflectors
        }


class WatchBackedState(SessionListener):
    """The base of ``sessionState: cluster`` and ``compare``: the watch, the placements Volcano
    reports (allocate/deallocate, until onSessionClose) fed to its store's overlay, and the
    watch's part of ``/debug/session``."""

    mode: SessionStateMode
    """``sessionState``'s value, shown in ``/debug/session``."""

    def __init__(
        self,
        settings: Settings,
        kubeconfig: str | None = None,
        max_staleness: float = DEFAULT_MAX_STALENESS,
        on_error: WatchErrors | None = None,
        divergence: Callable[[], str | None] | None = None,
    ) -> None:
        self.watch = ClusterWatch(settings, kubeconfig, on_error)
        self.store = self.watch.store
        self.staleness = Staleness(
            lambda: self.watch.reflectors, max_staleness, kubeconfig, divergence
        )
        """Whether a watch has been broken past ``sessionStateMaxStaleness`` (or, in cluster
        mode, the self-audit found the derived state diverging: ``divergence``)."""

    async def start(self) -> None:
        await self.watch.start()

    async def stop(self) -> None:
        await self.watch.stop()

    @property
    def synced(self) -> bool:
        return self.watch.synced

    # --- what it hears of the sessions (app/session_events.py) ---------------------------------

    def allocated(self, task: TaskInfo) -> None:
        self.store.allocate(task)

    def deallocated(self, task: TaskInfo) -> None:
        self.store.deallocate(task)

    def closed(self) -> None:
        self.store.close_session()

    def describe_watch(self) -> dict[str, Any]:
        """The start of the mode's /debug/session section: the mode, the watch, the store's
        sizes and the overlay."""
        return {
            "mode": self.mode,
            "synced": self.watch.synced,
            **self.staleness.describe(),
            "objects": self.store.sizes(),
            "watches": self.watch.describe(),
            "placementsNotYetSeen": len(self.store.overlay),
            "placementsExpired": self.store.overlay.expired,
            "multiScheduler": (
                multi.describe() if (multi := self.store.settings.multi_scheduler) else None
            ),
        }
