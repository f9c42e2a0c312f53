"""Whether Caldera took the last session snapshot Volcano sent: ``/readyz`` and the log say so.

Volcano's extender registers none of its callbacks for a session whose onSessionOpen failed — a
413, a 400, a 500 or its own ``extender.httpTimeout`` — and schedules that cycle without any
hosted plugin; ``extender.ignorable: false`` does not apply there (README, "On the Volcano
side"). Nothing on Volcano's side shows it, so Caldera must: each snapshot it does not take is
an ERROR log line naming the size and the setting to raise, ``/readyz`` answers 503 and the
``caldera_snapshot_taken`` gauge reads 0 (alert ``CalderaSnapshotNotTaken``) until a snapshot is
taken again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.errors import BodyTooLarge, CalderaError

logger = logging.getLogger("caldera.snapshot")

CONSEQUENCE = (
    "Volcano runs this scheduling cycle without any of Caldera's plugins"
    " (extender.ignorable does not apply to onSessionOpen)"
)
CONSEQUENCE_ANSWERED = (
    "it was answered before it was read (app/server/routes/verbs.py), so Volcano goes on with the"
    " cycle and its calls are answered without a session: only the plugins that need no"
    " snapshot take part"
)


@dataclass(frozen=True, slots=True)
class SnapshotOutcome:
    status: str
    """``taken``, ``refused`` (4xx: the body), ``failed`` (5xx: a plugin or Caldera) or
    ``abandoned`` (Volcano closed the connection before the body arrived)."""
    at: datetime
    bytes: int | None = None
    """The body's size when known (its Content-Length for a refusal)."""
    limit: int | None = None
    setting: str | None = None
    """The configuration key to raise, for a body over its limit."""
    code: int | None = None
    error: str | None = None


class SnapshotHealth:
    """The outcome of the last onSessionOpen, and how many in a row were not taken."""

    def __init__(
        self, clock: Callable[[], datetime], report: Callable[[float], None] | None = None
    ) -> None:
        """``report`` receives 1 when a snapshot is taken and 0 when one is not (the
        ``caldera_snapshot_taken`` gauge)."""
        self.clock = clock
        self.report = report or (lambda _: None)
        self.last: SnapshotOutcome | None = None
        self.missed_in_a_row = 0

    @property
    def ready(self) -> bool:
        """No snapshot yet (Volcano has not called, or the configuration needs none) or the
        last one taken."""
        return self.last is None or self.last.status == "taken"

    @property
    def last_taken(self) -> bool:
        """A snapshot came and the last one was taken: the next is answered before it is
        read (``app/server/routes/verbs.py``); otherwise after, so that its refusal reaches
        Volcano."""
        return self.last is not None and self.last.status == "taken"

    def taken(self, size: int) -> None:
        if self.missed_in_a_row:
            logger.info(
                "onSessionOpen taken again (%d bytes) after %d missed", size, self.missed_in_a_row
            )
        self.missed_in_a_row = 0
        self.last = SnapshotOutcome("taken", self.clock(), bytes=size)
        self.report(1)

    def refused(self, exc: CalderaError, answered: bool = False) -> None:
        """A 4xx or 5xx answer to onSessionOpen, or (``answered``) a snapshot answered before
        it was read that failed to build: logged here, once per cycle, as an error."""
        self.missed_in_a_row += 1
        self.report(0)
        status = "refused" if exc.status < 500 else "failed"
        if isinstance(exc, BodyTooLarge):
            self.last = SnapshotOutcome(
                status,
                self.clock(),
                bytes=exc.seen,
                limit=exc.limit,
                setting=exc.setting,
                code=exc.status,
                error=str(exc),
            )
            size = f"{exc.seen} bytes" if exc.seen is not None else f"over {exc.limit} bytes"
            logger.error(
                "onSessionOpen refused (HTTP 413): the snapshot is %s, %s is %d bytes; %s."
                " Raise %s to at least %s in the Caldera configuration, and the container's"
                " memory limit to 60 MiB + 1.5 x that (%d in a row)",
                size,
                exc.setting,
                exc.limit,
                CONSEQUENCE,
                exc.setting,
                exc.seen if exc.seen is not None else f"twice {exc.limit}",
                self.missed_in_a_row,
            )
            return
        self.last = SnapshotOutcome(status, self.clock(), code=exc.status, error=str(exc))
        logger.error(
            "onSessionOpen %s (%s %d): %s; %s (%d in a row)",
            status,
            "answered 200 first; would have been" if answered else "HTTP",
            exc.status,
            exc,
            CONSEQUENCE_ANSWERED if answered else CONSEQUENCE,
            self.missed_in_a_row,
            exc_info=getattr(exc, "cause", None),
        )

    def abandoned(self) -> None:
        """Volcano closed the connection mid-body: its httpTimeout ran out first, or it exited."""
        self.missed_in_a_row += 1
        self.report(0)
        self.last = SnapshotOutcome(
            "abandoned",
            self.clock(),
            error="Volcano closed the connection before the snapshot arrived",
        )
        logger.error(
            "onSessionOpen abandoned: Volcano closed the connection before the snapshot"
            " arrived (its extender.httpTimeout is shorter than the transfer, or it exited);"
            " %s (%d in a row)",
            CONSEQUENCE,
            self.missed_in_a_row,
        )

    def describe(self) -> dict[str, Any]:
        """For ``/readyz``: the last outcome's fields that are set, and the run of misses."""
        if self.last is None:
            return {"status": "none yet"}
        fields = {
            "status": self.last.status,
            "at": self.last.at.isoformat(),
            "bytes": self.last.bytes,
            "limit": self.last.limit,
            "setting": self.last.setting,
            "code": self.last.code,
            "error": self.last.error,
        }
        described = {key: value for key, value in fields.items() if value is not None}
        if not self.ready:
            described["missedInARow"] = self.missed_in_a_row
            described["consequence"] = CONSEQUENCE
        return described
