"""``caldera serve --record DIR``: every request and answer of every session, on disk, for
``caldera replay`` (app/commands/replay.py).

Layout, one directory per session (a new one at each onSessionOpen; verbs before the first go
to ``session-000000``)::

    DIR/session-000001/index.jsonl                     one line per request, in answer order
    DIR/session-000001/000001-onSessionOpen.request.json   the body exactly as received
    DIR/session-000001/000001-onSessionOpen.response.json  the answer exactly as sent

An index line: ``{"seq", "verb", "time", "status", "request", "response"}``; ``time`` is the
wall time the request was answered at (RFC 3339, microseconds), which every plugin of that
request saw as "now", so a replay can hand plugins the same clock.

Off by default, and then absent: the app routes to the plain :class:`~app.extender.Extender`
and the session clock is ``utc_now``, so not recording costs nothing. When on, answers are
computed exactly as without it: the recorder only freezes "now" for the length of one request
(plugins read the time at which the request arrived rather than a few microseconds later) and
hands the bytes to a writer thread, so the event loop does not wait for the disk. Files are
0600 in 0700 directories, because bodies hold whole pod specs (env values, annotations, image
names). After ``max_bytes`` of bodies and answers, recording stops with a warning.

``sessionState: cluster``: Volcano posts no onSessionOpen; each session opens at its first call
on a state derived from the watched cluster. The recorder writes that state as the session's
onSessionOpen (the ``OnSessionOpenRequest`` the session was opened on, in Volcano's JSON), its
index line marked ``"derived": true``, before the call that opened it; ``caldera replay`` then
opens the session on it as on a snapshot and answers as the live session did. The writer
thread encodes it (JSON of the whole state: ~0.5 s and ~37 MB a session at 10,000 pods, the
cost of this opt-in debugging feature), entry by entry so that the event loop gets the GIL back
within Python's switch interval whenever it wants it; its bytes count towards ``max_bytes``
once written.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from app.cluster_state.encode import encode_state
from app.errors import AnswerError, CalderaError
from app.extender import Extender
from app.session_events import Opened, SessionListener
from app.wire import Body
from plugins.api.base import utc_now
from plugins.api.extension_points import Verb
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.record")

INDEX = "index.jsonl"
OPEN = Verb.ON_SESSION_OPEN
DERIVED_OPEN_ANSWER = b"{}"
DEFAULT_MAX_BYTES = 1 << 30
"""1 GiB: about a dozen cycles of a 100-node cluster with victim and job plugins."""


class RecordError(Exception):
    """The record directory cannot be used."""


def answer_of(extender: Extender, verb: str, body: Body) -> tuple[int, bytes]:
    """The status and bytes the HTTP layer would send for ``verb`` (app/server/routes/verbs.py)."""
    try:
        return 200, extender.handle(verb, body)
    except CalderaError as exc:
        return exc.status, msgspec.json.encode(exc.answer(verb))
    except Exception as exc:
        error = AnswerError(f"internal error: {type(exc).__name__}")
        return error.status, msgspec.json.encode(error.answer(verb))


def session_directory(number: int) -> str:
    return f"session-{number:06d}"


@dataclass(slots=True)
class Entry:
    session: int
    seq: int
    verb: str
    time: datetime
    status: int
    request: Body
    response: bytes
    state: OnSessionOpenRequest | None = None
    """A derived session's state (``request`` empty): encoded by the writer thread."""


class Recorder:
    """Writes what :class:`RecordingExtender` hands it, in order, from one thread."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_failure: Callable[[str], None] | None = None,
    ):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.written = 0
        """Bytes of the calls recorded (the event loop's count)."""
        self.written_derived = 0
        """Bytes of cluster-mode sessions' derived states (the writer thread's count, known
        only once encoded: the next call recorded checks the cap with it)."""
        self.stopped = False
        self.session = 0
        self.seq = 0
        self.now: datetime | None = None
        self.on_failure = on_failure
        """Told why recording stopped on a write error (``app/server/features.py``), from the
        writer thread; without it, the reason is logged."""
        self._open_directory()
        self._queue: queue.Queue[Entry | None] = queue.Queue()
        self._made: set[int] = set()
        self._thread = threading.Thread(target=self._write_loop, name="caldera-record")
        self._thread.daemon = True
        self._thread.start()
        logger.warning(
            "RECORDING every extender request and answer to %s (up to %d bytes). The bodies"
            " hold whole pod specs: env values, annotations, images. Treat the directory as a"
            " secret and delete it when done.",
            self.directory,
            max_bytes,
        )

    def _open_directory(self) -> None:
        """An empty (or new) directory is recorded into; one already in use — the last start's
        recording, after a container restart with the same emptyDir — gets a fresh
        ``run-<UTC time>-<pid>`` subdirectory, so recordings are never mixed and a restart
        never stops the sidecar from starting (``caldera replay DIR`` replays every run)."""
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if any(self.directory.iterdir()):
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
                self.directory = self.directory / f"run-{stamp}-{os.getpid()}"
                self.directory.mkdir(mode=0o700)
            os.chmod(self.directory, 0o700)
        except OSError as exc:
            raise RecordError(f"record directory {self.directory}: {exc}") from None

    def clock(self) -> datetime:
        """The sessions' clock: the current request's time while one is answered."""
        return self.now or utc_now()

    def record(
        self, verb: str, time: datetime, status: int, request: Body, response: bytes
    ) -> None:
        if self.stopped:
            return
        size = len(request) + len(response)
        if self.written + self.written_derived + size > self.max_bytes:
            self.stopped = True
            logger.warning(
                "recording stopped: %s would pass the cap of %d bytes (%d written); Caldera"
                " keeps serving",
                verb,
                self.max_bytes,
                self.written + self.written_derived,
            )
            return
        self.written += size
        self._put(Entry(0, 0, verb, time, status, request, response))

    def record_derived(self, time: datetime, state: OnSessionOpenRequest) -> None:
        """Cluster mode: a session opened at this call on ``state``, recorded as its
        onSessionOpen (encoded on the writer thread)."""
        if self.stopped:
            return
        if self.written + self.written_derived > self.max_bytes:
            self.stopped = True
            logger.warning(
                "recording stopped: the derived sessions' states passed the cap of %d bytes;"
                " Caldera keeps serving",
                self.max_bytes,
            )
            return
        self._put(Entry(0, 0, OPEN, time, 200, b"", DERIVED_OPEN_ANSWER, state))

    def _put(self, entry: Entry) -> None:
        if entry.verb == OPEN:
            self.session += 1
            self.seq = 0
        self.seq += 1
        entry.session, entry.seq = self.session, self.seq
        self._queue.put(entry)

    def close(self) -> None:
        """Write everything queued, then stop the writer thread."""
        self._queue.put(None)
        self._thread.join()

    def _write_loop(self) -> None:
        while (entry := self._queue.get()) is not None:
            try:
                self._write(entry)
            except OSError as exc:
                self.stopped = True
                problem = f"writing to {self.directory} failed: {exc}"
                if self.on_failure is not None:
                    self.on_failure(problem)
                else:
                    logger.error("recording stopped: %s", problem)
                while self._queue.get() is not None:  # drain what is queued, keep serving
                    pass
                return

    def _write(self, entry: Entry) -> None:
        derived = entry.state is not None
        if entry.state is not None:
            entry.request = encode_state(entry.state)
            entry.state = None
            self.written_derived += len(entry.request)
        directory = self.directory / session_directory(entry.session)
        if entry.session not in self._made:
            directory.mkdir(mode=0o700)
            self._made.add(entry.session)
        stem = f"{entry.seq:06d}-{entry.verb}"
        request, response = f"{stem}.request.json", f"{stem}.response.json"
        _write_private(directory / request, entry.request)
        _write_private(directory / response, entry.response)
        line = {
            "seq": entry.seq,
            "verb": entry.verb,
            "time": entry.time.isoformat(timespec="microseconds"),
            "status": entry.status,
            "request": request,
            "response": response,
        }
        if derived:
            line["derived"] = True
        _write_private(directory / INDEX, json.dumps(line).encode() + b"\n", append=True)


def _write_private(path: Path, data: Body, append: bool = False) -> None:
    """Write ``data`` to a file only its owner can read (0600 whatever the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_EXCL)
    with open(os.open(path, flags, 0o600), "wb") as file:
        file.write(data)


class RecordingExtender(SessionListener):
    """Answers as the extender it wraps and hands each exchange to the recorder; listens to its
    sessions for the ones opened on a derived state."""

    def __init__(self, extender: Extender, recorder: Recorder, cluster: bool = False) -> None:
        self.extender = extender
        self.recorder = recorder
        self.cluster = cluster
        """``sessionState: cluster``: each session's derived state is recorded as its
        onSessionOpen (see the module's docstring), and a snapshot Volcano still posts is not
        (it is not read)."""
        self._derived: OnSessionOpenRequest | None = None
        """The state the call being answered opened its session on, if it did."""
        extender.listeners.add(self)

    def opened(self, session: Opened) -> None:
        if session.derived:
            self._derived = session.state

    def routes(self) -> dict[str, str]:
        return self.extender.routes()

    def answers_first(self, verb: str, body: Body) -> bool:
        return self.extender.answers_first(verb, body)

    def handle(self, verb: str, body: Body) -> bytes:
        now = utc_now()
        self.recorder.now = now
        self._derived = None
        try:
            answer = self.extender.handle(verb, body)
        except CalderaError as exc:
            self._derived_open(now)
            self.recorder.record(verb, now, exc.status, body, msgspec.json.encode(exc.answer(verb)))
            raise
        except Exception as exc:
            self._derived_open(now)
            error = AnswerError(f"internal error: {type(exc).__name__}")
            self.recorder.record(
                verb, now, error.status, body, msgspec.json.encode(error.answer(verb))
            )
            raise
        finally:
            self.recorder.now = None
        self._derived_open(now)
        if self.cluster and verb == OPEN:
            return answer  # a snapshot Volcano still posts was not read: not replayed either
        self.recorder.record(verb, now, 200, body, answer)
        return answer

    def _derived_open(self, now: datetime) -> None:
        """Record the session this call opened on a derived state, before the call. A session
        before the watch listed has no state and opens nothing: nothing opens it in the replay
        either (onSessionClose closed the last one), so its calls are sessionless there too."""
        state, self._derived = self._derived, None
        if state is not None:
            self.recorder.record_derived(now, state)
