"""What handing a cluster-mode session's state to the shadow configuration costs (issue 36 with
issue 38; app/shadow_state.py): per session, the sending thread's encode of the delta from the
previous session's state (its milliseconds and bytes), and the shadow process's apply of it,
on the synthetic store of ``bench.cluster_state`` with 0, 10 and 100 pods changed between two
sessions, and once for the whole state (the first session, or after a lost delta).

The event loop's own share is not here: it appends the session's state (a reference) to the
shadow's queue, as it appends every call; the encode runs on the sending thread at the
session's onSessionClose, one entry at a time (msgspec holds the GIL for one encode; between
two, the event loop gets it back within Python's switch interval): ``entry_encode_ms``
is what one piece takes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import msgspec

from app.cluster_state.store import ClusterStore
from app.shadow_state import SECTIONS, DeltaDecoder, DeltaEncoder
from bench.cluster_state import CHANGED_PODS, changed_pod, emit, populated_store
from schemas.requests import OnSessionOpenRequest


def _ms(times: list[float]) -> dict[str, float]:
    return {"min": round(min(times), 2), "median": round(statistics.median(times), 2)}


def _change(store: ClusterStore, pods: int, nodes: int, changed: int, session: int) -> None:
    for k in range(changed):
        i = (session * 7919 + k * 97) % pods  # spread over nodes and jobs
        obj = changed_pod(i, nodes, session)
        store.pods.upsert(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", obj)


def _entry_encodes(state: OnSessionOpenRequest) -> dict[str, float]:
    """One entry's encode, median and 99th percentile: how long the sending thread holds the
    GIL in one piece (app/shadow_state.py encodes entry by entry). Wall time: on a loaded
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
        "encode_ms": _ms(encode),
        "apply_ms": _ms(apply),
        "bytes": size,
        "entry_encode_ms": _entry_encodes(state),
    }
    session = 0
    for changed in CHANGED_PODS:
        encode, apply, sizes, entries = [], [], [], []
        for _ in range(repeats * 4):
            session += 1
            store.close_session()
            _change(store, pods, nodes, changed, session)
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
            "encode_ms": _ms(encode),
            "apply_ms": _ms(apply),
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
