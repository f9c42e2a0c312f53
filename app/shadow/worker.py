"""The shadow configuration's own process (``app/shadow/service.py`` starts it): it answers every
call the live configuration answered with the shadow's :class:`~app.extender.Extender` (its own
sessions, decision record, plugins and plugin data sources, but for those it shares with the
live configuration: ``app/shadow/sources.py``) and reports what it would decide differently.

Reads from ``inbox`` and writes to ``outbox`` the messages of ``app/shadow/messages.py``: a
:class:`~app.shadow.messages.Batch` of calls, then the calls' request bodies as raw bytes on the
pipe, one after the other (``app/shadow/pipe.py``; a call whose ``verb`` is empty says the parent
dropped the rest of that session); :class:`~app.shadow.messages.Share`, the live
configuration's shareable data sources and their changed states (``app/shadow/sources.py``),
sent before a session's onSessionOpen; in cluster mode :class:`~app.shadow.messages.State` then
the session's state delta (``app/shadow/state.py``), also before its onSessionOpen (whose body
is then empty); :class:`~app.shadow.messages.Stop` ends it. What the process has to say about a
batch goes back after it in one message (:class:`Reports`), for the parent to apply
(:meth:`app.shadow.service.Shadow._apply`): the file :class:`~app.shadow.messages.Loaded` or its
:class:`~app.shadow.messages.Problem`; a session begun, skipped, a call compared; a failure, also
a plugin's fault whose policy let the verb be answered (:class:`ForwardedFaults`); a state delta
that did not apply (:class:`~app.shadow.messages.FullState`); and, last, the bytes of every call
handled so far (:class:`~app.shadow.messages.Done`): the parent's memory bound counts a call
until then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, assert_never

from app.cluster_state.modes import refusal
from app.config import (
    Backgrounds,
    CalderaConfig,
    ConfigError,
    build_backgrounds,
    load_with_origin,
)
from app.explain import DecisionRecord
from app.extender import Extender
from app.metrics import Metrics
from app.plugin_faults import Fault, PluginFaults
from app.session import SessionManager, SessionNumbers
from app.shadow.diff import COMPARES, compare
from app.shadow.gate import LiveActivity
from app.shadow.messages import (
    Batch,
    Compared,
    Done,
    Failure,
    FullState,
    Loaded,
    Problem,
    SessionBegan,
    Share,
    Skipped,
    State,
    Stop,
    ToParent,
    send_reports,
    to_child,
)
from app.shadow.pipe import read_exactly
from app.shadow.sources import Mirror, MirroredSources
from app.shadow.state import DeltaDecoder
from app.wire import Body
from plugins.api.extension_points import Verb
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.shadow")
OPEN = Verb.ON_SESSION_OPEN
NOT_SYNCED = "not evaluated: the live session had no state (the watch had not listed yet)"
STALE_BASE = (
    "not evaluated: its state delta did not apply to the state the shadow held (a delta was"
    " lost); the whole state is asked for"
)
BACKGROUND_START_SECONDS = 30.0
FELL_BEHIND = "dropped: the shadow fell behind (shadow_max_queued_bytes)"
NOT_QUEUED = "dropped: its snapshot did not fit the shadow's queue (shadow_max_queued_bytes)"

Send = Callable[[ToParent], None]


def describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"


class ForwardedFaults(PluginFaults):
    """The shadow's plugin faults: counted and logged here as the live ones are, and each one
    that did not fail the verb sent to the parent as a ``verb`` failure. A fault under
    ``onError: fail`` raises out of the verb (:meth:`Evaluator.handle` reports it), one under
    ``abstain`` only drops the plugin's answer: without this, a shadow plugin that raises on
    every call under ``abstain`` would show no failure at all."""

    def __init__(self, send: Send, metrics: Metrics) -> None:
        super().__init__(metrics)
        self.send = send

    def record(self, fault: Fault, cause: BaseException | None = None) -> None:
        super().record(fault, cause)
        if not fault.failed:
            self.send(Failure("verb", fault.verb, fault.line()))


class Evaluator:
    """The shadow's side of every call, one at a time."""

    def __init__(
        self,
        path: Path,
        send: Send,
        live_keys: frozenset[str] = frozenset(),
        cluster: bool = False,
    ) -> None:
        self.path = path
        self.send = send
        self.cluster = cluster
        """The live configuration runs ``sessionState: cluster``: each onSessionOpen is a
        derived state, received as a delta (:meth:`receive_state`)."""
        self.states = DeltaDecoder()
        self.state: OnSessionOpenRequest | None = None
        """The next session's state, once its delta applied."""
        self.state_problem = NOT_SYNCED
        self.sources = MirroredSources(live_keys)
        """The live configuration's data sources this shadow reads instead of its own."""
        self.extender: Extender | None = None
        self.record: DecisionRecord | None = None
        self.backgrounds: Backgrounds = {}
        self.metrics = Metrics()
        """The shadow's own, on a private registry: nothing serves them (the parent reports
        the shadow's results); kept across reloads, as a registry takes each metric once."""
        self.faults = ForwardedFaults(send, self.metrics)
        """Kept across reloads, as the live process keeps its own."""
        self.numbers = SessionNumbers()
        """The shadow's own sessions' numbers, kept across reloads as the live process's are."""
        self.sha: str | None = None
        self.stat: tuple[int, int] | None = None
        self.session = -1
        self.skipped = True
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- the file ---------------------------------------------------------------------------

    def reload(self) -> None:
        """Load the file when its size or modification time changed: at start and at each
        session boundary, as the live file is (``app/server/config_watch.py``)."""
        try:
            stat = os.stat(self.path)
            seen: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if seen is not None and seen == self.stat:
            return
        self.stat = seen
        try:
            config, origin = load_with_origin(self.path)
            if origin.sha256 == self.sha:
                return
            if self.cluster:
                self._refuse_snapshot_only(config)
            backgrounds, mirrors, chosen, described = self._start(config)
            record = DecisionRecord(config.explainSessions, config.explainEntries)
            sessions = SessionManager(
                config, self.metrics, backgrounds, record=record, faults=self.faults,
                numbers=self.numbers,
            )  # fmt: skip
            extender = Extender(config, sessions, self.metrics)
        except Exception as exc:
            self.send(Problem(describe(exc)))
            return
        if self.extender is not None:
            self.extender.sessions.close()
        self._stop(self.backgrounds)
        self.extender, self.record, self.backgrounds = extender, record, backgrounds
        self.sources.use(mirrors, chosen)
        self.sha = origin.sha256
        plugins = [o.name for o in config.plugin_options()]
        self.send(Loaded(origin.sha256, plugins, described))

    def _refuse_snapshot_only(self, config: CalderaConfig) -> None:
        """A plugin whose state only Volcano's snapshot carries cannot be evaluated on the live
        configuration's derived sessions, whatever the shadow file's own ``sessionState``."""
        refused = [
            (
                f"{entry.where}.name",
                f"plugin {entry.name!r} cannot run with sessionState cluster (the live"
                f" configuration's): {reason}",
            )
            for entry in config.entries
            if (reason := refusal(entry.cls)) is not None
        ]
        if refused:
            raise ConfigError.of(str(self.path), refused)

    def _start(
        self, config: CalderaConfig
    ) -> tuple[Backgrounds, dict[str, list[Mirror]], dict[str, bool], dict[str, str]]:
        """The shadow's plugin data sources: a mirror of the live configuration's where it reads
        the same (pdb's budgets: no second watch), else its own (usage's metrics), started on an
        event loop of this process's own."""
        built, _ = build_backgrounds(config)
        backgrounds, mirrors, chosen, described = self.sources.adopt(config, built)
        own = [b for b in backgrounds.values() if not isinstance(b, Mirror)]
        if own:
            loop = self._event_loop()
            for background in own:
                asyncio.run_coroutine_threadsafe(background.start(), loop).result(
                    BACKGROUND_START_SECONDS
                )
        return backgrounds, mirrors, chosen, described

    def share(self, keys: frozenset[str], states: dict[str, bytes]) -> None:
        """The live configuration's shareable data sources changed: feed the mirrors; when this
        configuration mirrors a source the live one dropped (or watches one the live one now
        has), build it again at the next session boundary."""
        if self.sources.receive(keys, states):
            self.stat = self.sha = None

    def _stop(self, backgrounds: Backgrounds) -> None:
        if backgrounds and self._loop is not None:
            for background in backgrounds.values():
                try:
                    asyncio.run_coroutine_threadsafe(background.stop(), self._loop).result(5)
                except Exception:
                    logger.exception("stopping a shadow plugin's data source failed")

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="shadow-data", daemon=True).start()
        return self._loop

    # --- the calls --------------------------------------------------------------------------

    def receive_state(self, data: bytes) -> None:
        """Cluster mode: the next session's state, as a delta from the previous one. Applied
        whatever becomes of the session (skipped, dropped later), so the state held is always
        the last one the parent sent; one that does not apply is never guessed at."""
        self.state = None
        try:
            self.state = self.states.apply(data)
        except Exception as exc:
            self.states.lose()
            self.send(Failure("open", OPEN, f"applying the derived state: {describe(exc)}"))
        if self.state is None:
            self.state_problem = STALE_BASE
            self.send(FullState())

    def dropped(self, session: int) -> None:
        """The parent dropped the rest of ``session`` (or all of it)."""
        if session == self.session:
            self.send(Skipped(session, FELL_BEHIND))
        else:
            self.session = session
            self.send(SessionBegan(session, NOT_QUEUED))
        self.skipped = True
        if self.extender is not None:
            self.extender.sessions.close()  # its verbs are not answered: nothing lingers

    def handle(self, session: int, verb: str, body: Body, live: bytes | None) -> None:
        state: OnSessionOpenRequest | None = None
        problem = ""
        if verb == OPEN:
            # Taken whatever becomes of the session: a state is never used for a later one.
            state, self.state, problem = self.state, None, self.state_problem
            self.state_problem = NOT_SYNCED
            self.reload()
            self.session, self.skipped = session, False
            self.send(SessionBegan(session, ""))
        if session != self.session or self.skipped or self.extender is None:
            return
        try:
            if self.cluster and verb == OPEN:
                if not self._open_derived(session, state, problem):
                    return
                answer = live or b""
            else:
                answer = self.extender.handle(verb, body)
        except Exception as exc:
            if verb == OPEN:
                self.skipped = True
                self.send(Failure("open", verb, describe(exc)))
                self.send(Skipped(session, f"the shadow failed to open it: {describe(exc)}"))
            elif live is not None:  # the live side refused the body too: no finding
                self.send(Failure("verb", verb, describe(exc)))
            return
        if live is None or verb not in COMPARES:
            return
        assert self.record is not None
        try:
            log = self.record.logs[-1] if self.record.logs else None
            found = compare(verb, body, live, answer, (None, log))
        except Exception as exc:
            self.send(Failure("compare", verb, describe(exc)))
            return
        self.send(Compared(session, Verb(verb), tuple(found)))

    def _open_derived(self, session: int, state: OnSessionOpenRequest | None, problem: str) -> bool:
        """Open the session on the state received for it; skip it when there is none."""
        assert self.extender is not None
        if state is None:
            self.skipped = True
            self.extender.sessions.close()
            self.send(Skipped(session, problem))
            return False
        self.extender.open_session(lambda: state)
        return True


class Reports:
    """What the process has to say about a batch, sent to the parent in one message after the
    batch: the parent's receiving thread then takes the GIL once a batch, not once a call."""

    def __init__(self, outbox: Connection) -> None:
        self.outbox = outbox
        self.waiting: list[ToParent] = []

    def append(self, report: ToParent) -> None:
        self.waiting.append(report)

    def send(self) -> None:
        if self.waiting:
            waiting, self.waiting = self.waiting, []
            send_reports(self.outbox, waiting)


def lowest_priority() -> None:
    """SCHED_IDLE where the kernel has it: the shadow runs only on a CPU nothing else wants, so
    the live process is never preempted for it (nice 19 still gets a share of a CPU the live
    process wants, about 1.5 % against nice 0 under CFS, and a wake-up that can preempt it)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)
    off_live_cpus()


def off_live_cpus() -> None:
    """When the live process is pinned to some of the CPUs (taskset, a CPU manager), run on the
    others: even at SCHED_IDLE a shadow on the live CPU runs in every gap between two live calls
    and leaves the live process its caches to refill (measured in bench/README.md,
    "A shadow configuration"). Unpinned, or pinned to every CPU there is, nothing changes; a CPU the
    cgroup does not allow is refused by the kernel, and the shadow stays where it was."""
    if not hasattr(os, "sched_getaffinity"):
        return
    live = os.sched_getaffinity(0)  # inherited from the live process at fork
    others = set(range(os.cpu_count() or 1)) - live
    if others:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, others)


SHADOW_PREFIX = "shadow:"
"""Before the logger name of every line the shadow configuration's process logs."""


def mark_as_shadow() -> None:
    """Name every record this process makes from now on as the shadow configuration's: its
    logger name gets :data:`SHADOW_PREFIX` (``shadow:caldera.plugins.overcommit``), in JSON and
    text alike. The shadow's process (this module) writes to the live process's stderr,
    and its plugins log what the live ones do ("resource in cluster is overused"): unmarked, a
    decision the shadow only considered reads as one Volcano was given. Set at record creation,
    not in a handler's filter, so that every handler sees one mark whatever the loggers and
    handlers a plugin sets up."""
    make = logging.getLogRecordFactory()

    def shadow_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        record.name = SHADOW_PREFIX + record.name
        return record

    logging.setLogRecordFactory(shadow_record)


def main(
    path: str,
    inbox: Connection,
    outbox: Connection,
    live_keys: frozenset[str] = frozenset(),
    cluster: bool = False,
    activity: LiveActivity | None = None,
) -> None:
    """The process's entry point: answer until the parent says stop or goes away.
    ``live_keys``: the live configuration's shareable data sources at start; ``activity``: the
    live side's marks (app/shadow/gate.py): each call is evaluated, and the reports sent, only
    while the live side is idle."""
    parent = os.getppid()

    def wait_idle() -> None:
        if activity is not None:  # a parent that ended no longer marks: no waiting for it
            activity.wait_idle(lambda: os.getppid() != parent)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the parent, which ends us
    mark_as_shadow()  # its lines share the live process's stderr: say whose they are
    lowest_priority()
    reports = Reports(outbox)
    evaluator = Evaluator(Path(path), reports.append, live_keys, cluster)
    evaluator.reload()
    done = 0
    while True:
        try:
            if reports.waiting:
                wait_idle()  # the parent's receiving thread takes its GIL to apply them
            reports.send()
        except OSError:
            return
        try:
            # A message of no kind this process knows raises here (MessageError) and ends it:
            # the raw bytes after it could not be told from the next message.
            message = to_child(inbox.recv_bytes())
            match message:
                case Stop():
                    return
                case Share():
                    try:
                        evaluator.share(message.keys, message.states)
                    except Exception as exc:  # a bug here must not end the shadow either
                        logger.exception("the shadow failed to take the live data sources")
                        evaluator.send(Failure("open", OPEN, describe(exc)))
                    continue
                case State():
                    evaluator.receive_state(inbox.recv_bytes())
                    continue
                case Batch():
                    calls = message.calls
                case _:
                    assert_never(message)
            # Every body read before any is evaluated: the parent holds them until then.
            bodies = [read_exactly(inbox.fileno(), call.length) for call in calls]
        except (EOFError, OSError):
            return
        for call, body in zip(calls, bodies, strict=True):
            if not call.verb:
                evaluator.dropped(call.session)
                continue
            wait_idle()
            try:
                evaluator.handle(call.session, call.verb, body, call.live)
            except Exception as exc:  # a bug here must not end the shadow
                logger.exception("the shadow failed on %s", call.verb)
                evaluator.send(Failure("verb", call.verb, describe(exc)))
            done += call.size
        reports.append(Done(done))
