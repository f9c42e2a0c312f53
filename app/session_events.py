"""How anything follows sessions: one listener interface, told by the one place that opens and
closes them (:class:`~app.extender.Extender`).

A session opens (from Volcano's snapshot, from the state cluster mode derives, or from the state
a shadow configuration is handed), may fail to open, sees Volcano's placements and evictions
(allocate, deallocate) and closes. The live reload switches configurations at the boundary;
compare mode compares each snapshot; cluster mode and its self-audit follow the placements; the
recorder and the shadow hear a session opened on a derived state. Each is a
:class:`SessionListener` registered once on the extender's :class:`SessionListeners`, in the
style of the decision stream (app/decisions.py): no wrapper counting sessions before and after a
call, no callback assigned after construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import PluginFailure
from schemas.api import TaskInfo
from schemas.requests import OnSessionOpenRequest

PLACEMENT_EVENTS = ("allocated", "deallocated")


@dataclass(frozen=True, slots=True)
class Opened:
    """A session that opened: its number, its state, and whether that state was derived from
    the cluster (``sessionState: cluster``, or a shadow handed the live one's) rather than
    posted by Volcano."""

    number: int
    state: OnSessionOpenRequest
    derived: bool


class SessionListener:
    """What follows sessions, from the one place that opens and closes them
    (:class:`~app.extender.Extender`). Each event is a no-op here: a listener overrides those it
    needs. Registered once, in order, on the extender's :class:`SessionListeners`: the live
    reload, compare and cluster modes (and the self-audit), the recorder and the shadow."""

    def boundary(self) -> None:
        """A session is about to open, before the previous one is dropped: the one moment a new
        configuration may take over."""

    def opened(self, session: Opened) -> None:
        """The session opened."""

    def open_failed(self, failure: PluginFailure) -> bool:
        """A plugin could not open it. True: the configuration that failed was just switched
        to and the previous one is back, so the session is opened again with it."""
        return False

    def allocated(self, task: TaskInfo) -> None:
        """allocateFunc: Volcano placed ``task`` (or rolled an eviction back)."""

    def deallocated(self, task: TaskInfo) -> None:
        """deallocateFunc: Volcano evicted ``task`` (or rolled a placement back)."""

    def closed(self) -> None:
        """onSessionClose: the session ended (after its answer)."""


class SessionListeners(SessionListener):
    """Every registered listener, told each event in the order they were added."""

    def __init__(self, *listeners: SessionListener) -> None:
        self._listeners: list[SessionListener] = []
        self.follow_placements = False
        """Whether a listener hears allocate/deallocate: only then is their body decoded
        when no plugin answers them."""
        for listener in listeners:
            self.add(listener)

    def add(self, listener: SessionListener) -> None:
        self._listeners.append(listener)
        kind = type(listener)
        self.follow_placements = self.follow_placements or any(
            getattr(kind, event) is not getattr(SessionListener, event)
            for event in PLACEMENT_EVENTS
        )

    def __len__(self) -> int:
        return len(self._listeners)

    def boundary(self) -> None:
        for listener in self._listeners:
            listener.boundary()

    def opened(self, session: Opened) -> None:
        for listener in self._listeners:
            listener.opened(session)

    def open_failed(self, failure: PluginFailure) -> bool:
        # The first that can recover it does; the rest are not asked.
        return any(listener.open_failed(failure) for listener in self._listeners)

    def allocated(self, task: TaskInfo) -> None:
        for listener in self._listeners:
            listener.allocated(task)

    def deallocated(self, task: TaskInfo) -> None:
        for listener in self._listeners:
            listener.deallocated(task)

    def closed(self) -> None:
        for listener in self._listeners:
            listener.closed()
