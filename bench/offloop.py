"""``python -m bench.offloop``: what running each verb's hooks off the event loop would cost.

The probes must answer while a hook runs for seconds (issue 35). Two ways: the health listener
on a thread and loop of its own (what app/server/listeners.py does; the verbs' path is unchanged),
or every verb's plugin work handed to a worker thread and awaited. This measures the second's
price per verb: the median time of ``await loop.run_in_executor(pool, work)`` over the median
time of ``work()`` called in place, for a body of work as long as a verb's plugin work
(``--work-us``, 20 µs by default: a predicate over four plugins), on uvloop when installed, as
``caldera serve`` runs."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _work(microseconds: float) -> None:
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


async def _measure(calls: int, microseconds: float) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    inline, handed = [], []
    for _ in range(calls):
        started = time.perf_counter()
        _work(microseconds)
        inline.append(time.perf_counter() - started)
        started = time.perf_counter()
        await loop.run_in_executor(pool, _work, microseconds)
        handed.append(time.perf_counter() - started)
    pool.shutdown()
    return statistics.median(inline), statistics.median(handed)


def _loop_factory() -> type[asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.Loop  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--work-us", type=float, default=20.0)
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the figures here (bench/results/offloop.json: bench/README renders it)",
    )
    a = ap.parse_args(argv)
    load_before = os.getloadavg()[0]
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        inline, handed = runner.run(_measure(a.calls, a.work_us))
    print(
        f"work {a.work_us:g} µs: in place {inline * 1e6:.1f} µs, handed to a worker thread"
        f" {handed * 1e6:.1f} µs (+{(handed - inline) * 1e6:.1f} µs a verb)"
    )
    if a.out is not None:
        figures = {
            "calls": a.calls,
            "work_us": a.work_us,
            "in_place_us": round(inline * 1e6, 1),
            "handed_over_us": round(handed * 1e6, 1),
            # a hand-off's price moves with the machine's load: say what it was
            "load_average_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }
        a.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
