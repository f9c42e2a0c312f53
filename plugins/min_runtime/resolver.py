"""KAI-Scheduler's min-runtime ``resolver.go`` (kai-scheduler/KAI-Scheduler at d5bc503a,
``pkg/scheduler/plugins/minruntime/resolver.go``) over Volcano queues: a queue's own
preempt-/reclaim-min-runtime from its annotations, and the walks through the queue tree that
resolve the duration protecting a victim, cached for one session. ``plugins/min_runtime/min_runtime.py`` is
the plugin; its docstring states the semantics and the deliberate differences from KAI."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from plugins.api import warn_once
from plugins.support.queues import ROOT, QueueTree
from schemas.api import QueueInfo
from schemas.goduration import DurationError, parse_go_duration

logger = logging.getLogger("caldera.plugins.min_runtime")

RESOLVE_LCA = "lca"
RESOLVE_QUEUE = "queue"
RESOLVE_METHODS = (RESOLVE_LCA, RESOLVE_QUEUE)

PREEMPT_MIN_RUNTIME = "preempt-min-runtime"
RECLAIM_MIN_RUNTIME = "reclaim-min-runtime"
"""The Queue annotation keys by default (Volcano Queues have no min-runtime fields)."""


@dataclass(frozen=True, slots=True)
class QueueMinRuntimes:
    """A queue's own settings in nanoseconds; None means unset (inherit)."""

    preempt: int | None = None
    reclaim: int | None = None


NO_SETTINGS = QueueMinRuntimes()


def _annotation_duration(info: QueueInfo, key: str) -> int | None:
    queue = info.Queue
    annotations = queue.metadata.annotations if queue is not None else None
    if not annotations or key not in annotations:
        return None
    value = annotations[key]
    try:
        return parse_go_duration(value)
    except DurationError as exc:
        warn_once(
            logger,
            f"min-runtime: queue {info.Name}: annotation {key}={value!r} is not a duration"
            f" ({exc}); treated as unset",
        )
        return None


Resolution = tuple[int, str | None]
"""``(nanoseconds, error)``: KAI's ``(metav1.Duration, error)``; on error the value is the
default."""


class Resolver:
    """KAI's ``resolver``: min-runtimes through the queue tree, cached for one session.

    Queues are named as in ``ssn.queues``. A name the snapshot does not hold is a queue with no
    settings whose parent is unknown (KAI's resolver given a queue missing from its map);
    ``None`` is KAI's nil queue: the default, with an error.
    """

    def __init__(
        self,
        queues: Mapping[str, QueueInfo],
        default_preempt: int,
        default_reclaim: int,
        preempt_annotation: str = PREEMPT_MIN_RUNTIME,
        reclaim_annotation: str = RECLAIM_MIN_RUNTIME,
    ) -> None:
        self._queues = queues
        self._tree = QueueTree(queues)
        self.default_preempt = default_preempt
        self.default_reclaim = default_reclaim
        self._preempt_annotation = preempt_annotation
        self._reclaim_annotation = reclaim_annotation
        self._settings: dict[str, QueueMinRuntimes] = {}
        self._paths: dict[str, tuple[str, ...]] = {}
        self._preempt_cache: dict[str, int] = {}
        self._reclaim_cache: dict[tuple[str, str], int] = {}

    def settings(self, queue: str) -> QueueMinRuntimes:
        cached = self._settings.get(queue)
        if cached is None:
            info = self._queues.get(queue)
            if info is None:
                cached = NO_SETTINGS
            else:
                cached = QueueMinRuntimes(
                    preempt=_annotation_duration(info, self._preempt_annotation),
                    reclaim=_annotation_duration(info, self._reclaim_annotation),
                )
            self._settings[queue] = cached
        return cached

    def hierarchy_path(self, queue: str) -> tuple[str, ...]:
        """KAI's ``getQueueHierarchyPath``: the top-level queue first, ``queue`` last. The path
        climbs only through queues the snapshot holds (a missing parent makes the queue below it
        top-level) and never includes ``root``, KAI's implicit shadow root."""
        cached = self._paths.get(queue)
        if cached is None:
            path = [queue]
            for name in self._tree.ancestors(queue)[1:]:
                if name == ROOT or name not in self._queues:
                    break
                path.append(name)
            cached = tuple(reversed(path))
            self._paths[queue] = cached
        return cached

    def _walk_up(self, path: Sequence[str], start: int, preempt: bool) -> int:
        """The first setting from ``path[start]`` up to the top-level queue, then ``root``'s,
        then the default."""
        for name in (*path[start::-1], ROOT):
            own = self.settings(name)
            value = own.preempt if preempt else own.reclaim
            if value is not None:
                return value
        return self.default_preempt if preempt else self.default_reclaim

    def preempt_min_runtime(self, queue: str | None) -> Resolution:
        """``getPreemptMinRuntime``: walk up from the victim's queue."""
        if queue is None:
            return self.default_preempt, "queue is nil"
        cached = self._preempt_cache.get(queue)
        if cached is None:
            path = self.hierarchy_path(queue)
            cached = self._walk_up(path, len(path) - 1, preempt=True)
            self._preempt_cache[queue] = cached
        return cached, None

    def reclaim_min_runtime(
        self, method: str, preemptor_queue: str | None, victim_queue: str | None
    ) -> Resolution:
        """``getReclaimMinRuntime``: by LCA (``lca``) or walking up from the victim (``queue``)."""
        if preemptor_queue is None:
            return self.default_reclaim, "preemptorQueue is nil"
        if victim_queue is None:
            return self.default_reclaim, "preempteeQueue is nil"
        key = (preemptor_queue, victim_queue)
        cached = self._reclaim_cache.get(key)
        if cached is None:
            if method == RESOLVE_LCA:
                cached = self.reclaim_lca(preemptor_queue, victim_queue)
            else:
                cached = self.reclaim_walk_up(victim_queue)
            self._reclaim_cache[key] = cached
        return cached, None

    def reclaim_walk_up(self, victim_queue: str) -> int:
        """``resolveReclaimMinRuntimeQueue``."""
        path = self.hierarchy_path(victim_queue)
        return self._walk_up(path, len(path) - 1, preempt=False)

    def reclaim_lca(self, preemptor_queue: str, victim_queue: str) -> int:
        """``resolveReclaimMinRuntimeLCA``: one step below the lowest common ancestor towards
        the victim, then up. Different top-level queues meet at the shadow root, so the step
        lands on the victim's top-level queue."""
        preemptor_path = self.hierarchy_path(preemptor_queue)
        victim_path = self.hierarchy_path(victim_queue)
        if preemptor_path[0] != victim_path[0]:
            return self._walk_up(victim_path, 0, preempt=False)
        lca = 0
        for index in range(min(len(preemptor_path), len(victim_path))):
            if preemptor_path[index] != victim_path[index]:
                break
            lca = index
        start = lca + 1 if lca + 1 < len(victim_path) else lca
        return self._walk_up(victim_path, start, preempt=False)
