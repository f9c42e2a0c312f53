"""When the shadow may work: only while the live side is idle (``app/shadow/service.py``).

Measured (bench/README.md, "A shadow configuration"): even at SCHED_IDLE and on another CPU, a
shadow that decodes and evaluates a session while the live process answers the next one costs
the live verbs up to +20% at p50 (the two share the last-level cache and the memory bandwidth,
and the hand-over itself runs in the live process). So the live process marks, in memory shared
with the shadow's process, when a session is in progress (its onSessionOpen .. its
onSessionClose) and when a verb is being answered; the shadow's sending thread hands a batch
over, and the shadow's process evaluates a call, only while the live side is idle. Volcano's
traffic is a short session per schedule period: a shadow working in the gaps evaluates every
session; under a back-to-back load it falls behind, and its queue's bound drops whole sessions
(``caldera_shadow_dropped_sessions_total``), never the live side's time.

A mark is a plain store into a shared ``double`` (no lock, no system call: tens of
nanoseconds). A session that never closes (a client that stops mid-session) is taken as over
once no call came for :data:`QUIET_SESSION_SECONDS`, so the shadow is not held off forever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from plugins.api.extension_points import Verb

CLOSE = Verb.ON_SESSION_CLOSE
QUIET_SESSION_SECONDS = 1.0
"""A session with no call for this long counts as idle though it did not close: Volcano's
schedule period is 1 s, its session a burst at the start of it."""
POLL_SECONDS = 0.005
"""How often a waiting shadow looks again: the delay before it starts in a gap, not a cost to
the live side (it reads a shared value, on the shadow's own CPU)."""

_IN_SESSION = 0
_ANSWERING = 1
_LAST_CALL_ENDED = 2
_RELEASED = 3


class LiveActivity:
    """Shared between the live process (which marks) and the shadow's (which reads): made before
    the shadow's process starts, passed to it as an argument."""

    def __init__(self, context: Any, quiet_session_seconds: float = QUIET_SESSION_SECONDS) -> None:
        self._cells: Any = context.RawArray("d", 4)
        """Whether a session is in progress, whether a verb is being answered (1.0 or 0.0),
        and when the last call ended (``time.monotonic()``, one clock for every process); and
        whether the live side stopped (:meth:`release`)."""
        self.quiet_session_seconds = quiet_session_seconds

    # --- the live side: around each verb's answer, on the event loop ---------------------------

    def answering(self, verb: str) -> None:
        cells = self._cells
        cells[_ANSWERING] = 1.0
        if verb != CLOSE:
            # Any verb but onSessionClose is within a session: in cluster mode there is no
            # onSessionOpen, the first call after a close opens the session.
            cells[_IN_SESSION] = 1.0

    def answered(self, verb: str) -> None:
        cells = self._cells
        cells[_LAST_CALL_ENDED] = time.monotonic()
        if verb == CLOSE:
            cells[_IN_SESSION] = 0.0
        cells[_ANSWERING] = 0.0

    def release(self) -> None:
        """The live side is stopping: idle from now on, so nothing waits for it."""
        self._cells[_RELEASED] = 1.0

    # --- the shadow's side ---------------------------------------------------------------------

    def idle(self, now: float | None = None) -> bool:
        """No verb being answered, and no session in progress (or one quiet for
        :attr:`quiet_session_seconds`)."""
        cells = self._cells
        if cells[_RELEASED]:
            return True
        if cells[_ANSWERING]:
            return False
        if not cells[_IN_SESSION]:
            return True
        now = time.monotonic() if now is None else now
        return bool(now - cells[_LAST_CALL_ENDED] >= self.quiet_session_seconds)

    def wait_idle_woken(self, wake: threading.Event, look_again: float) -> None:
        """Wait until the live side is idle, woken by ``wake`` (set when a session closes) or
        looking again every ``look_again`` seconds: for a thread of the live process, which must
        not poll (each wake-up takes the GIL from the live verbs: ``app/shadow/service.py``)."""
        while not self.idle():
            wake.wait(look_again)
            wake.clear()

    def wait_idle(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Wait until the live side is idle (True), or until ``stop()`` says to give up (False)."""
        while not self.idle():
            if stop():
                return False
            time.sleep(POLL_SECONDS)
        return True
