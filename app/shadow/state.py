"""A cluster-mode session's derived state, handed to the shadow configuration's process as a
delta from the previous session's (``sessionState: cluster``, issue 36; the shadow, issue 38).

In cluster mode Volcano posts no onSessionOpen: the live process derives each session's state
from the objects it watches (:mod:`app.cluster_state.incremental`). The shadow must evaluate
the session on that same view, so the live side hands it over; not whole (a full state is
tens of MB of JSON at 10,000 pods), but as what changed since the state last handed over. The
incremental derivation keeps an unchanged job, node or queue the very same object from one
session to the next (and plugins never mutate them), so an identity test per key finds what
changed: the sending thread (``app/shadow/service.py``) runs :class:`DeltaEncoder` off the event
loop, and the shadow's process applies the delta to its copy of the previous state
(:class:`DeltaDecoder`).

Every delta names the state it applies to (``base``). The process applies one only onto that
state; otherwise (a delta lost with a process restart, a state the process could not apply) it
answers None (the session is skipped, never evaluated on a stale base) and asks for a full one,
which the sending thread then sends (``base`` 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from app.cluster_state.encode import SECTIONS, JsonWriter, go_on
from schemas.api import JobInfo, NamespaceInfo, NodeInfo, QueueInfo
from schemas.requests import OnSessionOpenRequest

BUILT_EVERY_SESSION = frozenset({"NamespaceInfo"})
"""Maps the derivation builds anew each session (one small entry per namespace with a quota):
compared by value, not identity."""
FULL = 0
"""``base`` of a delta that is the whole state."""


class StateDelta(msgspec.Struct, gc=False):
    """State ``number``: state ``base`` with ``changed`` set and ``removed`` dropped; ``order``,
    per map whose keys the delta alone would leave in another order, the order (plugins
    iterate the maps in Volcano's order, which the derivation keeps)."""

    number: int
    base: int
    Jobs: dict[str, JobInfo] = {}
    Nodes: dict[str, NodeInfo] = {}
    Queues: dict[str, QueueInfo] = {}
    NamespaceInfo: dict[str, NamespaceInfo] = {}
    removed: dict[str, list[str]] = {}
    order: dict[str, list[str]] = {}


class DeltaEncoder:
    """The live side's: each session's delta from the state last encoded (the sending
    thread's, one at a time)."""

    def __init__(self) -> None:
        self.number = 0
        self._sent: dict[str, dict[str, Any]] | None = None
        """Each map as the process will have it once the last delta is applied."""
        self.changed = 0
        """Entries the last delta carried (changed or added), for the figures."""
        self.changed_whole = False
        """Whether the last delta was the whole state."""

    def full_next(self) -> None:
        """The process asked for the whole state: the next delta is one."""
        self._sent = None

    def encode(self, state: OnSessionOpenRequest, between: Callable[[], None] = go_on) -> bytearray:
        """The delta from the state last encoded to ``state``, a :class:`StateDelta`'s JSON;
        ``between`` is called after each entry's encode (the sending thread waits there while
        the live side is busy)."""
        previous = self._sent
        self.number += 1
        base = FULL if previous is None else self.number - 1
        out = JsonWriter(between)
        out.raw(b'{"number":%d,"base":%d' % (self.number, base))
        sent: dict[str, dict[str, Any]] = {}
        removed: dict[str, list[str]] = {}
        order: dict[str, list[str]] = {}
        changed = 0
        for section in SECTIONS:
            new: dict[str, Any] = getattr(state, section) or {}
            out.raw(b',"%s":' % section.encode())
            if previous is None:
                out.map(new)
                sent[section] = dict(new)  # a copy: the live session's maps are not ours
                changed += len(new)
                continue
            mirror = previous[section]
            if section in BUILT_EVERY_SESSION:
                updates = {key: value for key, value in new.items() if mirror.get(key) != value}
            else:
                updates = {k: value for k, value in new.items() if mirror.get(k) is not value}
            added = sum(1 for key in updates if key not in mirror)
            # Every key held is still there exactly when the counts add up.
            gone = [] if len(mirror) + added == len(new) else [k for k in mirror if k not in new]
            for key in gone:
                del mirror[key]
            mirror.update(updates)  # a replaced key keeps its place, a new one goes last
            out.map(updates)
            if gone:
                removed[section] = gone
            if list(mirror) != list(new):
                order[section] = list(new)
                mirror = dict(new)
            sent[section] = mirror
            changed += len(updates)
        out.raw(b',"removed":')
        out.value(removed)
        out.raw(b',"order":')
        out.value(order)
        out.raw(b"}")
        self._sent = sent
        self.changed = changed
        self.changed_whole = previous is None
        return out.data


class DeltaDecoder:
    """The shadow's side: the state of the latest delta applied, built into each session's
    ``OnSessionOpenRequest``."""

    def __init__(self) -> None:
        self.number = FULL
        self._maps: dict[str, dict[str, Any]] | None = None
        self._decoder = msgspec.json.Decoder(StateDelta)

    def apply(self, data: bytes) -> OnSessionOpenRequest | None:
        """The session's state, or None when ``data`` does not apply to the state held (then
        nothing is held until a full state comes)."""
        delta = self._decoder.decode(data)
        if delta.base != FULL and (self._maps is None or delta.base != self.number):
            self._maps, self.number = None, FULL
            return None
        maps: dict[str, dict[str, Any]] = {}
        for section in SECTIONS:
            updates: dict[str, Any] = getattr(delta, section)
            if delta.base == FULL or self._maps is None:
                current = updates
            else:
                # A copy: the previous session's request keeps its maps as they were.
                current = dict(self._maps[section])
                for key in delta.removed.get(section, ()):
                    current.pop(key, None)
                current.update(updates)
            order = delta.order.get(section)
            if order is not None:
                current = {key: current[key] for key in order}
            maps[section] = current
        self._maps, self.number = maps, delta.number
        return OnSessionOpenRequest(**maps)

    def lose(self) -> None:
        """Forget the state held (a session dropped before its delta was applied)."""
        self._maps, self.number = None, FULL
