"""A shadow configuration: a second configuration answering the same requests as the live one,
off the hot path, so an operator sees what a policy would change before it decides anything.

``caldera serve --shadow FILE`` (``CALDERA_SHADOW``). Each verb's request body and the live
answer are handed to :meth:`Shadow.offer` after the live answer is computed; a thread of its own
answers the same body with the shadow's :class:`~app.extender.Extender` (its own sessions, its
own decision record, its plugins built per session from the shadow file) and compares the two
answers (``app/shadow_diff.py``). Only the live answer ever goes to Volcano.

Why a thread and not a process: a process would have to be sent every body (the snapshot a
few MB each cycle) through a pipe, copying and decoding it again on the other side, and the
decision record it keeps would live there too. The thread reads the same bytes object the live
answer was decoded from (a reference, no copy). It decodes it again rather than sharing the
live configuration's decoded snapshot: plugins keep per-session state in those objects
(allocate and deallocate move resources between them), so two configurations must not share
them. What the thread costs the live verbs (the GIL while it decodes and runs plugins) is
measured by ``bench.hotpath --shadow`` (bench/README.md, "A shadow configuration").

Volcano never waits for it. :meth:`offer` appends to a queue bounded in bytes
(``shadow_max_queued_bytes``) and returns; when a body would not fit, the shadow drops the rest
of that session (and the session, when it is the snapshot that does not fit), counts it in
``caldera_shadow_dropped_sessions_total`` and starts again at the next onSessionOpen. A shadow
that fails to load, whose plugin raises, or that is slow is counted
(``caldera_shadow_failures_total``) and shown (``/readyz``, ``/debug/shadow``); the live
configuration never sees it. The shadow file is checked for a change at each session boundary,
as the live one is (``app/config_watch.py``): a valid change applies from that session, an
invalid one is a failure and the shadow goes on with the configuration it had.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from app.config import CalderaConfig, ConfigError
from app.config_watch import Backgrounds, background_key, load_with_origin
from app.explain import DecisionRecord, SessionLog
from app.extender import Body, Extender
from app.session import SessionManager
from app.shadow_diff import COMPARES, Difference, compare
from plugins.api.base import utc_now

logger = logging.getLogger("caldera.shadow")

DEFAULT_MAX_QUEUED_BYTES = 256 << 20
"""Request bodies and live answers waiting for the shadow: a few snapshots of a large cluster."""
DIFFERENCES_PER_SESSION = 10_000
"""Differences kept per session (more are counted, not kept)."""
SESSIONS_KEPT = 3
OPEN = "onSessionOpen"
FAILURE_STAGES = ("load", "open", "verb", "compare")
"""``caldera_shadow_failures_total``'s ``stage``: the file (loading, validating, building the
plugins), a session's onSessionOpen, a verb's answer, comparing the two answers."""


class ShadowMetrics:
    """The shadow's own series: registered only when a shadow is configured."""

    def __init__(self, registry: CollectorRegistry) -> None:
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
            " plugin failed onSessionOpen: the session is skipped), verb (a plugin raised),"
            " compare. The live configuration is never affected.",
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
class Item:
    session: int
    """The live session this call belongs to (counted by :meth:`Shadow.offer`)."""
    verb: str
    body: Body
    answer: bytes | None
    """The live answer; None when the live configuration refused the call."""
    live_log: SessionLog | None
    size: int


@dataclass(slots=True)
class ShadowSession:
    """What the shadow decided differently in one session."""

    number: int
    opened_at: datetime
    live_session: int | None
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
            "liveSession": self.live_session,
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


@dataclass(slots=True)
class Loaded:
    """The shadow configuration being evaluated and what answers for it."""

    config: CalderaConfig
    sha256: str
    extender: Extender
    record: DecisionRecord
    loaded_at: datetime


class Shadow:
    """The shadow's queue, thread and findings (see the module docstring)."""

    def __init__(
        self,
        path: str,
        registry: CollectorRegistry,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
        live_path: Path | None = None,
        clock: Callable[[], datetime] = utc_now,
        live_backgrounds: Callable[[], tuple[CalderaConfig, Backgrounds]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.live_path = live_path
        """The live configuration's file (None: the embedded default), for ``--diff``."""
        self.max_queued_bytes = max_queued_bytes
        self.clock = clock
        self.live_backgrounds = live_backgrounds
        """The live configuration's plugin data sources, which the shadow's plugins borrow."""
        self.metrics = ShadowMetrics(registry)
        self.loaded: Loaded | None = None
        self.problem: str | None = None
        """The latest failure to load the file (None once a load succeeds)."""
        self.last_failure: dict[str, str] | None = None
        self._stat: tuple[int, int] | None = None
        self._sha: str | None = None
        self._lock = threading.Lock()
        """Guards what the routes read: ``sessions`` and ``last_failure``."""
        self.sessions: deque[ShadowSession] = deque(maxlen=SESSIONS_KEPT)
        # Producer side (the event loop): written there only.
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._in_bytes = 0
        self._live_session = 0
        self._dropping = -1
        self._live_log: SessionLog | None = None
        self.dropped = 0
        # Consumer side (the thread): written there only.
        self._out_bytes = 0
        self._current: ShadowSession | None = None
        self.failures: Tally[str] = Tally()
        self._reload(startup=True)
        self._thread = threading.Thread(target=self._run, name="caldera-shadow", daemon=True)
        self._thread.start()

    # --- the event loop's side ----------------------------------------------------------------

    def offer(self, verb: str, body: Body, answer: bytes | None, live_log: Any = None) -> None:
        """Hand the shadow one call and the live answer; never blocks."""
        if verb == OPEN:
            self._live_session += 1
            self._live_log = live_log
        session = self._live_session
        if session == self._dropping:
            return
        size = len(body) + (len(answer) if answer is not None else 0)
        if self._in_bytes + size - self._out_bytes > self.max_queued_bytes:
            self._dropping = session
            self.dropped += 1
            self.metrics.dropped_sessions.inc()
            self._queue.put(Item(session, "", b"", None, None, 0))  # tells the thread
            return
        self._in_bytes += size
        self._queue.put(Item(session, verb, body, answer, self._live_log, size))

    def stop(self, timeout: float = 2.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)

    def queued_bytes(self) -> int:
        return self._in_bytes - self._out_bytes

    # --- the thread's side ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._handle(item)
            except Exception:  # a bug here must not end the thread, nor reach the live side
                logger.exception("the shadow failed on %s", item.verb or "a dropped session")
            finally:
                self._out_bytes += item.size
                self.metrics.queued_bytes.set(self.queued_bytes())

    def _handle(self, item: Item) -> None:
        current = self._current
        if not item.verb:  # the event loop dropped the rest of this session
            if current is not None and current.number == item.session:
                current.skipped = "dropped: the shadow fell behind (shadow_max_queued_bytes)"
            else:
                self._open_session(item, "dropped: its snapshot did not fit the shadow's queue")
            return
        if item.verb == OPEN:
            self._reload()
            current = self._open_session(item, "")
        if current is None or current.number != item.session or current.skipped:
            return  # a session the shadow is not evaluating
        loaded = self.loaded
        if loaded is None:
            return
        started = time.perf_counter()
        try:
            answer = loaded.extender.handle(item.verb, item.body)
        except Exception as exc:
            if item.verb == OPEN:
                self._fail("open", exc, item)
                current.skipped = f"the shadow failed to open it: {exc}"
                return
            if item.answer is not None:  # the live side refused the body too: no finding
                self._fail("verb", exc, item)
                current.failures += 1
            return
        if item.answer is None or item.verb not in COMPARES:
            return
        current.compared[item.verb] += 1
        self.metrics.compared.labels(item.verb).inc()
        try:
            logs = (item.live_log, loaded.record.logs[-1] if loaded.record.logs else None)
            found = compare(item.verb, item.body, item.answer, answer, logs)
        except Exception as exc:
            self._fail("compare", exc, item)
            return
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("shadow %s in %.2f ms", item.verb, (time.perf_counter() - started) * 1e3)
        for difference in found:
            self.metrics.differences.labels(difference.verb, difference.plugin).inc()
        if found:
            with self._lock:
                room = DIFFERENCES_PER_SESSION - len(current.differences)
                current.differences.extend(found[: max(room, 0)])
                current.not_kept += max(len(found) - max(room, 0), 0)

    def _open_session(self, item: Item, skipped: str) -> ShadowSession:
        live = item.live_log.number if item.live_log is not None else None
        session = ShadowSession(item.session, self.clock(), live, skipped=skipped)
        with self._lock:
            self.sessions.append(session)
        self._current = session
        if skipped and self.loaded is not None:
            self.loaded.extender.sessions.close()  # its verbs are not answered: nothing lingers
        return session

    def _fail(self, stage: str, exc: BaseException, item: Item | None = None) -> None:
        self.failures[stage] += 1
        self.metrics.failures.labels(stage).inc()
        where = f" in {item.verb}" if item is not None else ""
        message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ConfigError) else str(exc)
        logger.warning("shadow configuration %s failed%s: %s", self.path, where, message)
        with self._lock:
            self.last_failure = {
                "stage": stage,
                "verb": item.verb if item is not None else "",
                "error": message,
                "at": self.clock().isoformat(),
            }

    def _reload(self, startup: bool = False) -> None:
        """Load the shadow file when it changed (its size or modification time): at start and
        at each session boundary, on the thread (or before it starts)."""
        try:
            stat = os.stat(self.path)
            seen = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if seen is not None and seen == self._stat:
            return
        self._stat = seen
        try:
            config, origin = load_with_origin(self.path)
            if origin.sha256 == self._sha:
                return
            record = DecisionRecord(config.explainSessions, config.explainEntries)
            backgrounds = self._borrowed(config)
            sessions = SessionManager(config, None, backgrounds, clock=self.clock, record=record)
            extender = Extender(config, sessions, None)
        except Exception as exc:
            self.problem = (
                str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            )
            self._fail("load", exc)
            if startup:
                logger.error(
                    "shadow configuration %s not loaded: %s (the live configuration serves"
                    " alone)", self.path, self.problem,
                )  # fmt: skip
            return
        previous = self.loaded
        if previous is not None:
            previous.extender.sessions.close()
            self.metrics.info.remove(str(self.path), previous.sha256)
        self.loaded = Loaded(config, origin.sha256, extender, record, self.clock())
        self._sha = origin.sha256
        self.problem = None
        self.metrics.info.labels(str(self.path), origin.sha256).set(1)
        logger.info(
            "shadow configuration %s (sha256 %s) %s with plugins: %s",
            self.path,
            origin.sha256,
            "loaded" if previous is None else "reloaded",
            ", ".join(o.name for o in config.plugin_options()) or "none",
        )

    def _borrowed(self, config: CalderaConfig) -> Backgrounds:
        """The live configuration's data source for each shadow entry with the same plugin,
        arguments and flags (``background_key``): the shadow starts none of its own, so a
        plugin whose data source differs from every live one gets none (pdb, usage then
        fail and the failure is counted)."""
        if self.live_backgrounds is None:
            return {}
        live_config, live = self.live_backgrounds()
        by_key = {background_key(live_config, entry): bg for entry, bg in live.items()}
        borrowed: Backgrounds = {}
        for t, tier in enumerate(config.tiers):
            for i in range(len(tier.plugins)):
                found = by_key.get(background_key(config, (t, i)))
                if found is not None:
                    borrowed[(t, i)] = found
        return borrowed

    # --- what the routes read ------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """``/readyz``'s ``shadow``: which file, loaded or why not, and its counts."""
        loaded = self.loaded
        out: dict[str, Any] = {"source": str(self.path)}
        if loaded is not None:
            out["sha256"] = loaded.sha256
            out["loadedAt"] = loaded.loaded_at.isoformat()
        out["status"] = "evaluating" if loaded is not None and self.problem is None else "failing"
        if self.problem is not None:
            out["problem"] = self.problem
        out["droppedSessions"] = self.dropped
        out["failures"] = {stage: self.failures[stage] for stage in FAILURE_STAGES}
        with self._lock:
            if self.last_failure is not None:
                out["lastFailure"] = dict(self.last_failure)
        out["queuedBytes"] = self.queued_bytes()
        out["maxQueuedBytes"] = self.max_queued_bytes
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

    def config_diff(self) -> list[str]:
        """The live configuration file against the shadow file, as a unified diff."""
        import difflib

        from app.config import read_config_text

        live_text, live_source = read_config_text(self.live_path)
        try:
            shadow_text, _ = read_config_text(self.path)
        except ConfigError as exc:
            return [f"(the shadow file cannot be read: {exc})"]
        return list(
            difflib.unified_diff(
                live_text.splitlines(),
                shadow_text.splitlines(),
                fromfile=f"live {live_source}",
                tofile=f"shadow {self.path}",
                lineterm="",
            )
        )


def _is_podgroup_of(subject: str, key: str) -> bool:
    """``team-a/train-42-<uid>`` is the PodGroup Volcano made for job ``team-a/train-42``."""
    return subject.startswith(key + "-") and len(subject) == len(key) + 37


class ShadowedAnswers:
    """The live answers (the Extender, or the recorder around it), each call also offered to the
    shadow after the live answer is computed: the one seam between the verbs and the shadow."""

    def __init__(self, live: Any, shadow: Shadow, record: DecisionRecord) -> None:
        self.live = live
        self.shadow = shadow
        self.record = record

    def handle(self, verb: str, body: Body) -> bytes:
        try:
            answer: bytes = self.live.handle(verb, body)
        except Exception:
            self.shadow.offer(verb, body, None)
            raise
        logs = self.record.logs
        self.shadow.offer(verb, body, answer, logs[-1] if verb == OPEN and logs else None)
        return answer

    def routes(self) -> dict[str, str]:
        routes: dict[str, str] = self.live.routes()
        return routes
