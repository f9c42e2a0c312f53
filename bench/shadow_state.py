"""What handing a cluster-mode session's state to the shadow configuration costs (issue 36 with
issue 38; app/shadow/state.py): per session, the sending thread's encode of the delta from the
previous session's state (its milliseconds and bytes), and the shadow process's apply of it,
on the synthetic store of ``bench.cluster_state`` with 0, 10 and 100 pods changed between two
sessions, and once for the whole state (the first session, or after a lost delta).

The event loop's own share is not here: it appends the session's state (a reference) to the
shadow's queue, as it appends every call; the encode runs on the sending thread at the
session's onSessionClose, one entry at a time (msgspec holds the GIL for one encode; between
two, the event loop gets it back within Python's switch interval): ``entry_encode_ms``
is what one piece takes. A whole state's encode at 10,000 pods takes 0.1 s on a quiet machine
and several times that on a busy one, so the next session can begin during it:
``calls_during_whole_encode``
times a live call (one job decoded and encoded again, due every :data:`CALL_EVERY_SECONDS`,
timed from when it was due, so a wait for the GIL counts) on this thread while another encodes
the whole state: with no encode, with an encode that never stops, and with one that stops
between two entries while the session is in progress, as the shadow's sending thread does
(app/shadow/service.py ``_while_live_is_busy``, on the live side's marks of app/shadow/gate.py).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from app.cluster_state.encode import SECTIONS
from app.shadow.gate import CLOSE, LiveActivity
from app.shadow.service import SEND_AFTER_SECONDS
from app.shadow.state import DeltaDecoder, DeltaEncoder
from bench.cluster_state import CHANGED_PODS, change_pods, emit, ms, populated_store
from schemas.api import JobInfo
from schemas.requests import OnSessionOpenRequest

CALL_EVERY_SECONDS = 0.002
CALLS = 150
"""A session's calls, begun with the encode: 0.3 s, longer than a whole state's encode at
10,000 pods on a quiet machine (0.1 s), so the encode that never stops runs wholly within it."""
VERB = "jobEnqueueable"


def _entry_encodes(state: OnSessionOpenRequest) -> dict[str, float]:
    """One entry's encode, median and 99th percentile: how long the sending thread holds the
    GIL in one piece (app/shadow/state.py encodes entry by entry). Wall time: on a loaded
    machine the maximum is a preemption, not the encode."""
    times: list[float] = []
    for section in SECTIONS:
        for value in (getattr(state, section) or {}).values():
            started = time.perf_counter()
            msgspec.json.encode(value)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "median": round(statistics.median(times), 3),
        "p99": round(times[int(len(times) * 0.99)], 3),
    }


def _session(job: bytes, activity: LiveActivity) -> list[float]:
    """A live session's calls on this thread, each marked as ``ShadowedAnswers`` marks a live
    verb, in ms from when each was due."""
    decoder = msgspec.json.Decoder(JobInfo)
    encoder = msgspec.json.Encoder()
    times: list[float] = []
    start = time.perf_counter()
    for i in range(CALLS):
        due = start + i * CALL_EVERY_SECONDS
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        activity.answering(VERB)
        encoder.encode(decoder.decode(job))
        activity.answered(VERB)
        times.append((time.perf_counter() - due) * 1000)
    return times


def _calls_during_whole_encode(state: OnSessionOpenRequest) -> dict[str, dict[str, float]]:
    """A live call's time during a whole state's encode on another thread, three ways (see the
    module docstring): p50, p99 and the longest, ms. The encode that stops waits as the shadow's
    sending thread does (``LiveActivity.wait_idle_woken``, woken at the session's close)."""
    job = msgspec.json.encode(next(iter((state.Jobs or {}).values())))
    activity = LiveActivity(multiprocessing.get_context())
    closed = threading.Event()
    ways: dict[str, Callable[[], object] | None] = {
        "no_encode": None,
        "encode_never_stops": lambda: DeltaEncoder().encode(state),
        "encode_stops_in_session": lambda: DeltaEncoder().encode(
            state, lambda: activity.wait_idle_woken(closed, SEND_AFTER_SECONDS)
        ),
    }
    figures: dict[str, dict[str, float]] = {}
    for way, encode in ways.items():
        closed.clear()
        activity.answering(VERB)  # the session has begun when the encode starts
        activity.answered(VERB)
        worker = threading.Thread(target=encode) if encode is not None else None
        if worker is not None:
            worker.start()
        times = sorted(_session(job, activity))
        activity.answering(CLOSE)  # the session closes; a stopped encode goes on to its end
        activity.answered(CLOSE)
        closed.set()
        if worker is not None:
            worker.join()
        figures[way] = {
            "p50": round(statistics.median(times), 3),
            "p99": round(times[int(len(times) * 0.99)], 3),
            "max": round(times[-1], 3),
        }
    return figures


def measure(pods: int, nodes: int, repeats: int = 5) -> dict[str, Any]:
    store = populated_store(pods, nodes)
    encoder, decoder = DeltaEncoder(), DeltaDecoder()
    figures: dict[str, Any] = {"pods": pods, "nodes": nodes}
    encode: list[float] = []
    apply: list[float] = []
    size = 0
    for _ in range(repeats):
        store.close_session()
        state = store.open_session().snapshot
        encoder.full_next()
        started = time.perf_counter()
        data = encoder.encode(state)
        encode.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        decoder.apply(data)
        apply.append((time.perf_counter() - started) * 1000)
        size = len(data)
    figures["whole"] = {
        "encode_ms": ms(encode),
        "apply_ms": ms(apply),
        "bytes": size,
        "entry_encode_ms": _entry_encodes(state),
        "calls_during_whole_encode_ms": _calls_during_whole_encode(state),
    }
    session = 0
    for changed in CHANGED_PODS:
        encode, apply, sizes, entries = [], [], [], []
        for _ in range(repeats * 4):
            session += 1
            store.close_session()
            change_pods(store, pods, nodes, changed, session)
            state = store.open_session().snapshot
            started = time.perf_counter()
            data = encoder.encode(state)
            encode.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            applied = decoder.apply(data)
            apply.append((time.perf_counter() - started) * 1000)
            assert applied is not None, "a delta in order applies"
            sizes.append(len(data))
            entries.append(encoder.changed)
        figures[f"changed_{changed}_pods"] = {
            "encode_ms": ms(encode),
            "apply_ms": ms(apply),
            "bytes_median": int(statistics.median(sizes)),
            "entries_median": int(statistics.median(entries)),
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shadow_state", description=__doc__)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5, help="sessions per figure")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    return emit(lambda: measure(args.pods, args.nodes, args.repeats), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
