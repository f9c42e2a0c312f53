"""app/shadow/freed_memory.py: with a shadow, the live process holds a session's bodies until the
batch is handed over; the memory they free must serve the next session's bodies without new page
faults (measured: 57 minor faults a 227 KiB preemptable call, 0 once freed memory is kept)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.shadow import freed_memory

# A live process's sessions in miniature: 200 bodies of 227 KiB held (the shadow's queue),
# then released (the batch handed over), three sessions; the page faults of the last one.
SESSIONS = """
import resource, sys
from app.shadow.freed_memory import keep_freed_memory
if sys.argv[1] == "kept":
    assert keep_freed_memory(256 << 20)
held = []
for session in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        held.append(bytes(bytearray(227 * 1024)))
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    held.clear()
print(faults)
"""


def last_sessions_faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SESSIONS, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_held_and_released_sessions_memory_serves_the_next_without_page_faults() -> None:
    # Without: each session's bodies take fresh pages (glibc gave the last ones back).
    assert last_sessions_faults("default") > 200 * 20
    # With: the last session's freed bodies are reused; a handful of faults at most.
    assert last_sessions_faults("kept") < 200


def test_keeping_freed_memory_takes_on_glibc() -> None:
    # In a process of its own: the settings would stay in the test runner's allocator.
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import {freed_memory.__name__} as m; print(m.keep_freed_memory(256 << 20))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == str(sys.platform.startswith("linux"))
