"""Keep freed memory for reuse: what a shadow configuration's live process needs
(app/shadow/service.py).

With a shadow, the live process holds each call's body until the session's batch is handed
over (after onSessionClose), so a new body cannot reuse the memory the last one freed: glibc
takes fresh pages from the kernel, and returns them (heap trim, ``munmap``) once the batch is
released. Measured with the evict plugins, 227 KiB preemptable bodies, 200 calls a session: 57
minor page faults a call with a shadow, 0 without; with the two settings below, 57 in the first
session and 0 from the second on (the freed bodies of the last session are reused), the same as
without a shadow. Each fault is a kernel entry and a zeroed page on the live verb's path.

``M_MMAP_THRESHOLD`` fixed at 32 MiB (glibc's maximum; a fixed value also turns off the
threshold's own adjustment) keeps every body below it in the heap, where a freed one is
reusable; larger ones are snapshots, whose buffer app/server/buffers.py keeps. ``M_TRIM_THRESHOLD``
keeps up to the shadow's queue bound of freed memory at the top of the heap instead of giving
it back after each batch: the process's RSS stays at the largest batch it held, which the
queue bound (``shadow_max_queued_bytes``) already sizes.

Tried and not kept: touching the whole bound at start, so that a session that never ends (where
nothing is freed) takes no fresh pages either. Back to back in one session it took
jobEnqueueable's p50 to 0.81 and its p99 to 0.64 of before, yet still +18% over a server without
a shadow (each held body is still memory the cache has not seen), and it left Volcano's shape
unchanged (0.99), where a session's freed bodies already serve the next: it would have cost every
sidecar with a shadow the bound in RSS from the start for a shape Volcano does not send
(bench/README.md, "A shadow configuration"). Nor a copy of each small body taken after its
answer, so that the body's buffer serves the next call: back to back in one session the copy
still lands in fresh memory, now in the gap before the next call, and there is none (p50
unchanged, p99 +13%, in one run of three servers; same place). Nor a ring of shared memory the
body was copied into and the shadow's process copied it out of during the session: the live
process took no fault, yet back to back the p50 stayed 16% over a server without a shadow, and
the copying out cost Volcano's shape its p99 (same place).

glibc only (``mallopt``); elsewhere nothing changes and :func:`keep_freed_memory` says so.
"""

from __future__ import annotations

import ctypes
import logging

logger = logging.getLogger("caldera.shadow")

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20
"""glibc's largest ``M_MMAP_THRESHOLD`` on a 64-bit system (``4 * 1024 * 1024 * sizeof(long)``)."""
INT_MAX = 2**31 - 1


def keep_freed_memory(trim_bytes: int) -> bool:
    """Set glibc's allocator to keep up to ``trim_bytes`` of freed memory for reuse and to
    serve bodies below 32 MiB from the heap. True when both settings took."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        logger.info("not glibc (no mallopt): a shadow's held bodies take fresh pages")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mmap_took: int = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
    trim_took: int = mallopt(M_TRIM_THRESHOLD, min(max(trim_bytes, 0), INT_MAX))
    took = mmap_took == 1 and trim_took == 1
    if not took:
        logger.warning("mallopt refused a setting: a shadow's held bodies may take fresh pages")
    return took
