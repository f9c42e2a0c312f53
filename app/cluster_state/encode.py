"""A session's state as the JSON of the onSessionOpen body Volcano would have posted, written a
piece at a time (:class:`JsonWriter`): ``serve --record`` writes a cluster-mode session's state
with :func:`encode_state` (``app/server/record.py``), and the shadow's delta of it
(``app/shadow/state.py``) is written the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from schemas.api import NodeInfo
from schemas.requests import OnSessionOpenRequest

SECTIONS = ("Jobs", "Nodes", "Queues", "NamespaceInfo")
"""The session's maps, each keyed as Volcano keys it."""


def go_on() -> None:
    """Encode without stopping between entries (a benchmark, a test)."""


class JsonWriter:
    """JSON written a piece at a time into one buffer, ``between`` called after each map entry:
    msgspec holds the GIL for the whole of one encode, and a whole state takes a hundred
    milliseconds and more at 10,000 pods (its final assembly alone, one encode of the entries
    already encoded, took 25 ms of the 130). Entry by entry, the event loop gets the GIL back
    within Python's switch interval (5 ms) whenever it wants it, and the sending thread's
    ``between`` stops the encode for as long as the live side is in a session, so that only the
    call that began it waits for the GIL, not every call of the session (bench/README.md, "A
    shadow in cluster mode"). A large ``bytearray`` grows in place (``mremap``), never copied
    whole."""

    def __init__(self, between: Callable[[], None] = go_on) -> None:
        self.data = bytearray()
        self.between = between
        self._encode = msgspec.json.Encoder().encode

    def raw(self, piece: bytes) -> None:
        self.data += piece

    def value(self, value: Any) -> None:
        self.data += self._encode(value)

    def map(self, entries: dict[str, Any]) -> None:
        """``entries`` as a JSON object, in their order."""
        data, encode, between = self.data, self._encode, self.between
        data += b"{"
        for n, (key, value) in enumerate(entries.items()):
            if n:
                data += b","
            data += encode(key)
            data += b":"
            data += encode(as_sent(value))
            between()
        data += b"}"


_NULL = b"null"


def as_sent(value: Any) -> Any:
    """``value`` as Volcano's JSON holds it. A derived node keeps its tasks decoded
    (derive.py ``_set_tasks``) and its raw ``Tasks`` bytes absent, which msgspec writes as
    ``null``: such a node is written with its tasks, as Volcano's snapshot carries them (a
    recorded or shadowed plugin reading ``node.Tasks`` sees what the live one does)."""
    if type(value) is NodeInfo and bytes(value.TasksRaw) == _NULL:
        tasks = value.__dict__.get("Tasks")
        if tasks is not None:  # {} for a node without tasks, as Volcano's NewNodeInfo makes it
            return msgspec.structs.replace(value, TasksRaw=msgspec.Raw(msgspec.json.encode(tasks)))
    return value


def encode_state(state: OnSessionOpenRequest) -> bytearray:
    """``state`` as the onSessionOpen body Volcano would have posted (its JSON), written entry
    by entry for the reason :class:`JsonWriter` gives: ``serve --record``'s writer thread writes
    a cluster-mode session's state with it (``app/server/record.py``)."""
    out = JsonWriter()
    for n, section in enumerate(SECTIONS):
        out.raw(b'%s"%s":' % (b"{" if n == 0 else b",", section.encode()))
        out.map(getattr(state, section) or {})
    out.raw(b"}")
    return out.data
