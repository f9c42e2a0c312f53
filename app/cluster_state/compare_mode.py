"""Compare mode at run time: the watch, one comparison per session, and what it reports.

At each onSessionOpen the store is frozen (O(1)) and the derivation and comparison run in a
worker thread, off the verb's path, so Volcano's cycle does not wait for them; at most one runs
at a time (a session opened while the previous comparison still runs is counted as skipped).
Each comparison's differences are counted per kind in
``caldera_session_state_differences_total{kind}``, logged one line per kind, and the last one is
shown in ``/debug/session``. Values shown or logged are numbers only: a string of a pod or node
(an annotation, a label) can hold a secret, and is reported as "differs".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from app.cluster_state.compare import Difference, compare, counts_by_kind
from app.cluster_state.derive import Settings
from app.cluster_state.incremental import IncrementalDerivation
from app.cluster_state.modes import SessionStateMode
from app.cluster_state.objects import ClusterObjects
from app.cluster_state.overlay import Placement
from app.cluster_state.staleness import DEFAULT_MAX_STALENESS
from app.cluster_state.watch import WatchBackedState, WatchErrors
from app.session_events import Opened
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.session_state")

SHOWN_DIFFERENCES = 20
"""Differences listed in /debug/session (all are counted)."""


def shown(value: Any) -> Any:
    """A value fit for a log line or /debug/session: numbers, booleans and absence as they
    are, anything else only as "differs"."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return "differs" if value != "present" else "present"


def _public(difference: Difference) -> dict[str, Any]:
    return {
        "kind": difference.kind,
        "object": difference.object,
        "path": difference.path,
        "sent": shown(difference.sent),
        "derived": shown(difference.derived),
        "inFlight": difference.in_flight,
    }


class SessionStateComparison(WatchBackedState):
    """``sessionState: compare``: owns the store, its reflectors and the comparisons."""

    mode = SessionStateMode.COMPARE

    def __init__(
        self,
        settings: Settings,
        kubeconfig: str | None = None,
        count: Callable[[str, int], None] | None = None,
        outcome: Callable[[str], None] | None = None,
        count_in_flight: Callable[[str, int], None] | None = None,
        max_staleness: float = DEFAULT_MAX_STALENESS,
        on_error: WatchErrors | None = None,
    ) -> None:
        super().__init__(settings, kubeconfig, max_staleness, on_error)
        self._count = count
        """Adds to ``caldera_session_state_differences_total{kind}``."""
        self._count_in_flight = count_in_flight
        """Adds to ``caldera_session_state_differences_in_flight_total{kind}``."""
        self._outcome = outcome
        """Counts a session by what became of its comparison (compared, busy, not_synced)."""
        self._running: asyncio.Future[tuple[list[Difference], set[str], float]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.last: dict[str, Any] | None = None
        self.outcomes: dict[str, int] = {}

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await super().start()

    # --- the session's verbs ------------------------------------------------------------------

    def opened(self, session: Opened) -> None:
        """onSessionOpen, once Volcano's snapshot is decoded: freeze now, compare off-path."""
        if not session.derived:
            self.compare_with(session.state, session.number)

    def compare_with(self, sent: OnSessionOpenRequest, number: int) -> None:
        """Compare Volcano's snapshot ``sent`` of session ``number`` with the cluster's state,
        in a worker thread (at most one at a time)."""
        if not self.synced:
            self._note("not_synced")
            return
        if self._running is not None and not self._running.done():
            self._note("busy")
            return
        objects = self.store.freeze()
        placements = self.store.overlay.placements()
        loop = self._loop or asyncio.get_running_loop()
        future = loop.run_in_executor(
            None, self._compare, sent, objects, self.store.derivation, placements
        )
        self._running = future
        future.add_done_callback(lambda done: self._finished(done, number, placements))

    @staticmethod
    def _compare(
        sent: OnSessionOpenRequest,
        objects: ClusterObjects,
        derivation: IncrementalDerivation,
        placements: dict[str, Placement],
    ) -> tuple[list[Difference], set[str], float]:
        # In the worker thread; one comparison at a time, so the derivation's calls never
        # overlap, and each reuses what the previous one built.
        started = time.perf_counter()
        derived = derivation.derive(objects, placements)
        return compare(sent, derived.snapshot), derived.settled, time.perf_counter() - started

    def _finished(
        self, done: asyncio.Future[Any], number: int, placements: dict[str, Placement]
    ) -> None:
        if done.cancelled():
            return
        error = done.exception()
        if error is not None:
            logger.error("session %d: comparing the session state failed: %r", number, error)
            self._note("failed")
            return
        differences, settled, seconds = done.result()
        # Sessions went on while the comparison ran: only what it was given can settle.
        self.store.overlay.settle(settled, seen=placements)
        self.record(number, differences, seconds)

    def record(self, number: int, differences: list[Difference], seconds: float) -> None:
        """Count, log and keep one comparison's result."""
        self._note("compared")
        kinds = counts_by_kind(differences)
        in_flight = counts_by_kind(differences, in_flight_only=True)
        examples: dict[str, Difference] = {}
        for difference in differences:
            # The example a line shows is one that is not in flight, when there is one.
            if difference.kind not in examples or examples[difference.kind].in_flight:
                examples[difference.kind] = difference
        for kind, n in sorted(kinds.items()):
            if self._count is not None:
                self._count(kind, n)
            moving = in_flight.get(kind, 0)
            if self._count_in_flight is not None and moving:
                self._count_in_flight(kind, moving)
            example = _public(examples[kind])
            logger.log(
                logging.INFO if moving == n else logging.WARNING,
                "session %d: %d difference(s) of kind %s between Volcano's snapshot and the"
                " cluster's state (%d in flight), e.g. %s%s: sent %s, derived %s",
                number,
                n,
                kind,
                moving,
                example["object"],
                example["path"],
                example["sent"],
                example["derived"],
            )
        self.last = {
            "session": number,
            "seconds": round(seconds, 3),
            "differences": len(differences),
            "inFlight": sum(in_flight.values()),
            "byKind": dict(sorted(kinds.items())),
            "byKindInFlight": dict(sorted(in_flight.items())),
            "first": [_public(d) for d in differences[:SHOWN_DIFFERENCES]],
        }

    def _note(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if self._outcome is not None:
            self._outcome(outcome)

    def describe(self) -> dict[str, Any]:
        """The /debug/session section: the watch's, and the comparisons."""
        return {
            **self.describe_watch(),
            "sessions": dict(sorted(self.outcomes.items())),
            "lastComparison": self.last,
        }
