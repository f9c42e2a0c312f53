"""``python -m bench.decode``: the request views' decode time, paired between checkouts.

What a change of ``schemas/`` costs the hot path is mostly decode time, a few percent that the
HTTP figures of this shared 2-core machine cannot show. This decodes the same body with each
checkout's request view in one process, alternating the order every round, and reports per
checkout the median and best CPU time and the ratio of each checkout to the first, paired round
by round (median and quartiles). Each checkout's ``schemas`` package is copied under another
name (``schemas_<name>``, its imports rewritten) so both load side by side; the body is decoded
from a ``bytearray`` as the server does (app/server/connections.py).

    uv run python -m bench.decode --repo before=/tmp/caldera-base --repo after=. \\
        --body bench/results/tmp/quick/onSessionOpen-100n-2000p.json --verb onSessionOpen

``python -m bench gen --quick`` writes the bodies.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

REQUESTS = {
    "onSessionOpen": "OnSessionOpenRequest",
    "predicate": "PredicateRequest",
    "prioritize": "PrioritizeRequest",
    "jobReady": "JobRequest",
}


def load_schemas(name: str, repo: Path, into: Path) -> Any:
    """``repo``'s ``schemas.requests`` module, imported as ``schemas_<name>.requests``."""
    package = "schemas_" + re.sub(r"\W", "_", name)
    target = into / package
    shutil.copytree(repo / "schemas", target)
    for source in target.glob("*.py"):
        text = source.read_text()
        text = re.sub(r"\b(from|import) schemas\b", rf"\1 {package}", text)
        source.write_text(text)
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return importlib.import_module(f"{package}.requests")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH of a checkout")
    ap.add_argument("--body", required=True, help="a request body (JSON file)")
    ap.add_argument("--verb", default="onSessionOpen", choices=sorted(REQUESTS))
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args(argv)
    body = bytearray(Path(a.body).read_bytes())
    with tempfile.TemporaryDirectory() as scratch:
        decoders = {}
        for spec in a.repo:
            name, _, path = spec.partition("=")
            module = load_schemas(name, Path(path).resolve(), Path(scratch))
            decoders[name] = msgspec.json.Decoder(getattr(module, REQUESTS[a.verb]))
    names = list(decoders)
    times: dict[str, list[float]] = {name: [] for name in names}
    start = time.process_time()
    decoders[names[0]].decode(body)
    # A small body is decoded many times a round, so that a round lasts ~20 ms of CPU and the
    # clock's granularity and one-off interruptions do not decide the ratio.
    repeat = max(1, int(0.02 / max(time.process_time() - start, 1e-6)))
    gc.disable()  # the server decodes with the collector on, but a pass mid-decode is noise here
    for round_ in range(a.rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            decoder = decoders[name]
            start = time.process_time()
            for _ in range(repeat):
                decoded = decoder.decode(body)
            times[name].append((time.process_time() - start) / repeat)
            del decoded
            gc.collect()
    size = len(body) / 1e6
    print(f"{a.verb}, {size:.2f} MB, {a.rounds} rounds of {repeat} (CPU time per decode)")
    for name in names:
        best, median = min(times[name]), statistics.median(times[name])
        print(f"  {name}: median {median * 1e3:.2f} ms, best {best * 1e3:.2f} ms "
              f"({size / best:.0f} MB/s)")  # fmt: skip
    first = names[0]
    for name in names[1:]:
        ratios = [b / f for f, b in zip(times[first], times[name], strict=True)]
        q1, q2, q3 = statistics.quantiles(ratios, n=4)
        print(f"  {name}/{first} paired: {q2:.3f} (quartiles {q1:.3f}-{q3:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
