"""Optional features that must never stop the scheduler: when one fails, Caldera keeps serving
without it and says so loudly.

Caldera runs as a native sidecar of vc-scheduler: a Caldera that exits, or whose startup probe
never passes, keeps the scheduler itself from starting. So a debug or convenience feature that
cannot work (``serve --record`` into a directory it cannot write, ``explainEvents`` without a
kubeconfig, pdb's budgets from an API server it cannot reach) degrades instead: an ERROR line
when it fails (once, until it works again), ``caldera_feature_degraded{feature}`` at 1, and
``/readyz``'s ``features`` saying why since when. docs/operator-guide.md, "Optional features",
lists each with what its failure costs.

pdb is the one whose failure has a cost to the decisions: until its budgets are listed it
protects every pod (no victims), so the scheduler can run. ``/readyz`` waits for its first list
for :data:`STARTUP_GRACE_SECONDS` (the shipped startupProbe then holds vc-scheduler back, so
its first session has the budgets) and after that reports ``degraded`` with 200, so that an
unreachable API server does not keep the scheduler from ever starting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import Gauge

from plugins.api.base import Background, utc_now

logger = logging.getLogger("caldera.features")

RECORD = "record"
EVENTS = "explainEvents"
STARTUP_GRACE_SECONDS = 60.0
"""How long after the start a plugin data source that has not synced keeps ``/readyz`` at 503
(half the shipped startupProbe's two minutes); after it, ``degraded`` and 200."""
POLL_SECONDS = 1.0
"""How often the plugins' data sources are looked at for a failure (``watch_backgrounds``)."""


def background_feature(key: str) -> str:
    """The feature name of a plugin data source keyed ``tiers[t].plugins[i]:name``: ``pdb``
    (with its place when one configuration has two)."""
    where, _, name = key.partition(":")
    return f"{name} ({where})"


@dataclass(slots=True)
class Degraded:
    reason: str
    since: datetime


class Features:
    """Which optional features are degraded, and why; the gauge and the log follow."""

    def __init__(
        self,
        gauge: Gauge,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        grace: float = STARTUP_GRACE_SECONDS,
    ) -> None:
        self.gauge = gauge
        self.clock = clock
        self.monotonic = monotonic
        self.grace = grace
        self.started = monotonic()
        self.degraded: dict[str, Degraded] = {}
        self.background_features: set[str] = set()
        """The features that are plugin data sources (as of the last look)."""

    def enabled(self, feature: str) -> None:
        """``feature`` is on: its gauge series exists (0) from the start, for alerts."""
        if feature not in self.degraded:
            self.gauge.labels(feature).set(0)

    def failed(self, feature: str, reason: str, consequence: str = "") -> None:
        """``feature`` does not work: logged as an ERROR once (until it works again); the
        reason shown is the latest. May be called from any thread (the recorder's writer)."""
        state = self.degraded.get(feature)
        if state is not None:
            state.reason = reason
            return
        self.degraded[feature] = Degraded(reason, self.clock())
        self.gauge.labels(feature).set(1)
        logger.error(
            "%s does not work, Caldera keeps serving without it%s: %s",
            feature,
            f" ({consequence})" if consequence else "",
            reason,
        )

    def recovered(self, feature: str) -> None:
        if self.degraded.pop(feature, None) is not None:
            self.gauge.labels(feature).set(0)
            logger.info("%s works again", feature)

    def in_grace(self) -> bool:
        """Still within the start's grace for data sources to sync."""
        return self.monotonic() - self.started < self.grace

    def check_backgrounds(self, backgrounds: Mapping[str, Background]) -> None:
        """A plugin data source that has not synced and reports an error, or has not synced
        after the grace, is degraded (pdb's budgets: the API server unreachable, a kubeconfig
        missing); synced, it recovers.
        One that synced once keeps its last known set through later errors, as an informer
        does, and is not degraded."""
        seen = set()
        for key, background in backgrounds.items():
            feature = background_feature(key)
            seen.add(feature)
            error = background.describe().get("lastError")
            if not error and not self.in_grace():
                error = f"it has not synced within {self.grace:g} s of the start"
            if background.ready() or not error:
                if feature in self.degraded:
                    self.recovered(feature)
                else:
                    self.enabled(feature)
            else:
                self.failed(
                    feature,
                    str(error),
                    "until it syncs the plugin keeps every candidate: it allows no eviction",
                )
        for feature in self.background_features - seen:  # a live reload removed it
            self.recovered(feature)
            self.gauge.remove(feature)
        self.background_features = seen

    def describe(self) -> dict[str, Any]:
        """``/readyz``'s ``features``: each degraded feature, why and since when."""
        return {
            feature: {"degraded": True, "reason": state.reason, "since": state.since.isoformat()}
            for feature, state in self.degraded.items()
        }
