"""The buffer a large request body is received into, kept for the next large body.

A body is received into a fresh buffer of its declared length (``app/server/connections.py``). For a
body above the allocator's mmap threshold (glibc maps anything over at most 32 MiB fresh from
the kernel and unmaps it on free) every page of that buffer is a page fault the first time the
socket writes into it: for a 75 MiB snapshot some 19,000 faults, which measured 60 % of the time
to receive it on loopback (55-62 ms, against 18-21 ms into a buffer already mapped; bench/README
"Hot-path changes"). Volcano sends a snapshot of about the same size every cycle, so the buffer
of the last large body is kept and the next large body is received into it.

Reuse must never overwrite a body something still reads: a ``msgspec.Raw`` decoded from it, a
``memoryview`` of it, the recorder's queue (``serve --record``), a request still being answered.
Every one of those holds a reference to the buffer, so the kept buffer is reused only when the
slot's own reference is the only one left, counted with ``sys.getrefcount`` against the count of
a buffer known to be held by nothing else, measured the same way when this module is imported
(the raw number differs between Python versions). Anything else gets a fresh buffer.

The cost is memory between cycles: RSS stays at the cycle's peak instead of dropping by the
body's size after each snapshot; the peak itself does not grow, because the kept buffer is the
one the next large body uses. One buffer is kept (one that does not fit the next large body is
freed before that body's buffer is allocated), so a cluster that shrinks lets go of its old size
at its next snapshot; until a large body comes, RSS stays at the largest one seen.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

LARGE_BODY_BYTES = 32 << 20
"""Bodies from this size are received into the kept buffer: glibc's largest mmap threshold.
Below it the allocator hands freed memory out again by itself (a 4.4 MiB body measured ~10
faults a request)."""


def _references(slot: list[bytearray]) -> int:
    return sys.getrefcount(slot[0])


_UNSHARED = _references([bytearray(1)])
"""What :func:`_references` counts for a buffer held by its slot alone."""


class BodyBuffers:
    """One server's kept buffer for large bodies (one per ``caldera serve``). ``kept`` hears the
    kept buffer's size after every large body (``caldera_body_buffer_bytes``); ``outcome`` hears
    what happened to it (one of :data:`app.metrics.BUFFER_OUTCOMES`,
    ``caldera_body_buffers_total``)."""

    def __init__(
        self,
        large: int = LARGE_BODY_BYTES,
        kept: Callable[[int], None] | None = None,
        outcome: Callable[[str], None] | None = None,
    ) -> None:
        self.large = large
        self.kept = kept
        self.outcome = outcome
        self._slot: list[bytearray] = []
        self.reused = 0
        """How many bodies were received into the kept buffer (for the tests and the bench)."""

    def get(self, length: int) -> bytearray:
        """A buffer of exactly ``length`` bytes whose contents nobody else reads."""
        if length < self.large:
            return bytearray(length)
        slot = self._slot
        if slot and _references(slot) == _UNSHARED:
            if _fits(slot[0], length):
                self.reused += 1
                self._count("reused")
                self._report(len(slot[0]))
                return slot[0]
            slot.clear()  # let go of it before its replacement is allocated, not after
            self._count("refit")
        elif slot:
            self._count("held")
            return bytearray(length)  # the kept one is in use: keep it for the next body
        else:
            self._count("first")
        fresh = bytearray(length)
        slot.append(fresh)
        self._report(length)
        return fresh

    def _count(self, what: str) -> None:
        if self.outcome is not None:
            self.outcome(what)

    def _report(self, size: int) -> None:
        if self.kept is not None:
            self.kept(size)


def _fits(buffer: bytearray, length: int) -> bool:
    """Resize ``buffer`` to ``length`` in place if it keeps its mapped pages. CPython gives a
    bytearray shrunk below half its allocation a new, smaller one; grown past its allocation it
    is reallocated with room to spare, which glibc does by remapping the same pages (``mremap``),
    so only the added tail is new. A snapshot grows or shrinks a little from cycle to cycle; one
    that more than halves or grows by more than an eighth gets a fresh buffer."""
    allocated = buffer.__alloc__()
    if not allocated // 2 <= length <= allocated + allocated // 8:
        return False
    size = len(buffer)
    if length < size:
        del buffer[length:]
    elif length > size:
        buffer += bytes(length - size)
    return True
