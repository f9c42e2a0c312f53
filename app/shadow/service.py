"""A shadow configuration: a second configuration answering the same requests as the live one,
off the hot path, so an operator sees what a policy would change before it decides anything.

``caldera serve --shadow FILE`` (``CALDERA_SHADOW``). Each verb's request body and the live
answer are handed to :meth:`Shadow.offer` after the live answer is computed; a process of its
own (``app/shadow/worker.py``) answers the same body with the shadow's
:class:`~app.extender.Extender` (its own sessions, decision record, plugins and plugin data
sources, built per session from the shadow file as the live ones are; a data source the live
configuration has too, pdb's watch, is read from the live one: ``app/shadow/sources.py``) and
compares the two
answers (``app/shadow/diff.py``); the differences come back to the receiving thread here, and
are kept with the live side's reasons, read from the live decision record, in
``app/shadow/reports.py``, which the routes read. Only the live answer ever goes to Volcano.

Why a process and not a thread, by measurement (bench/README.md, "A shadow configuration"): a
thread doing the shadow's work holds the GIL for as long as Python lets it (5 ms slices), and a
live verb arriving meanwhile waits for it: with the shadow as busy as the live configuration,
the live verbs' p50 over HTTP rose 1.4-4x. A process has its own interpreter and runs at a
lowest CPU priority (SCHED_IDLE, else nice 19), so the live process wins the CPU whenever both
want it, and off the live process's CPUs when that one is pinned to some of them. What the live verbs pay is the hand-off, kept off the call: :meth:`offer` appends to a
deque and wakes nobody; a sending thread wakes at the session's onSessionClose (Volcano's idle
part of the period, where the shadow does its work) or :data:`SEND_AFTER_SECONDS` after it last
sent, and writes everything waiting as one batch: a header, then the bodies gathered from
their own buffers by one ``writev`` (the GIL released while the kernel copies:
``app/shadow/pipe.py``), where handing each call to the thread as it came cost
the live verbs a thread wake-up and GIL turns per call (bench/README.md,
"A shadow configuration").
The process reports back once a batch, so the receiving thread wakes once a batch too.
Both the hand-over and the shadow's evaluation wait for the live side to be idle: no session
in progress, no verb being answered (``app/shadow/gate.py``).
The process decodes the body again rather
than sharing the live configuration's decoded snapshot: plugins keep per-session state in those
objects, so two configurations must not share them anyway.

With ``sessionState: cluster`` Volcano posts no onSessionOpen: the session opens at its first
call on a state the live process derived from the cluster. :class:`ShadowedAnswers` then offers
that state as the session's onSessionOpen (a reference, not bytes), and the sending thread hands
it over as a delta from the state it last sent (``app/shadow/state.py``), encoded entry by entry
and stopped between two entries while the live side is in a session; a shadow plugin that
needs the snapshot itself (``snapshot_only``) is refused by the shadow's process.

Volcano never waits for it. :meth:`offer` appends to a queue bounded in bytes
(``shadow_max_queued_bytes``) and returns; when a body would not fit, the shadow drops the rest
of that session (and the session, when it is the snapshot that does not fit), counts it in
``caldera_shadow_dropped_sessions_total`` and starts again at the next onSessionOpen. A shadow
that fails to load, whose plugin raises, or that is slow is counted
(``caldera_shadow_failures_total``) and shown (``/readyz``, ``/debug/shadow``); the live
configuration never sees it. The shadow file is checked for a change at each session boundary,
as the live one is (``app/server/config_watch.py``): a valid change applies from that session, an
invalid one is a failure and the shadow goes on with the configuration it had.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import multiprocessing
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from app.config import ConfigError
from app.explain import DecisionRecord
from app.extender import Extender
from app.session_events import Opened, SessionListener
from app.shadow import worker as shadow_worker
from app.shadow.freed_memory import keep_freed_memory
from app.shadow.gate import QUIET_SESSION_SECONDS, LiveActivity
from app.shadow.messages import (
    Batch,
    Call,
    Done,
    FullState,
    MessageError,
    Share,
    State,
    Stop,
    ToParent,
    send,
    to_parent,
)
from app.shadow.pipe import write_all
from app.shadow.reports import ShadowMetrics, ShadowReports
from app.shadow.sources import LiveSources, ServedConfig
from app.shadow.state import DeltaEncoder
from app.wire import Body
from plugins.api.base import utc_now
from plugins.api.extension_points import Verb
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.shadow")

DEFAULT_MAX_QUEUED_BYTES = 256 << 20
"""Request bodies and live answers waiting for the shadow: a few snapshots of a large cluster."""
OPEN = Verb.ON_SESSION_OPEN
CLOSE = Verb.ON_SESSION_CLOSE
SEND_AFTER_SECONDS = 1.0
"""How long a call may wait for the sending thread when no onSessionClose comes (a session
longer than Volcano's 1 s schedule period): the batch's bound in time. Sending during the
session would let the shadow's process and this process's receiving thread work while the
live verbs do."""
PIPE_BYTES = 1 << 20
"""The pipe to the shadow's process: Linux's pipe-max-size for an unprivileged process."""
ALONE_BYTES = 1 << 20
"""A body this large (a snapshot) goes as a batch of its own, so the process reports it done,
and the queue's bound lets go of it, before the session's other calls are evaluated."""
DERIVED_OPEN_ANSWER = b"{}"
"""What the live configuration answers an onSessionOpen: the derived one's "answer"."""


@dataclass(slots=True)
class Item:
    session: int
    """The live session this call belongs to (counted by :meth:`Shadow.offer`)."""
    verb: str
    """Empty: the rest of ``session`` is dropped."""
    body: Body
    answer: bytes | None
    """The live answer; None when the live configuration refused the call."""
    size: int
    state: OnSessionOpenRequest | None = None
    """Cluster mode's onSessionOpen (``body`` empty): the state the live session was derived
    to, None when there was none yet (the watch had not listed)."""


class Shadow:
    """The shadow's queue, its process and the threads between them (see the module
    docstring); what the process reports is kept in :attr:`reports`."""

    def __init__(
        self,
        path: str,
        registry: CollectorRegistry,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
        live_path: Path | None = None,
        clock: Callable[[], datetime] = utc_now,
        live_sources: ServedConfig | None = None,
        cluster: bool = False,
        quiet_session_seconds: float = QUIET_SESSION_SECONDS,
    ) -> None:
        self.path = Path(path)
        self.cluster = cluster
        """``sessionState: cluster``: each session's onSessionOpen is the live session's
        derived state, handed over as a delta (:mod:`app.shadow.state`) by the sending thread."""
        self._deltas = DeltaEncoder()
        self._full_next = False
        """The process asked for the whole state (it could not apply a delta)."""
        self.handed_over: dict[str, Any] = {"states": 0, "whole": 0}
        """Cluster mode: states handed over (how many, how many whole) and the last one's
        encode time, bytes and entries: ``/readyz``'s ``shadow.sessionState``."""
        self.live_path = live_path
        """The live configuration's file (None: the embedded default), for ``--diff``."""
        self.max_queued_bytes = max_queued_bytes
        self.metrics = ShadowMetrics(registry, self._pid)
        self.reports = ShadowReports(self.path, self.metrics, clock)
        """What the process reported: sessions, differences, failures, the file loaded."""
        self._live_sources = LiveSources(live_sources) if live_sources is not None else None
        """``live_sources`` returns the live configuration and its data sources as served now:
        the shadow reads the ones it shares from there (app/shadow/sources.py)."""
        # The event loop's side (offer): written there only.
        self._queue: deque[Item | None] = deque()
        """Appended here, popped by the sending thread (both atomic under the GIL)."""
        self._wake = threading.Event()
        self._opened_at = 0.0
        self._in_bytes = 0
        self._live_session = 0
        self._dropping = -1
        self.dropped = 0
        # The receiving thread's side: the bytes the process has handled (it says so when it
        # has caught up), and the sending thread's: those it could not hand over.
        self._done_bytes = 0
        self._lost = 0
        self._gone = False
        # fork, not spawn: the child has the plugins registered in this process (entry points
        # and any registered in code) without importing anything again; create_app runs before
        # the server starts a thread of its own.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context: Any = multiprocessing.get_context(method)
        self.activity = LiveActivity(context, quiet_session_seconds)
        """Marked around each live verb (:class:`ShadowedAnswers`); the shadow works only while
        it says the live side is idle (app/shadow/gate.py)."""
        inbox, self._to_child = context.Pipe(duplex=False)
        _widen(self._to_child)
        self._from_child, outbox = context.Pipe(duplex=False)
        self._process = context.Process(
            target=shadow_worker.main,
            args=(
                str(self.path),
                inbox,
                outbox,
                self._live_sources.keys if self._live_sources is not None else frozenset(),
                cluster,
                self.activity,
            ),
            name="caldera-shadow",
            daemon=True,
        )
        self._process.start()
        # The live side holds each body until its batch is handed over: keep what the last
        # batch freed for the next one's bodies (app/shadow/freed_memory.py: 57 page faults a
        # 227 KiB call otherwise).
        keep_freed_memory(self.max_queued_bytes)
        inbox.close()
        outbox.close()
        self._sender = threading.Thread(target=self._send, name="caldera-shadow-send", daemon=True)
        self._receiver = threading.Thread(
            target=self._receive, name="caldera-shadow-receive", daemon=True
        )
        self._sender.start()
        self._receiver.start()

    # --- the event loop's side ----------------------------------------------------------------

    def offer(
        self,
        verb: str,
        body: Body,
        answer: bytes | None,
        live_log: Any = None,
        state: OnSessionOpenRequest | None = None,
    ) -> None:
        """Hand the shadow one call and the live answer; never blocks. In cluster mode the
        session's onSessionOpen is offered with its derived ``state`` (an empty body): the
        objects are only referenced here (the live session holds them anyway, and nobody
        mutates them), the sending thread encodes what changed."""
        if verb == OPEN:
            self._opened_at = time.monotonic()
            self._live_session += 1
            self.reports.opened(self._live_session, live_log)
        session = self._live_session
        if session == self._dropping:
            return
        size = len(body) + (len(answer) if answer is not None else 0)
        if self.queued_bytes() + size > self.max_queued_bytes:
            self._dropping = session
            self.dropped += 1
            self.metrics.dropped_sessions.inc()
            self._queue.append(Item(session, "", b"", None, 0))  # tells the shadow
            return
        self._in_bytes += size
        self._queue.append(Item(session, verb, body, answer, size, state))
        if verb == CLOSE and self.activity.idle():  # else woken by closed(), once it is
            self._wake.set()  # the session's burst is over: the shadow's turn

    def _pid(self) -> int | str:
        """The shadow's process while it runs (its pid is not reused under it), else "none"."""
        process = getattr(self, "_process", None)  # a scrape before __init__ started it
        if process is None or process.pid is None or not process.is_alive():
            return "none"
        return int(process.pid)

    def closed(self) -> None:
        """The live side answered onSessionClose and marked it (:class:`ShadowedAnswers`): the
        sending thread's turn, now that the live side is idle."""
        self._wake.set()

    def stop(self, timeout: float = 2.0) -> None:
        self.activity.release()  # neither side waits for an idle live side any more
        self._queue.append(None)
        self._wake.set()
        self._sender.join(timeout)
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout)
        self._receiver.join(timeout)

    def queued_bytes(self) -> int:
        """Bytes offered and not yet handled by the process (queued, in the pipe, or being
        answered): what ``max_queued_bytes`` bounds."""
        return self._in_bytes - self._done_bytes - self._lost

    # --- the threads that talk to the shadow's process ----------------------------------------

    def _send(self) -> None:
        """Hand the waiting calls to the process, a batch at a time. A full pipe blocks here (the
        GIL released in the write), never in :meth:`offer`: the deque then grows, and
        :meth:`offer` drops."""
        waiting = self._queue
        while True:
            woken = self._wake.wait(SEND_AFTER_SECONDS)
            self._wake.clear()
            if not woken and time.monotonic() - self._opened_at < SEND_AFTER_SECONDS:
                continue  # the session is still in its burst: the shadow waits for its close
            if not self.activity.idle():
                # Writing a batch costs the live side (this thread's GIL turns, the copy into
                # the pipe): only while it is idle. Looked at again at the next close or in
                # SEND_AFTER_SECONDS, not polled: each wake of this thread takes the GIL from
                # the live verbs (measured: +50% at p50 of back-to-back jobEnqueueable calls
                # with a 5 ms poll). Meanwhile the deque grows, and offer drops.
                continue
            batch: list[Item] = []
            while waiting:
                item = waiting.popleft()
                if item is None:
                    self._send_batch(batch)
                    with contextlib.suppress(OSError, ValueError):
                        send(self._to_child, Stop())
                    return
                if item.verb == OPEN:  # the shared data sources go before their session
                    self._send_batch(batch)
                    batch = []
                    self._share_or_lose()
                    if item.state is not None:  # and cluster mode's derived state
                        self._send_state(item.state)
                if len(item.body) >= ALONE_BYTES:  # a batch of its own
                    self._send_batch(batch)
                    self._send_batch([item])
                    batch = []
                else:
                    batch.append(item)
            self._send_batch(batch)
            # Let go of the bodies: the live process reuses a large body's buffer only once
            # nothing else holds it (app/server/buffers.py).
            batch, item = [], None

    def _send_batch(self, batch: list[Item]) -> None:
        if not batch:
            return
        try:
            calls = [Call(i.session, i.verb, i.answer, i.size, len(i.body)) for i in batch]
            send(self._to_child, Batch(calls))
            # The bodies as they are, gathered by the kernel: no join (app/shadow/pipe.py).
            write_all(self._to_child.fileno(), [i.body for i in batch])
        except (OSError, ValueError):  # the process is gone: counted once, calls dropped
            self._process_gone(batch[0].verb)
            self._lost += sum(i.size for i in batch)  # never acknowledged by the process

    def _send_state(self, state: OnSessionOpenRequest) -> None:
        """The session's derived state, as a delta from the last one sent: encoded here, on
        the sending thread, never on the event loop."""
        if self._full_next:
            self._full_next = False
            self._deltas.full_next()
        started = time.perf_counter()
        try:
            data = self._deltas.encode(state, self._while_live_is_busy)
        except Exception as exc:  # a state that does not encode: that session is skipped
            logger.exception("the session's derived state could not be encoded for the shadow")
            self._deltas.full_next()
            self.reports.count_failure("open", OPEN, f"encoding the derived state: {exc!r}")
            return
        whole = self._deltas.changed_whole
        self.handed_over = {
            "states": self.handed_over["states"] + 1,
            "whole": self.handed_over["whole"] + whole,
            "lastEncodeSeconds": round(time.perf_counter() - started, 4),
            "lastBytes": len(data),
            "lastEntries": self._deltas.changed,
        }
        try:
            send(self._to_child, State(self._deltas.number))
            self._to_child.send_bytes(data)
        except (OSError, ValueError):
            self._process_gone(OPEN)

    def _while_live_is_busy(self) -> None:
        """Between two entries of a state's encode: wait while the live side is in a session (a
        whole state's encode at 10,000 pods takes 0.1 s on a quiet machine and several times
        that on a busy one, and can run into the next session). Woken by the session's close
        (:meth:`closed`), never polled, for the reason :meth:`_send` gives. A wake taken here is
        not lost: once the encode is done the sending thread hands over everything waiting, the
        new session's calls too."""
        self.activity.wait_idle_woken(self._wake, SEND_AFTER_SECONDS)

    def _process_gone(self, verb: str) -> None:
        if not self._gone:
            self._gone = True
            self.reports.count_failure("verb", verb, "the shadow's process ended")

    def _share_or_lose(self) -> None:
        try:
            self._share(self._to_child)
        except (OSError, ValueError):
            self._process_gone(OPEN)

    def _share(self, to_child: Any) -> None:
        """Before a session: the live data sources' states the shadow mirrors, when changed."""
        if self._live_sources is None:
            return
        try:
            changes = self._live_sources.changes()
            if changes is not None:
                send(to_child, Share(*changes))
        except (OSError, ValueError):
            raise
        except Exception as exc:  # a state that does not encode: counted, the session goes on
            logger.exception("the live data sources could not be shared with the shadow")
            self.reports.count_failure("open", OPEN, f"sharing the live data sources: {exc!r}")

    def _receive(self) -> None:
        while True:
            try:
                data = self._from_child.recv_bytes()
            except (EOFError, OSError):
                return
            try:
                reports = to_parent(data)
            except MessageError:  # one message lost, not the next: each is framed on its own
                logger.exception("the shadow's reports could not be read")
                continue
            for report in reports:
                try:
                    self._apply(report)
                except Exception:
                    logger.exception(
                        "the shadow's report %s could not be applied", type(report).__name__
                    )

    def _apply(self, report: ToParent) -> None:
        match report:
            case FullState():
                self._full_next = True
            case Done():
                self._done_bytes = report.size
                self.metrics.queued_bytes.set(self.queued_bytes())
            case _:
                self.reports.apply(report)

    # --- what the routes read ------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """``/readyz``'s ``shadow``: which file, loaded or why not, and its counts."""
        reports = self.reports
        out: dict[str, Any] = {"source": str(self.path), **reports.loaded()}
        if reports.problem is not None:
            out["status"] = "failing"
            out["problem"] = reports.problem
        elif not self._process.is_alive():
            out["status"] = "failing"
            out["problem"] = f"the shadow's process ended (exit {self._process.exitcode})"
        else:
            out["status"] = "evaluating" if reports.sha256 is not None else "starting"
        out["droppedSessions"] = self.dropped
        out.update(reports.failure_counts())
        if self.cluster:
            out["sessionState"] = {"mode": "cluster", **self.handed_over}
        out["queuedBytes"] = self.queued_bytes()
        out["maxQueuedBytes"] = self.max_queued_bytes
        return out

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


def _widen(pipe: Any) -> None:
    """Make the pipe to the shadow :data:`PIPE_BYTES` large where the kernel lets us: each
    write of a batch waits for the shadow to read, and takes the GIL back from the live verbs
    once per pipe buffer; a 75 MiB snapshot is 1,200 of them at Linux's default 64 KiB, which
    a shadow starved of CPU can stretch into the next session."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or over pipe-max-size
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


class ShadowedAnswers(SessionListener):
    """The live answers (the Extender, or the recorder around it), each call also offered to the
    shadow after the live answer is computed: the one seam between the verbs and the shadow. It
    listens to the live extender's sessions for those opened on a derived state."""

    def __init__(
        self,
        live: Any,
        shadow: Shadow,
        record: DecisionRecord,
        extender: Extender | None = None,
        cluster: bool = False,
    ) -> None:
        self.live = live
        self.shadow = shadow
        self.record = record
        self.cluster = cluster
        """``sessionState: cluster``: a session opens at its first call, on a derived state."""
        self._boundary = False
        """The call being answered began a session (cluster mode: its first call)."""
        self._derived: OnSessionOpenRequest | None = None
        """The state that session opened on (None before the watch listed: no state)."""
        if extender is not None:
            extender.listeners.add(self)

    def boundary(self) -> None:
        self._boundary = True

    def opened(self, session: Opened) -> None:
        if session.derived:
            self._derived = session.state

    def answers_first(self, verb: str, body: Body) -> bool:
        return bool(self.live.answers_first(verb, body))

    def handle(self, verb: str, body: Body) -> bytes:
        activity = self.shadow.activity
        activity.answering(verb)  # the shadow holds off until answered (app/shadow/gate.py)
        self._boundary, self._derived = False, None
        try:
            try:
                answer: bytes = self.live.handle(verb, body)
            except Exception:
                self._offer(verb, body, None)
                raise
            self._offer(verb, body, answer)
            return answer
        finally:
            activity.answered(verb)
            if verb == CLOSE:
                self.shadow.closed()

    def _offer(self, verb: str, body: Body, answer: bytes | None) -> None:
        logs = self.record.logs
        if not self.cluster:
            self.shadow.offer(verb, body, answer, logs[-1] if verb == OPEN and logs else None)
            return
        if self._boundary:
            # The call began the session, on the derived state: that is its onSessionOpen.
            state = self._derived
            live_log = logs[-1] if logs and state is not None else None
            self.shadow.offer(OPEN, b"", DERIVED_OPEN_ANSWER, live_log, state)
        if verb != OPEN:  # a snapshot Volcano still posts is not what the live session read
            self.shadow.offer(verb, body, answer)

    def routes(self) -> dict[str, str]:
        routes: dict[str, str] = self.live.routes()
        return routes
