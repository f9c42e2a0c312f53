"""A saved ``python -m bench.hotpath`` output (its stdout, committed under bench/results) read
back into its tables: bench/readme renders bench/README's shadow tables from such files.
Importing nothing of bench/ keeps the README's renderers clear of the measuring code."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SavedRun:
    """What a saved ``bench.hotpath`` output (its stdout, committed under bench/results) holds:
    the medians table and the paired in-process ratios, as the command printed them."""

    rounds: int
    load: tuple[float, float]
    """The one-minute load average when the run started and when it ended."""
    medians: dict[tuple[str, str], dict[str, float]]
    """(workload, checkout) -> column (p50_ms, p99_ms, ...) -> median over the rounds."""
    paired_of: dict[tuple[str, str], dict[str, dict[str, tuple[float, float, float]]]]
    """(first, second) -> workload -> "p50" / "steady" -> (median, first quartile, third
    quartile) of the in-process figures paired by round, the second checkout over the first,
    for every pair the run printed (a run of three or more checkouts pairs each later one with
    each earlier one)."""
    paired_http_of: dict[tuple[str, str], dict[str, dict[str, tuple[float, float, float]]]]
    """(first, second) -> workload -> "p50" / "p99" -> the same, of the HTTP figures (none in
    outputs from before the HTTP pairing was printed)."""

    @property
    def paired(self) -> dict[str, dict[str, tuple[float, float, float]]]:
        """The first pair's in-process ratios (of two checkouts, the second over the first)."""
        return next(iter(self.paired_of.values()), {})

    @property
    def paired_http(self) -> dict[str, dict[str, tuple[float, float, float]]]:
        """The first pair's HTTP ratios."""
        return next(iter(self.paired_http_of.values()), {})


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _spread(median: str, quartiles: str) -> tuple[float, float, float]:
    low, high = quartiles.split("–")
    return float(median), float(low), float(high)


def parse_output(text: str) -> SavedRun:
    """The tables ``main`` prints, read back (bench/readme renders bench/README from them)."""
    rounds = 0
    load_average = [math.nan, math.nan]
    header: list[str] = []
    medians: dict[tuple[str, str], dict[str, float]] = {}
    paired_of: dict[tuple[str, str], dict[str, dict[str, tuple[float, float, float]]]] = {}
    paired_http_of: dict[tuple[str, str], dict[str, dict[str, tuple[float, float, float]]]] = {}
    pair: dict[str, dict[str, tuple[float, float, float]]] = {}
    of = {"in process": paired_of, "over HTTP": paired_http_of}
    part = ""
    for line in text.splitlines():
        if line.startswith("load average"):
            at_end = line.startswith("load average at end")
            load_average[at_end] = float(line.split("(", 1)[1].split(",", 1)[0])
            if at_end:
                rounds = int(line.rsplit("medians over ", 1)[1].split()[0])
                part = "medians"
        elif line.startswith(("in process,", "over HTTP,")):
            heading, names = line.split(",")[:2]
            part = "paired" if heading == "in process" else "paired_http"
            second, first = names.strip().split(" / ")
            pair = of[heading].setdefault((first, second), {})
        elif not line.startswith("| ") or line.startswith("|---"):
            continue
        elif line.startswith("| workload |"):
            header = _cells(line)
        elif part == "medians":
            row = dict(zip(header, _cells(line), strict=True))
            medians[(row["workload"], row["checkout"])] = {
                k: float(v)
                for k, v in row.items()
                if k not in ("workload", "checkout") and v != "–"
            }
        elif part == "paired":
            load, p50, p50_q, steady, steady_q = _cells(line)
            pair[load] = {"p50": _spread(p50, p50_q), "steady": _spread(steady, steady_q)}
        elif part == "paired_http":
            load, p50, p50_q, p99, p99_q = _cells(line)
            pair[load] = {"p50": _spread(p50, p50_q), "p99": _spread(p99, p99_q)}
    if not medians:
        raise ValueError("no medians table: not the output of python -m bench.hotpath")
    return SavedRun(rounds, (load_average[0], load_average[1]), medians, paired_of, paired_http_of)
