"""When cluster mode's own view of the cluster is wrong: staleness, and what is answered then.

With ``sessionState: cluster`` Caldera decides from its own watch of the API server, not from
what Volcano sends, so the dangerous case is Caldera's view alone going wrong while Volcano's is
right (its connection cut, an RBAC change): it would then admit or hold jobs in-tree would not,
and nobody could tell. So each collection's watch says whether it is **broken**: its list, its
watch or the probe after a failure keeps failing (``ReflectorStatus.failing_since``,
plugins/pdb/kube.py). A quiet watch is not a broken one: a healthy collection can go minutes
without an event. The view is **stale** when any watch has been broken for longer than
``sessionStateMaxStaleness`` (:data:`DEFAULT_MAX_STALENESS`).

While stale, ``/readyz`` answers 503 naming the collections, ``caldera_session_state_stale`` is
1 (alert ``CalderaSessionStateStale``), and each session opened on the stale view is answered as
``onStaleState`` says (:class:`OnStaleState`). The default, ``hold``, answers each verb with
the one answer that can neither admit, place nor evict (:func:`held_answer`), whatever
``extender.ignorable`` says; docs/operator-guide.md has the table, verb by verb, with what
Volcano does with an error and with a neutral answer (pkg/scheduler/plugins/extender/
extender.go, ../shared/reference/volcano-extender-protocol.md section 1.4).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from app.wire import encode_predicate
from plugins.api.base import FitError, Vote
from plugins.api.extension_points import ExtensionPoint, Rule
from plugins.api.release import Release
from plugins.pdb.kube import Reflector
from schemas.responses import (
    EvictResponse,
    JobEnqueueableResponse,
    JobReadyResponse,
    QueueOverusedResponse,
)

logger = logging.getLogger("caldera.session_state")

DEFAULT_MAX_STALENESS = 30.0
"""Seconds a watch may stay broken before the view is stale. A blip (an API server restarting,
a leader moving, one replica of several rolling) is retried 5-6 times within it (the backoff
doubles from 0.5 s to its 30 s cap) and heals without a word; past it, 30 of Volcano's default
1 s cycles would have been decided on a view that no longer moves, and the pods, nodes and
queues that changed meanwhile are exactly those the next decisions are about."""


class OnStaleState(enum.StrEnum):
    """``onStaleState``: what a session opened on a stale view answers."""

    HOLD = "hold"
    """Each verb's fail-safe answer (:func:`held_answer`): nothing admitted, placed or evicted."""
    ANSWER = "answer"
    """As always, from the last view (for an operator who prefers the stale view to a
    standstill; the metric and ``/readyz`` still say it)."""
    FAIL = "fail"
    """A 503 JSON error naming the stale collections; Volcano then applies
    ``extender.ignorable`` (not fail-safe for every verb: the guide's table)."""


_encode = msgspec.json.encode
_HELD: dict[Rule, bytes] = {
    Rule.VICTIMS: _encode(EvictResponse(status=int(Vote.PERMIT), victims=[])),
    Rule.VOTE: _encode(JobEnqueueableResponse(status=int(Vote.REJECT))),
    Rule.ANY_TRUE: _encode(QueueOverusedResponse(overused=True)),
    Rule.ALL_TRUE: _encode(JobReadyResponse(status=False)),
}
"""The held answer of the rules whose neutral answer could admit, place or evict (the
predicate's, whose shape depends on the release, is built by :func:`held_answer`). A Permit
with no victims ends the extender's tier with none; Reject keeps the job out of the queue; an
overused queue is skipped; a job not ready is not committed."""
_NEUTRAL_HELD = frozenset({Rule.SCORE_SUM, Rule.NOTIFY})
"""The rules held with the extension-point table's own neutral answer: no score moves nothing,
a notice changes nothing. Not held at all: the session's open and close, and allocate /
deallocate, which only report what Volcano did and keep the view's placements current."""


def held_answer(point: ExtensionPoint, release: Release, why: str) -> bytes | None:
    """The answer that can neither admit, place nor evict, for ``point``; None when the verb is
    answered as usual even on a stale view."""
    if point.rule is Rule.FIRST_FAILURE:
        return encode_predicate(release, FitError(why))  # unresolvable: not even by preemption
    if point.rule in _NEUTRAL_HELD:
        return point.neutral
    return _HELD.get(point.rule)


@dataclass(frozen=True, slots=True)
class BrokenWatch:
    collection: str
    seconds: float
    """How long its list, watch or probe has kept failing."""
    errors_in_a_row: int
    last_error: str | None

    def describe(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "brokenSeconds": round(self.seconds, 1),
            "errorsInARow": self.errors_in_a_row,
            "lastError": self.last_error,
        }


class Staleness:
    """Whether the view is stale now, and the log lines when that changes."""

    def __init__(
        self,
        reflectors: Callable[[], Sequence[Reflector[Any]]],
        limit: float,
        kubeconfig: str | None,
        divergence: Callable[[], str | None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reflectors = reflectors
        self.limit = limit
        self.kubeconfig = kubeconfig
        self._monotonic = monotonic
        self._was_stale = False
        self._divergence = divergence
        """Why the self-audit holds the view wrong although every watch works
        (cluster mode's ``SelfAudit.divergence``, app/cluster_state/audit.py), or None."""

    def broken(self) -> list[BrokenWatch]:
        """Every watch failing now, however briefly."""
        now = self._monotonic()
        return [
            BrokenWatch(r.name, now - since, r.status.errors_in_a_row, r.status.last_error)
            for r in self._reflectors()
            if (since := r.status.failing_since) is not None
        ]

    def stale(self) -> list[str]:
        """Why the view is stale: the watches broken past the limit, and a divergence the
        self-audit found (empty: the view is current). Logs each change."""
        over = [watch for watch in self.broken() if watch.seconds >= self.limit]
        reasons = [self.reason(over)] if over else []
        diverged = self._divergence() if self._divergence is not None else None
        if diverged is not None:
            reasons.append(f"the cluster view is stale: {diverged}")
        if bool(reasons) != self._was_stale:
            self._was_stale = bool(reasons)
            if reasons:
                logger.error("%s", "; ".join(reasons))
            else:
                logger.warning("the cluster view is current again: every watch works")
        return reasons

    def server(self) -> str:
        """The API server the watches reach, and the setting that chose it."""
        address = next((r.config.server for r in self._reflectors() if r.config is not None), None)
        source = (
            f"sessionStateKubeconfig {self.kubeconfig}"
            if self.kubeconfig
            else "sessionStateKubeconfig unset: the pod's service account"
        )
        return f"{address or 'an API server not reached yet'} ({source})"

    def reason(self, over: Sequence[BrokenWatch]) -> str:
        """One line saying what is stale, since when and why: for the log, /readyz, a 503."""
        parts = ", ".join(
            f"{w.collection} for {w.seconds:.0f} s ({w.errors_in_a_row} errors in a row,"
            f" last: {w.last_error})"
            for w in over
        )
        return (
            f"the cluster view is stale: watches of {self.server()} failing past"
            f" sessionStateMaxStaleness {self.limit:g}s: {parts}"
        )

    def describe(self) -> dict[str, Any]:
        reasons = self.stale()
        return {
            "stale": bool(reasons),
            "maxStalenessSeconds": self.limit,
            "brokenWatches": [watch.describe() for watch in self.broken()],
            **({"reason": "; ".join(reasons)} if reasons else {}),
        }
