"""What the shadow's process reports, kept for the routes: the sessions it evaluated and the
differences it found in each, its failures, and the configuration it has loaded
(``/readyz``'s ``shadow``, ``GET /debug/shadow``, ``caldera explain NAME --shadow``).

The receiving thread of :class:`app.shadow.service.Shadow` applies each report here
(:meth:`ShadowReports.apply`); the routes read under the same lock. The live side's reasons are
joined to each difference here, from the live session's decision record
(:func:`app.shadow.diff.with_live_reasons`).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, assert_never, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.process_collector import ProcessCollector

from app.explain import SessionLog
from app.shadow.diff import Difference, with_live_reasons
from app.shadow.messages import (
    Compared,
    Failure,
    Loaded,
    Problem,
    Report,
    SessionBegan,
    Skipped,
    Stage,
)

logger = logging.getLogger("caldera.shadow")

DIFFERENCES_PER_SESSION = 10_000
"""Differences kept per session (more are counted, not kept)."""
SESSIONS_KEPT = 3
"""The newest sessions kept, whatever they found."""
SESSIONS_WITH_DIFFERENCES_KEPT = 3
"""The newest sessions with differences, kept also once :data:`SESSIONS_KEPT` newer ones came:
Volcano asks jobEnqueueable about a job only while it is Pending, so the one session where the
shadow would have held a job the live configuration admitted is the only one that says so; at a
schedule period of 1 s it would otherwise be gone three seconds later, before an operator could
run ``caldera explain NAME --shadow``."""
FAILURE_STAGES: tuple[Stage, ...] = get_args(Stage)
"""``caldera_shadow_failures_total``'s ``stage``: the file (loading, validating, building the
plugins), a session's onSessionOpen, a verb's answer (a plugin's fault under either ``onError``:
under ``abstain`` the shadow's answer goes on without that plugin, and the fault is still
counted), comparing the two answers."""


class ShadowMetrics:
    """The shadow's own series: registered only when a shadow is configured."""

    def __init__(self, registry: CollectorRegistry, pid: Callable[[], int | str]) -> None:
        # The shadow's process's own RSS, CPU and descriptors (caldera_shadow_process_*): it
        # takes about as much memory as the live one (docs/operator-guide.md, §7), which the
        # live process's process_* series do not count. ``pid`` names no process ("none")
        # while there is none, so no samples then.
        ProcessCollector(namespace="caldera_shadow", pid=pid, registry=registry)
        self.differences = Counter(
            "caldera_shadow_differences_total",
            "Answers where the shadow configuration would have decided otherwise than the"
            " live one, by verb and by the plugin that decided in the shadow (else in the live"
            " configuration; 'none' for scores and error messages). GET /debug/shadow lists them.",
            ["verb", "plugin"],
            registry=registry,
        )
        self.compared = Counter(
            "caldera_shadow_compared_total",
            "Verb calls the shadow configuration answered and compared with the live answer.",
            ["verb"],
            registry=registry,
        )
        self.dropped_sessions = Counter(
            "caldera_shadow_dropped_sessions_total",
            "Sessions the shadow did not evaluate (whole, or from the body that did not fit on"
            " the queue): it fell behind the live verbs by more than shadow_max_queued_bytes.",
            registry=registry,
        )
        self.failures = Counter(
            "caldera_shadow_failures_total",
            "Shadow failures, by stage: load (the file did not validate or build), open (a"
            " plugin failed onSessionOpen: the session is skipped), verb (a plugin raised, answered"
            " a wrong type or ran over its budget, whatever its onError), compare. The live configuration is never affected.",
            ["stage"],
            registry=registry,
        )
        for stage in FAILURE_STAGES:
            self.failures.labels(stage)
        self.queued_bytes = Gauge(
            "caldera_shadow_queued_bytes",
            "Bytes of bodies and answers waiting for the shadow.",
            registry=registry,
        )
        self.info = Gauge(
            "caldera_shadow_config_info",
            "Always 1: the shadow configuration being evaluated, as labels: its file and the"
            " first 16 hex digits of its SHA-256 (empty while none has loaded).",
            ["source", "sha256"],
            registry=registry,
        )


@dataclass(slots=True)
class ShadowSession:
    """What the shadow decided differently in one session."""

    number: int
    opened_at: datetime
    live_log: SessionLog | None
    compared: Tally[str] = field(default_factory=Tally)
    differences: list[Difference] = field(default_factory=list)
    not_kept: int = 0
    failures: int = 0
    skipped: str = ""
    """Why the session was not evaluated (dropped, failed to open); empty when it was."""

    def describe(self) -> dict[str, Any]:
        by_verb = Tally(d.verb for d in self.differences)
        out: dict[str, Any] = {
            "session": self.number,
            "openedAt": self.opened_at.isoformat(),
            "liveSession": self.live_log.number if self.live_log is not None else None,
            "compared": dict(self.compared),
            "differences": dict(by_verb),
        }
        if self.not_kept:
            out["differencesNotKept"] = self.not_kept
        if self.failures:
            out["failures"] = self.failures
        if self.skipped:
            out["skipped"] = self.skipped
        return out


class ShadowReports:
    """The shadow's findings and state as its process reported them (see the module docstring).
    Written by the receiving thread (:meth:`apply`, :meth:`count_failure`) and, for the live
    session's decision log, by the event loop (:meth:`opened`); read by the routes."""

    def __init__(self, path: Path, metrics: ShadowMetrics, clock: Callable[[], datetime]) -> None:
        self.path = path
        self.metrics = metrics
        self.clock = clock
        self.sha256: str | None = None
        self.loaded_at: datetime | None = None
        self.plugins: list[str] = []
        self.data_sources: dict[str, str] = {}
        """Per shadow tier entry with a data source: its own, or shared with the live one."""
        self.problem: str | None = None
        """The latest failure to load the file (None once a load succeeds)."""
        self.last_failure: dict[str, str] | None = None
        self.failures: Tally[str] = Tally()
        self.sessions: list[ShadowSession] = []
        """Oldest first: see :data:`SESSIONS_KEPT` and :data:`SESSIONS_WITH_DIFFERENCES_KEPT`."""
        self._lock = threading.Lock()
        """Guards what the receiving thread writes and the routes read."""
        self._live_logs: dict[int, SessionLog | None] = {}

    def opened(self, number: int, live_log: SessionLog | None) -> None:
        """The live session ``number`` opened, recorded in ``live_log``: where a difference
        found in it reads the live reasons from."""
        self._live_logs[number] = live_log
        self._live_logs.pop(number - 2 * SESSIONS_KEPT, None)

    def apply(self, report: Report) -> None:
        """One report of the shadow's process about a session, a failure or its file."""
        match report:
            case Compared():
                self._compared(report)
            case SessionBegan():
                session = ShadowSession(
                    report.number, self.clock(), self._live_logs.get(report.number),
                    skipped=report.skipped,
                )  # fmt: skip
                with self._lock:
                    self._keep(session)
            case Skipped():
                with self._lock:
                    skipped = self._session(report.number)
                    if skipped is not None:
                        skipped.skipped = report.why
            case Failure():
                self.count_failure(report.stage, report.verb, report.error)
            case Problem():
                self.problem = report.message
                self.count_failure("load", "", report.message)
                logger.error(
                    "shadow configuration %s not loaded: %s (the live configuration is not"
                    " affected)", self.path, report.message,
                )  # fmt: skip
            case Loaded():
                self._loaded(report)
            case _:
                assert_never(report)

    def _compared(self, report: Compared) -> None:
        live_log = self._live_logs.get(report.number)
        found = [with_live_reasons(d, live_log) for d in report.differences]
        self.metrics.compared.labels(report.verb).inc()
        for difference in found:
            self.metrics.differences.labels(difference.verb, difference.plugin).inc()
        with self._lock:
            session = self._session(report.number)
            if session is None:
                return
            session.compared[report.verb] += 1
            room = max(DIFFERENCES_PER_SESSION - len(session.differences), 0)
            session.differences.extend(found[:room])
            session.not_kept += max(len(found) - room, 0)

    def _loaded(self, report: Loaded) -> None:
        sha256, plugins, sources = report.sha256, report.plugins, report.sources
        if self.sha256 is not None:
            self.metrics.info.remove(str(self.path), self.sha256)
        self.metrics.info.labels(str(self.path), sha256).set(1)
        logger.info(
            "shadow configuration %s (sha256 %s) %s with plugins: %s",
            self.path, sha256, "reloaded" if self.sha256 else "loaded",
            ", ".join(plugins) or "none",
        )  # fmt: skip
        self.sha256, self.plugins, self.loaded_at = sha256, plugins, self.clock()
        self.data_sources = sources
        self.problem = None

    def count_failure(self, stage: Stage, verb: str, error: str) -> None:
        self.metrics.failures.labels(stage).inc()
        if stage != "load":
            logger.warning("shadow configuration %s failed in %s: %s", self.path, verb, error)
        with self._lock:
            self.failures[stage] += 1
            self.last_failure = {
                "stage": stage, "verb": verb, "error": error, "at": self.clock().isoformat()
            }  # fmt: skip
            if stage in ("verb", "compare") and self.sessions:
                self.sessions[-1].failures += 1

    def _keep(self, session: ShadowSession) -> None:
        """Add ``session``; keep the newest :data:`SESSIONS_KEPT` and the newest
        :data:`SESSIONS_WITH_DIFFERENCES_KEPT` that found differences (called with the lock)."""
        self.sessions.append(session)
        newest = self.sessions[-SESSIONS_KEPT:]
        differing = [s for s in self.sessions if s.differences or s.not_kept]
        kept = {id(s) for s in (*newest, *differing[-SESSIONS_WITH_DIFFERENCES_KEPT:])}
        self.sessions = [s for s in self.sessions if id(s) in kept]

    def _session(self, number: int) -> ShadowSession | None:
        for session in reversed(self.sessions):
            if session.number == number:
                return session
        return None

    # --- what the routes read ------------------------------------------------------------------

    def loaded(self) -> dict[str, Any]:
        """The file's hash, when it loaded and its plugins and data sources (empty while none
        has loaded): part of ``/readyz``'s ``shadow``
        (:meth:`app.shadow.service.Shadow.describe`)."""
        out: dict[str, Any] = {}
        if self.sha256 is not None and self.loaded_at is not None:
            out["sha256"] = self.sha256
            out["loadedAt"] = self.loaded_at.isoformat()
            out["plugins"] = list(self.plugins)
            if self.data_sources:
                out["dataSources"] = dict(self.data_sources)
        return out

    def failure_counts(self) -> dict[str, Any]:
        """The failures by stage, and the last one."""
        with self._lock:
            out: dict[str, Any] = {
                "failures": {stage: self.failures[stage] for stage in FAILURE_STAGES}
            }
            if self.last_failure is not None:
                out["lastFailure"] = dict(self.last_failure)
        return out

    def findings(self) -> tuple[list[dict[str, Any]], list[Difference]]:
        """The sessions kept (oldest first) and the differences of the newest evaluated one."""
        with self._lock:
            sessions = list(self.sessions)
            described = [s.describe() for s in sessions]
            evaluated = [s for s in sessions if not s.skipped and s.compared]
            newest = list(evaluated[-1].differences) if evaluated else []
        return described, newest

    def differences_of(self, kind: str, key: str) -> list[tuple[int, Difference]]:
        """Every kept difference about ``kind`` ``key`` (a job also by its Volcano job name,
        ``<name>-<uid>`` being its PodGroup), newest session first."""
        with self._lock:
            sessions = list(self.sessions)
            found = [
                (s.number, d)
                for s in reversed(sessions)
                for d in list(s.differences)
                if d.kind == kind and (d.subject == key or _is_podgroup_of(d.subject, key))
            ]
        return found


def _is_podgroup_of(subject: str, key: str) -> bool:
    """``team-a/train-42-<uid>`` is the PodGroup Volcano made for job ``team-a/train-42``."""
    return subject.startswith(key + "-") and len(subject) == len(key) + 37
