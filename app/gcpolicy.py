"""Garbage-collector policy for the snapshot.

An onSessionOpen body becomes millions of small objects every second. CPython's cyclic collector
would scan them again and again while they are being built (a third of the ingest time for a
75 MiB cluster) and during every later verb. The snapshot holds no reference cycles (msgspec
structs are built with ``gc=False``; dicts, lists and strings are freed by reference counting),
so the collector has nothing to find there. While a snapshot is built the collector is paused,
and afterwards the new objects are moved to the permanent generation with ``gc.freeze()`` so no
collection scans them; they are still freed by reference counting when the session is replaced.
Everything is unfrozen at the next session, and every ``FULL_COLLECTION_EVERY`` sessions a full
collection runs on the (then small) heap, so cyclic garbage from elsewhere is never kept for long.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FULL_COLLECTION_EVERY = 60


class SnapshotGC:
    def __init__(self, full_every: int = FULL_COLLECTION_EVERY) -> None:
        self.full_every = full_every
        self.builds = 0

    @contextmanager
    def building(self) -> Iterator[None]:
        """Wrap the decoding and building of a snapshot (the previous one already dropped)."""
        gc.unfreeze()
        self.builds += 1
        if self.builds % self.full_every == 0:
            gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            gc.freeze()
            if enabled:
                gc.enable()
