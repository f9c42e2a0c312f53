"""``python -m bench.snapshot``: Caldera's onSessionOpen in process, on captured snapshots.

What the cycle pays Caldera for Volcano's snapshot is its onSessionOpen: the body decoded into the
request views and the session built on it (every plugin opened), under the server's garbage
collector policy (app/gcpolicy.py). This runs exactly that, ``Extender.handle("onSessionOpen",
body)`` with the cluster benchmark's job-group configuration (sla, overcommit, resourcequota for
Volcano 1.14.1, as tests/e2e/scale_test.go), on bodies the cluster benchmark captured from
vc-scheduler with real pods from a real API server::

    CALDERA_E2E_BIN=/work/main/tests/e2e/.bin uv run --group bench python -m bench cluster \\
        --sizes 100x1000 --groups job --schedulers neutral --capture /tmp/capture \\
        --out /tmp/capture/cluster.json
    uv run python -m bench.snapshot /tmp/capture/job-100n-1000p.json

Each round is one onSessionOpen then one onSessionClose (the snapshot freed there, as in the
server: its time is reported apart, it is not the cycle's onSessionOpen). The typed decode
alone (the body into ``OnSessionOpenRequest``, nothing else) is timed in the same rounds, so the
session build's share is their difference; so is msgspec's skip of the whole body (decoded into
a struct with no field: every byte scanned, nothing built), the floor of any decode with msgspec.
CPU time per call; the body is a ``bytearray`` as the server reads it (app/server/connections.py).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from app.config import load_config_text
from app.extender import Extender
from app.metrics import Metrics
from app.session import SessionManager
from schemas.requests import OnSessionOpenRequest

JOB_GROUP = """volcanoVersion: "1.14.1"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
  - name: overcommit
  - name: resourcequota
"""
"""The cluster benchmark's job group as Caldera serves it (tests/e2e/scale_test.go, groupOf)."""

PARTS = ("open", "decode", "skip", "close")


class Nothing(msgspec.Struct):
    """Every key of the body skipped: msgspec's scan alone."""


def measure(body: bytearray, rounds: int) -> dict[str, list[float]]:
    """CPU seconds per round of: onSessionOpen, the typed decode alone, the skip of the whole
    body, onSessionClose."""
    config = load_config_text(JOB_GROUP, "job-group.yaml")
    metrics = Metrics()
    extender = Extender(config, SessionManager(config, metrics), metrics)
    decoder = msgspec.json.Decoder(OnSessionOpenRequest)
    skipper = msgspec.json.Decoder(Nothing)
    times: dict[str, list[float]] = {part: [] for part in PARTS}
    for _ in range(rounds):
        start = time.process_time()
        extender.handle("onSessionOpen", body)
        opened = time.process_time()
        extender.handle("onSessionClose", b"{}")
        closed = time.process_time()
        times["open"].append(opened - start)
        times["close"].append(closed - opened)
        # The decode alone, under the same collector policy as the server's.
        with extender.snapshot_gc.building():
            start = time.process_time()
            decoded = decoder.decode(body)
            times["decode"].append(time.process_time() - start)
            del decoded
            start = time.process_time()
            skipper.decode(body)
            times["skip"].append(time.process_time() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("body", nargs="+", type=Path, help="captured onSessionOpen bodies")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}")
    for path in a.body:
        body = bytearray(path.read_bytes())
        times = measure(body, a.rounds)
        size = len(body) / 1e6
        print(f"{path.name}, {size:.2f} MB, {a.rounds} rounds (CPU time per call)")
        for part in PARTS:
            best, median = min(times[part]), statistics.median(times[part])
            print(f"  {part}: median {median * 1e3:.1f} ms, best {best * 1e3:.1f} ms"
                  f" ({size / median:.0f} MB/s at the median)")  # fmt: skip
    return 0


@dataclass(frozen=True)
class SavedSnapshot:
    """One body's figures as ``main`` printed them."""

    label: str
    """The ``== LABEL`` line above the run (e.g. ``before``), or empty."""
    body: str
    megabytes: float
    rounds: int
    load_average: float
    median_ms: dict[str, float]
    """part (open, decode, skip, close) -> median CPU ms per call."""

    def mbps(self, part: str = "open") -> float:
        return self.megabytes / (self.median_ms[part] / 1e3)


HEADER = re.compile(r"^(\S+), ([\d.]+) MB, (\d+) rounds")
PART = re.compile(r"^  (\w+): median ([\d.]+) ms")


def parse_output(text: str) -> list[SavedSnapshot]:
    """Saved outputs of ``main`` read back (``#`` lines are comments; a ``== NAME`` line starts
    a labelled run, e.g. before and after a change): bench/readme renders from them."""
    runs: list[SavedSnapshot] = []
    load = math.nan
    label = ""
    for line in text.splitlines():
        if line.startswith("== "):
            label = line[3:].split(":")[0].strip()
        elif line.startswith("load average "):
            load = float(line.split()[2])
        elif match := HEADER.match(line):
            runs.append(SavedSnapshot(label, match[1], float(match[2]), int(match[3]), load, {}))
        elif runs and (match := PART.match(line)):
            runs[-1].median_ms[match[1]] = float(match[2])
    if not runs:
        raise ValueError("no run: not the output of python -m bench.snapshot")
    return runs


if __name__ == "__main__":
    raise SystemExit(main())
