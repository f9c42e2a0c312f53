"""Figures README.md and the guides quote from committed benchmark runs equal what those runs'
results files hold, and bench/README's soak criteria are the soak's own constants (bench/README's
measured figures are generated: test_readme.py).

Each case finds a figure by the words around it and computes it from a results file; the figure
as written must be that value rounded to the digits written (a range must contain it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from app.explain import DEFAULT_ENTRIES, DEFAULT_SESSIONS
from bench import readme_sections, soak
from bench.hotpath_output import SavedRun, parse_output

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MiB = 2**20


@cache
def results(name: str) -> Any:
    return json.loads((RESULTS / name).read_text())


def workload(run: str, name: str) -> dict[str, Any]:
    row: dict[str, Any] = next(r for r in results(run)["workloads"] if r["workload"] == name)
    return row


def caldera(run: str, name: str, key: str) -> float:
    return float(workload(run, name)["caldera"][key])


def body_mib(name: str) -> float:
    return workload("latest.json", name)["body_bytes"] / MiB


def explain_bytes_per_entry() -> list[float]:
    at_100, at_1000 = results("explain.json"), results("explain-1000-nodes.json")
    return [
        at_100["memory"]["bytes_per_entry"],
        at_100["evictions"]["bytes_per_entry"],
        at_1000["memory"]["bytes_per_entry"],
    ]


def explain_figure(name: str, part: str, key: str) -> float:
    """``part``'s ``key`` in a ``python -m bench explain`` results file."""
    return float(results(name)[part][key])


def explain_added_us(verb: str) -> float:
    """What the decision record adds to a framework call of ``verb`` (explain.json, µs)."""
    timing = results("explain.json")["time_per_call"]
    return float(timing["with"][f"{verb}_us"] - timing["without"][f"{verb}_us"])


EXPLAIN_1000 = "explain-1000-nodes.json"


def explain_bound_mib() -> float:
    per_entry = results("explain.json")["memory"]["bytes_per_entry"]
    return float(DEFAULT_ENTRIES * DEFAULT_SESSIONS * per_entry / MiB)


def state_at(nodes: int, pods: int) -> dict[str, Any]:
    """One size of bench/results/cluster-state.json (``python -m bench.cluster_state``)."""
    size: dict[str, Any] = next(
        s
        for s in results("cluster-state.json")["sizes"]
        if (s["nodes"], s["pods"]) == (nodes, pods)
    )
    return size


def cluster_row(
    size: str, group: str, scheduler: str, name: str = "cluster.json"
) -> dict[str, Any]:
    row: dict[str, Any] = next(
        r
        for r in results(name)["rows"]
        if (r["size"], r["group"], r["scheduler"]) == (size, group, scheduler)
    )
    return row


def cluster_run(
    size: str, group: str, scheduler: str, key: str, name: str = "cluster.json"
) -> float:
    return float(cluster_row(size, group, scheduler, name)[key])


def cluster_ratio(size: str, group: str, over: str, key: str = "cycle_p50_ms") -> float:
    return cluster_run(size, group, "caldera", key) / cluster_run(size, group, over, key)


def open_rate(size: str) -> float:
    """Volcano's extender OnSessionOpen in MiB/s: the snapshot over the time to send it."""
    return cluster_run(size, "job", "caldera", "snapshot_MiB") / (
        cluster_run(size, "job", "caldera", "extender_open_ms") / 1000
    )


def open_over_caldera() -> list[float]:
    return [
        cluster_run(size, "job", "caldera", "extender_open_ms")
        / cluster_run(size, "job", "caldera", "caldera_open_ms")
        for size in ("100 / 1000", "500 / 5000", "1000 / 10000")
    ]


GROWTH = (
    ("pods", "pods"),
    ("nodes", "nodes"),
    ("store", "store_mib"),
    ("peak RSS", "peak_rss_mib"),
    ("first session", "first_session_ms_median"),
    ("100 pods changed", "changed_100_pods_ms_median"),
    ("relist of 0 changed", "relist_0_changed_replace_ms_median"),
)
"""bench/README's words for each figure of cluster-state.json's growth, and its key there."""


def growth_cases() -> list[tuple[str, str, str, Callable[[], float]]]:
    """A case per figure of the growth sentence under bench/README's cluster-state table: each
    larger size's growth against the first, as ``python -m bench.cluster_state`` wrote it."""
    cases = []
    for size, figures in results("cluster-state.json")["growth"].items():
        label = " / ".join(f"{int(n):,}" for n in size.split("/"))
        for words, key in GROWTH:
            ahead = "" if key in ("pods", "nodes") else r"pods ×[\d.]+, nodes ×[\d.]+; "
            pattern = rf"{label}: {ahead}[^;]*?\b{words} ×(\d+(?:\.\d+)?)"
            cases.append((f"growth: {size} {words}", BENCH, pattern, lambda v=figures[key]: v))
    return cases


def cluster_range(size: str, scheduler: str, key: str) -> list[float]:
    return [float(v) for v in cluster_row(size, "job", scheduler)[f"{key}_range"]]


FLOOR_X3 = "cluster-floor-job1000-repeat3.json"
"""In-tree, cluster mode and its floor at 1,000 / 10,000, three rounds."""


def floor_row(name: str, scheduler: str) -> dict[str, Any]:
    """The row of ``scheduler`` in a one-size, one-group cluster run (``FLOOR_X3``)."""
    row: dict[str, Any] = next(r for r in results(name)["rows"] if r["scheduler"] == scheduler)
    return row


def trial_run(name: str, scheduler: str, key: str) -> float:
    return float(floor_row(name, scheduler)[key])


def idle_p50(name: str, scheduler: str) -> float:
    return float(floor_row(name, scheduler)["idle_p50_ms"])


def idle_p50_range(name: str, scheduler: str) -> list[float]:
    return [float(v) for v in floor_row(name, scheduler)["idle_p50_ms_range"]]


def runs_of(name: str, scheduler: str, **where: Any) -> list[dict[str, Any]]:
    """The runs of ``scheduler`` in a cluster results file, those whose fields equal ``where``
    (group, nodes)."""
    return [
        r
        for r in results(name)["runs"]
        if r["scheduler"] == scheduler and all(r[k] == v for k, v in where.items())
    ]


def verb_figure(name: str, verb: str, what: str = "calderaVerbSeconds", **where: Any) -> float:
    """``what`` (calderaVerbSeconds, calderaVerbCalls) of one verb in caldera-names's one run
    matching ``where``."""
    [run] = runs_of(name, "caldera-names", **where)
    return float(run[what][verb])


def answering_seconds(name: str, **where: Any) -> float:
    """Caldera's predicate and prioritize time in caldera-names's run matching ``where``."""
    return sum(verb_figure(name, verb, **where) for verb in ("predicate", "prioritize"))


NAMES = "cluster-names.json"
"""issue 51's plan: in-tree, cluster mode and identifiers (caldera-names), one run each."""
NAMES_1000 = "1000 / 10000"
NODE_500 = {"group": "node", "nodes": 500}


def names_row(size: str, group: str, scheduler: str, key: str) -> float:
    return cluster_run(size, group, scheduler, key, NAMES)


def cluster_mode_calls(verb: str) -> float:
    """Cluster mode's calls of ``verb`` in the plan's node group at 500 nodes (today's protocol)."""
    [run] = runs_of(NAMES, "caldera-cluster", **NODE_500)
    return float(run["calderaVerbCalls"][verb])


NAMES_X3 = "cluster-names-job1000-repeat3.json"
"""In-tree and identifiers at 1,000 / 10,000, job group, three rounds."""


NAMES_FLOOR_X3 = "cluster-names-floor-job1000-repeat3.json"
"""In-tree, the identifiers protocol's floor (neutral-names) and identifiers at 1,000 / 10,000,
job group, three rounds."""


def idle_by_round(scheduler: str) -> list[float]:
    """``scheduler``'s idle cycle p50 in each round of ``NAMES_FLOOR_X3``, in round order."""
    runs = sorted(runs_of(NAMES_FLOOR_X3, scheduler), key=lambda r: r["round"])
    return [float(r["idleCycleP50Ms"]) for r in runs]


def idle_round_ratio(scheduler: str, over: str, round_: int) -> float:
    return idle_by_round(scheduler)[round_ - 1] / idle_by_round(over)[round_ - 1]


UNDISTURBED = 2
"""The round of ``NAMES_FLOOR_X3`` that ran with nothing else on the machine."""


NODE500 = "cluster-names-node500.json"
"""In-tree and identifiers at 500 / 5,000, node group, with the batch leaving out what
allocate's error cache answers (a one-size, one-group run: :func:`trial_run`)."""


FLOOR_NODE500 = "cluster-names-floor-node500.json"
"""In-tree, the identifiers protocol's floor (neutral-names) and identifiers at 500 / 5,000,
node group, one run each."""
NODE500_X2 = "cluster-names-node500-repeat2.json"
"""In-tree and identifiers at 500 / 5,000, node group, two more rounds."""


def bind_by_round(name: str, scheduler: str) -> list[float]:
    runs = sorted(runs_of(name, scheduler), key=lambda r: r.get("round", 1))
    return [float(r["bindSeconds"]) for r in runs]


def bind_round_ratio(round_: int) -> float:
    return (
        bind_by_round(NODE500_X2, "caldera-names")[round_ - 1]
        / bind_by_round(NODE500_X2, "intree")[round_ - 1]
    )


def floor_answering() -> float:
    """Caldera's answering in the floor run: batched predicates, prioritizes, allocates."""
    return sum(verb_figure(FLOOR_NODE500, verb) for verb in ("predicate", "prioritize", "allocate"))


@cache
def saved_run(name: str) -> SavedRun:
    """A committed bench.hotpath output, read back as its tables."""
    return parse_output((RESULTS / name).read_text())


def hotpath_pair(name: str, first: str, second: str, load: str, key: str) -> float:
    """A saved bench.hotpath run's ``second`` over ``first``, paired round by round: the median
    ratio of ``key`` (p50, p99)."""
    return saved_run(name).paired_http_of[first, second][load][key][0]


def hotpath_quartiles(name: str, first: str, second: str, load: str, key: str) -> list[float]:
    return list(saved_run(name).paired_http_of[first, second][load][key][1:])


@cache
def real_snapshot_megabytes(index: int) -> float:
    """The size of a captured real snapshot, from the committed bench.snapshot output."""
    from bench.snapshot import parse_output as parse_snapshot

    runs = parse_snapshot((RESULTS / REAL_SNAPSHOTS).read_text())
    return list(dict.fromkeys(run.megabytes for run in runs))[index]


@cache
def real_snapshot_skip_MBps(index: int) -> float:
    """msgspec's skip of a whole captured real snapshot, MB/s, after the change it measured."""
    from bench.snapshot import parse_output as parse_snapshot

    runs = parse_snapshot((RESULTS / REAL_SNAPSHOTS).read_text())
    return [run for run in runs if run.label == "after"][index].mbps("skip")


def round_jobs(scheduler: str, number: int = 1) -> float:
    """In the committed cluster run, the evict group's jobs that kept all their pods."""
    run = next(
        r
        for r in results("cluster.json")["runs"]
        if (r["group"], r["scheduler"], r.get("round", 1)) == ("evict", scheduler, number)
    )
    return float(len(run["boundJobs"]))


def open_mb_per_s(size: str) -> float:
    """Caldera's onSessionOpen column as a rate: the snapshot's MB over its time."""
    row = cluster_row(size, "job", "caldera")
    return float(row["snapshot_MiB"] * MiB / 1e6 / (row["caldera_open_ms"] / 1000))


def latest(name: str, who: str, key: str = "p50_ms") -> float:
    """``key`` of ``who`` (caldera, caldera_asgi, floor, go) in bench/results/latest.json's row
    ``name``."""
    return float(workload("latest.json", name)[who][key])


SMALL_VERBS = ("allocate-c1", "onSessionClose-c1")
DECODED = (
    *("predicate-c1", "prioritize-c1", "preemptable-c1", "jobReady-c1"),
    *("onSessionOpen-10n", "onSessionOpen-100n", "onSessionOpen-500n"),
)
"""The rows of bench/README's table of decoding libraries."""


def over_msgspec(lib: str, min_bytes: int = 0) -> list[float]:
    """``lib``'s p50 over msgspec's on each body of :data:`DECODED` of ``min_bytes`` or more."""
    rows = [workload("latest.json", name) for name in DECODED]
    return [
        r["floor_libs"][lib]["p50_ms"] / r["floor_libs"]["msgspec"]["p50_ms"]
        for r in rows
        if r["body_bytes"] >= min_bytes
    ]


REAL_SNAPSHOTS = "snapshot-real-decode.txt"
SETTLED = "shadow-settled-hotpath.txt"


AUDIT = "audit.json"
FULL = "full-7edf20e.json"
"""The full run the operator guide's rules of thumb (and app/commands/sizing.py's margin) come
from."""
GUIDE = "docs/operator-guide.md"
BENCH = "bench/README.md"
AUTHORS = "docs/plugin-author-guide.md"
PROPOSAL = "docs/proposals/extender-identifiers.md"

CASES: list[tuple[str, str, str, Callable[[], float | list[float]]]] = [
    # (name, document, pattern with the figure as its first group, the value from the results)
    ("10-node body", GUIDE, r"\| 10 nodes, 100 pods \| ([\d.]+) MiB", lambda: body_mib("onSessionOpen-10n")),
    ("10-node p99", GUIDE, r"\| 10 nodes, 100 pods \| [^|]+\| ([\d.]+) ms", lambda: caldera(FULL, "onSessionOpen-10n", "p99_ms")),
    ("10-node peak RSS", GUIDE, r"\| 10 nodes, 100 pods \|[^|]+\|[^|]+\| ([\d.]+) MiB", lambda: caldera(FULL, "onSessionOpen-10n", "peak_rss_MiB")),
    ("100-node body", GUIDE, r"\| 100 nodes, 2,000 pods \| ([\d.]+) MiB", lambda: body_mib("onSessionOpen-100n")),
    ("100-node p99", GUIDE, r"\| 100 nodes, 2,000 pods \| [^|]+\| ([\d.]+) ms", lambda: caldera(FULL, "onSessionOpen-100n", "p99_ms")),
    ("100-node peak RSS", GUIDE, r"\| 100 nodes, 2,000 pods \|[^|]+\|[^|]+\| ([\d.]+) MiB", lambda: caldera(FULL, "onSessionOpen-100n", "peak_rss_MiB")),
    ("cycle peak RSS", GUIDE, r"\(([\d.]+) MiB with predicate and prioritize\)", lambda: float(results(FULL)["cycle"]["caldera"]["peak_rss_MiB"])),
    ("500-node body", GUIDE, r"\| 500 nodes, 10,000 pods \| ([\d.]+) MiB", lambda: body_mib("onSessionOpen-500n")),
    ("500-node p99", GUIDE, r"\| 500 nodes, 10,000 pods \| [^|]+\| ([\d.]+) s", lambda: caldera(FULL, "onSessionOpen-500n", "p99_ms") / 1000),
    ("500-node peak RSS", GUIDE, r"\| 500 nodes, 10,000 pods \|[^|]+\|[^|]+\| ([\d.]+) MiB", lambda: caldera(FULL, "onSessionOpen-500n", "peak_rss_MiB")),
    ("running pod size", GUIDE, r"([\d.]+) KiB pods, ten DaemonSet pods", lambda: results("workload-shapes.json")["pod_KiB"]["running"]),
    ("published 75 MiB p99", GUIDE, r"measures 75 MiB in ([\d.]+) ms p99", lambda: caldera("latest.json", "onSessionOpen-100n", "p99_ms")),
    ("published 375 MiB p99", GUIDE, r"and 375 MiB in ([\d.]+) ms\)", lambda: caldera("latest.json", "onSessionOpen-500n", "p99_ms")),
    ("first snapshot growth", GUIDE, r"\(([\d.]+) × for the first snapshot", lambda: caldera("latest.json", "onSessionOpen-100n", "first_snapshot_growth_MiB") * MiB / workload("latest.json", "onSessionOpen-100n")["body_bytes"]),
    ("100-node p50", GUIDE, r"\(([\d.]+) ms\s+p50 in the 7edf20e run\)", lambda: caldera(FULL, "onSessionOpen-100n", "p50_ms")),
    ("preemptable p50", GUIDE, r"preemptable with 30 evictees: ([\d.]+) ms p50", lambda: caldera(FULL, "preemptable-c1", "p50_ms")),
    ("cycle time", GUIDE, r"needs ([\d.]+) s of Caldera time per cycle", lambda: results(FULL)["cycle"]["caldera"]["total_ms_median"] / 1000),
    ("binding cycle through Caldera", GUIDE, r"the binding cycle took ([\d.]+) s through Caldera", lambda: cluster_run("100 / 1000", "node", "caldera", "cycle_p99_ms") / 1000),
    ("binding cycle through neutral", GUIDE, r"and ([\d.]+) s through the\s+neutral server", lambda: cluster_run("100 / 1000", "node", "neutral", "cycle_p99_ms") / 1000),
    ("binding cycle in-tree", GUIDE, r"neutral server against ([\d.]+) s in-tree", lambda: cluster_run("100 / 1000", "node", "intree", "cycle_p99_ms") / 1000),
    ("node plugins bind in-tree", AUTHORS, r"the 1,000 pods that bind in ([\d.]+) s\s+in-tree", lambda: cluster_run("100 / 1000", "node", "intree", "bind_s")),
    ("node plugins bind through Caldera", AUTHORS, r"in-tree take ([\d.]+) s when every", lambda: cluster_run("100 / 1000", "node", "caldera", "bind_s")),
    ("snapshot at 100 nodes", AUTHORS, r"the snapshot \((\d+) MiB at 100 nodes", lambda: cluster_run("100 / 1000", "job", "caldera", "snapshot_MiB")),
    ("snapshot at 1,000 nodes", AUTHORS, r"MiB at 100 nodes, (\d+) MiB at 1,000\)", lambda: cluster_run("1000 / 10000", "job", "caldera", "snapshot_MiB")),
    ("send rate at 100 nodes", GUIDE, r"at (\d+) MiB/s for 16 MiB to", lambda: open_rate("100 / 1000")),
    ("send rate at 1,000 nodes", GUIDE, r"to (\d+) MiB/s for 158 MiB in this run", lambda: open_rate("1000 / 10000")),
    ("snapshot at 1,000 nodes (guide)", GUIDE, r"MiB/s for (\d+) MiB in this run", lambda: cluster_run("1000 / 10000", "job", "caldera", "snapshot_MiB")),
    ("OnSessionOpen over Caldera's", GUIDE, r"(\d+–\d+) times Caldera's own time", open_over_caldera),
    ("cluster mode at 1,000", GUIDE, r"in-tree's order of magnitude: (\d+) ms", lambda: cluster_run("1000 / 10000", "job", "caldera-cluster", "idle_p50_ms")),
    ("in-tree at 1,000", GUIDE, r"against (\d+) ms in-tree at 1,000 nodes", lambda: cluster_run("1000 / 10000", "job", "intree", "idle_p50_ms")),
    ("in-tree range at 1,000", GUIDE, r"moved between (\d+) and \d+ ms across them", lambda: cluster_range("1000 / 10000", "intree", "idle_p50_ms")[0]),
    ("in-tree range top at 1,000", GUIDE, r"moved between \d+ and (\d+) ms across them", lambda: cluster_range("1000 / 10000", "intree", "idle_p50_ms")[1]),
    ("snapshot mode at 1,000", GUIDE, r"where the snapshot mode takes\s+([\d,]+) ms", lambda: cluster_run("1000 / 10000", "job", "caldera", "idle_p50_ms")),
    ("overrun size snapshot", GUIDE, r"pods, a (\d+) MiB snapshot \(", lambda: cluster_run("500 / 5000", "job", "caldera", "snapshot_MiB")),
    ("overrun through Caldera", GUIDE, r"MiB snapshot \(([\d,]+) ms;", lambda: cluster_run("500 / 5000", "job", "caldera", "idle_p50_ms")),
    ("overrun through neutral", GUIDE, r"ms; (\d+) ms through a server doing nothing", lambda: cluster_run("500 / 5000", "job", "neutral", "idle_p50_ms")),
    ("cycle target, job 100", BENCH, r"every group \(job ([\d.]+)×", lambda: cluster_ratio("100 / 1000", "job", "neutral")),
    ("cycle target, node 100", BENCH, r"every group \(job [\d.]+×, node ([\d.]+)×", lambda: cluster_ratio("100 / 1000", "node", "neutral")),
    ("cycle target, evict 100", BENCH, r", evict ([\d.]+)×\) and at 1,000", lambda: cluster_ratio("100 / 1000", "evict", "neutral")),
    ("cycle target, 1,000", BENCH, r"and at 1,000 / 10,000 \(([\d.]+)×,", lambda: cluster_ratio("1000 / 10000", "job", "neutral")),
    ("cycle target, 500", BENCH, r"missed at 500 / 5,000\s+\(([\d.]+)×\)", lambda: cluster_ratio("500 / 5000", "job", "neutral")),
    ("build at 500", BENCH, r"\(the table's (\d+) ms\s+of Caldera's onSessionOpen", lambda: cluster_run("500 / 5000", "job", "caldera", "caldera_open_ms")),
    ("open at 500", BENCH, r"onSessionOpen against (\d+) ms of Volcano's\)", lambda: cluster_run("500 / 5000", "job", "caldera", "extender_open_ms")),
    ("tenth of neutral at 500", BENCH, r"a tenth of the neutral server's cycle is (\d+) ms", lambda: cluster_run("500 / 5000", "job", "neutral", "cycle_p50_ms") / 10),
    ("floor x3 minutes", BENCH, r"commit 7fef737, (\d+) min\)", lambda: results(FLOOR_X3)["seconds"] / 60),
    ("in-tree rounds at 1,000 (bench)", BENCH, r"moved between (\d+) and \d+ ms across\s+the committed run's rounds", lambda: cluster_range("1000 / 10000", "intree", "idle_p50_ms")[0]),
    ("in-tree rounds top at 1,000 (bench)", BENCH, r"moved between \d+ and (\d+) ms across\s+the committed run's rounds", lambda: cluster_range("1000 / 10000", "intree", "idle_p50_ms")[1]),
    ("floor x3 in-tree", BENCH, r"three: in-tree (\d+) ms \(", lambda: idle_p50(FLOOR_X3, "intree")),
    ("floor x3 in-tree range", BENCH, r"three: in-tree \d+ ms \((\d+–\d+)\)", lambda: idle_p50_range(FLOOR_X3, "intree")),
    ("floor x3 cluster mode", BENCH, r"\), cluster mode (\d+) ms \(\d+–\d+, \*\*", lambda: idle_p50(FLOOR_X3, "caldera-cluster")),
    ("floor x3 cluster mode range", BENCH, r"\), cluster mode \d+ ms \((\d+–\d+), \*\*", lambda: idle_p50_range(FLOOR_X3, "caldera-cluster")),
    ("floor x3 cluster ratio", BENCH, r"\*\*([\d.]+)×\*\* in-tree\), the neutral", lambda: idle_p50(FLOOR_X3, "caldera-cluster") / idle_p50(FLOOR_X3, "intree")),
    ("floor x3 neutral", BENCH, r"the neutral\s+server on cluster mode's conf (\d+) ms \(\d+–\d+, [\d.]+×\)", lambda: idle_p50(FLOOR_X3, "neutral-cluster")),
    ("floor x3 neutral range", BENCH, r"the neutral\s+server on cluster mode's conf \d+ ms \((\d+–\d+), [\d.]+×\)", lambda: idle_p50_range(FLOOR_X3, "neutral-cluster")),
    ("floor x3 neutral ratio", BENCH, r"the neutral\s+server on cluster mode's conf \d+ ms \(\d+–\d+, ([\d.]+)×\)", lambda: idle_p50(FLOOR_X3, "neutral-cluster") / idle_p50(FLOOR_X3, "intree")),
    ("floor x3 at the floor", BENCH, r"\*\*cluster mode at ([\d.]+)× the floor\*\*", lambda: idle_p50(FLOOR_X3, "caldera-cluster") / idle_p50(FLOOR_X3, "neutral-cluster")),
    ("cluster mode 1,000 ratio", BENCH, r"cluster mode's idle cycle at 1,000 / 10,000 was ([\d.]+)×", lambda: cluster_run("1000 / 10000", "job", "caldera-cluster", "idle_p50_ms") / cluster_run("1000 / 10000", "job", "intree", "idle_p50_ms")),
    ("shadow now, job cycle p50", BENCH, r"met\*\* for jobEnqueueable \(p50 ([\d.]+), p99", lambda: hotpath_pair(SETTLED, "live", "shadowed", "jobEnqueueable-cycle", "p50")),
    ("shadow now, job cycle p99", BENCH, r"met\*\* for jobEnqueueable \(p50 [\d.]+, p99 ([\d.]+)\)", lambda: hotpath_pair(SETTLED, "live", "shadowed", "jobEnqueueable-cycle", "p99")),
    ("shadow now, evict cycle p99", BENCH, r"and at\s+preemptable's p99 \(([\d.]+)\); preemptable's", lambda: hotpath_pair(SETTLED, "live", "shadowed", "preemptable-cycle", "p99")),
    ("shadow now, evict cycle p50", BENCH, r"preemptable's p50 is not shown \(([\d.]+), quartiles [\d.]+–[\d.]+\)\.\s+\*\*Back", lambda: hotpath_pair(SETTLED, "live", "shadowed", "preemptable-cycle", "p50")),
    ("shadow now, evict cycle p50 quartiles", BENCH, r"preemptable's p50 is not shown \([\d.]+, quartiles ([\d.]+–[\d.]+)\)\.\s+\*\*Back", lambda: hotpath_quartiles(SETTLED, "live", "shadowed", "preemptable-cycle", "p50")),
    ("shadow now, job c1 p50", BENCH, r"jobEnqueueable misses it\*\* \(p50 ([\d.]+), p99", lambda: hotpath_pair(SETTLED, "live", "shadowed", "jobEnqueueable-c1", "p50")),
    ("shadow now, job c1 p99", BENCH, r"jobEnqueueable misses it\*\* \(p50 [\d.]+, p99 ([\d.]+)\)", lambda: hotpath_pair(SETTLED, "live", "shadowed", "jobEnqueueable-c1", "p99")),
    ("shadow now, evict c1 p50", BENCH, r"is not shown at either \(p50 ([\d.]+), p99", lambda: hotpath_pair(SETTLED, "live", "shadowed", "preemptable-c1", "p50")),
    ("shadow now, evict c1 p99", BENCH, r"is not shown at either \(p50 [\d.]+, p99 ([\d.]+)\)", lambda: hotpath_pair(SETTLED, "live", "shadowed", "preemptable-c1", "p99")),
    ("whole state encode", BENCH, r"a whole state's encode \((\d+) ms here", lambda: results("shadow-state.json")["whole"]["encode_ms"]["median"]),
    ("entry encode median", BENCH, r"one entry's encode\s+\(median ([\d.]+) ms, p99", lambda: results("shadow-state.json")["whole"]["entry_encode_ms"]["median"]),
    ("entry encode p99", BENCH, r"one entry's encode\s+\(median [\d.]+ ms, p99 ([\d.]+) ms here\)", lambda: results("shadow-state.json")["whole"]["entry_encode_ms"]["p99"]),
    ("calls with no encode p99", BENCH, r"takes the p99 from ([\d.]+) ms to", lambda: results("shadow-state.json")["whole"]["calls_during_whole_encode_ms"]["no_encode"]["p99"]),
    ("calls beside an encode that never stops p99", BENCH, r"takes the p99 from [\d.]+ ms to ([\d.]+) ms", lambda: results("shadow-state.json")["whole"]["calls_during_whole_encode_ms"]["encode_never_stops"]["p99"]),
    ("calls beside an encode that stops p99", BENCH, r"one that stops\s+leaves it at ([\d.]+) ms", lambda: results("shadow-state.json")["whole"]["calls_during_whole_encode_ms"]["encode_stops_in_session"]["p99"]),
    ("first derivation at 10,000 pods", GUIDE, r"derives every task, node and job \((\d+) ms median at 10,000 pods", lambda: state_at(1000, 10000)["incremental"]["first_session_ms"]["median"]),
    ("first derivation at 50,000 pods", GUIDE, r"at 10,000 pods, ([\d,]+) ms at\s+50,000", lambda: state_at(5000, 50000)["incremental"]["first_session_ms"]["median"]),
    ("first derivation", GUIDE, r"builds every task, node and job\s+\((\d+) ms median\)", lambda: state_at(1000, 10000)["incremental"]["first_session_ms"]["median"]),
    ("derivation, nothing changed", GUIDE, r"\(([\d.]+) ms with nothing changed", lambda: state_at(1000, 10000)["incremental"]["changed_0_pods_ms"]["median"]),
    ("derivation, 100 pods changed", GUIDE, r"(\d+) ms with 100 pods changed;", lambda: state_at(1000, 10000)["incremental"]["changed_100_pods_ms"]["median"]),
    ("cluster idle cycles", BENCH, r"bound for the settle time and then (\d+) more cycles passed", lambda: results("cluster.json")["plan"]["idleCycles"]),
    ("cluster time box", BENCH, r"or at the time box \((\d+) s\)", lambda: results("cluster.json")["plan"]["timeboxSeconds"]),
    # ... beside the cluster tables
    ("evict jobs kept, in-tree", BENCH, r"first round in-tree (\d+)\s+jobs, through Caldera", lambda: round_jobs("intree")),
    ("evict jobs kept, Caldera", BENCH, r"jobs, through Caldera (\d+), in cluster mode", lambda: round_jobs("caldera")),
    ("evict jobs kept, cluster mode", BENCH, r"in cluster mode (\d+) and through the neutral server", lambda: round_jobs("caldera-cluster")),
    ("evict jobs kept, neutral", BENCH, r"through the neutral server (\d+), with the same", lambda: round_jobs("neutral")),
    ("evict preemptors bound", BENCH, r"with the same\s+(\d+) preemptors bound", lambda: cluster_run("100 / 1000", "evict", "caldera", "bound")),
    ("evict pods evicted", BENCH, r"preemptors bound and (\d+) pods evicted\)", lambda: cluster_run("100 / 1000", "evict", "caldera", "evicted")),
    ("onSessionOpen column at 1,000", BENCH, r"\"Caldera's onSessionOpen\" column \((\d+) ms at 1,000", lambda: cluster_run("1000 / 10000", "job", "caldera", "caldera_open_ms")),
    ("onSessionOpen column rate", BENCH, r"column \(\d+ ms at 1,000 / 10,000, ~(\d+) MB/s\)", lambda: round(open_mb_per_s("1000 / 10000"), -1)),
    ("floor x3 bound", BENCH, r"Every run bound the same ([\d,]+) pods and decided as in-tree", lambda: trial_run(FLOOR_X3, "caldera-cluster", "bound")),
    ("real snapshot at 100", BENCH, r"\(not committed: (\d+) and \d+ MB\)", lambda: real_snapshot_megabytes(0)),
    ("real snapshot at 1,000", BENCH, r"\(not committed: \d+ and (\d+) MB\)", lambda: real_snapshot_megabytes(1)),
    ("floor decode at 500", BENCH, r"would still take about (\d+) ms \(that snapshot at the", lambda: cluster_run("500 / 5000", "job", "caldera", "snapshot_MiB") * MiB / 1e6 / real_snapshot_skip_MBps(1) * 1000),
    ("delta per changed pod", BENCH, r"so a delta is ~(\d+) KB a changed pod", lambda: results("shadow-state.json")["changed_10_pods"]["bytes_median"] / 10 / 1000),
    ("committed run minutes", BENCH, r"\(commit d2e7bc4, (\d+)\s+min\)", lambda: results("cluster.json")["seconds"] / 60),
    ("committed snapshot at 500", BENCH, r"Caldera's build of the (\d+) MiB snapshot \(the table's", lambda: cluster_run("500 / 5000", "job", "caldera", "snapshot_MiB")),
    ("audit rounds", BENCH, r"CPU time, (\d+) rounds, paired round by round, load average", lambda: results(AUDIT)["rounds"]),
    ("audit load", BENCH, r"paired round by round, load average\s+([\d.]+) with other work", lambda: results(AUDIT)["loadAverage"]),
    *[
        case
        for verb, label in (("predicate", "predicate"), ("prioritize", "prioritize, 10 nodes"), ("jobEnqueueable", "jobEnqueueable"))
        for case in (
            (f"audit {verb} per call", BENCH, rf"\| {label} \| ([\d.]+) µs \|", lambda verb=verb: results(AUDIT)["perCall"][verb]["withoutAuditMicroseconds"]),
            (f"audit {verb} ratio", BENCH, rf"\| {label} \| [\d.]+ µs \| ([\d.]+) \(", lambda verb=verb: results(AUDIT)["perCall"][verb]["ratioMedian"]),
            (f"audit {verb} quartiles", BENCH, rf"\| {label} \| [\d.]+ µs \| [\d.]+ \(([\d.]+–[\d.]+)\)", lambda verb=verb: results(AUDIT)["perCall"][verb]["ratioQuartiles"]),
        )
    ],
    ("audit session close", BENCH, r"comparing a full sample\s+takes ([\d.]+) ms \(median", lambda: results(AUDIT)["sessionClosedMilliseconds"]["median"]),
    ("audit session close max", BENCH, r"ms \(median; ([\d.]+) ms at most\)", lambda: results(AUDIT)["sessionClosedMilliseconds"]["max"]),
    ("proposal: idle in-tree", PROPOSAL, r"the idle cycle p50 is ([\d.]+) ms in-tree", lambda: cluster_run("1000 / 10000", "job", "intree", "idle_p50_ms")),
    ("proposal: idle cluster mode", PROPOSAL, r"ms in-tree and ([\d.]+) ms through Caldera in\s+cluster mode", lambda: cluster_run("1000 / 10000", "job", "caldera-cluster", "idle_p50_ms")),
    ("proposal: snapshot", PROPOSAL, r"the snapshot is ([\d.]+) MiB", lambda: cluster_run("1000 / 10000", "job", "caldera", "snapshot_MiB")),
    ("names idle 1,000", BENCH, r"Idle cycle at 1,000 / 10,000: (\d+) ms against", lambda: names_row(NAMES_1000, "job", "caldera-names", "idle_p50_ms")),
    ("names in-tree idle 1,000", BENCH, r"Idle cycle at 1,000 / 10,000: \d+ ms against (\d+) ms in-tree", lambda: names_row(NAMES_1000, "job", "intree", "idle_p50_ms")),
    ("names idle ratio 1,000", BENCH, r"ms in-tree, ([\d.]+)×, in this run", lambda: names_row(NAMES_1000, "job", "caldera-names", "idle_p50_ms") / names_row(NAMES_1000, "job", "intree", "idle_p50_ms")),
    ("names cluster mode idle 1,000", BENCH, r"stock Volcano: (\d+) ms,\s+[\d.]+×, in this run\)", lambda: names_row(NAMES_1000, "job", "caldera-cluster", "idle_p50_ms")),
    ("names cluster mode idle ratio", BENCH, r"stock Volcano: \d+ ms,\s+([\d.]+)×, in this run\)", lambda: names_row(NAMES_1000, "job", "caldera-cluster", "idle_p50_ms") / names_row(NAMES_1000, "job", "intree", "idle_p50_ms")),
    ("names bind 500", BENCH, r"bound in ([\d.]+) s against [\d.]+ s in-tree, [\d.]+×: the 2×", lambda: names_row("500 / 5000", "node", "caldera-names", "bind_s")),
    ("names in-tree bind 500", BENCH, r"bound in [\d.]+ s against ([\d.]+) s in-tree, [\d.]+×: the 2×", lambda: names_row("500 / 5000", "node", "intree", "bind_s")),
    ("names bind ratio 500", BENCH, r"s in-tree, ([\d.]+)×: the 2× target", lambda: names_row("500 / 5000", "node", "caldera-names", "bind_s") / names_row("500 / 5000", "node", "intree", "bind_s")),
    ("names cluster mode bind 500", BENCH, r"cluster mode on stock Volcano: ([\d.]+) s, so names", lambda: names_row("500 / 5000", "node", "caldera-cluster", "bind_s")),
    ("names faster than cluster mode", BENCH, r"so names bind ([\d.]+)× faster", lambda: names_row("500 / 5000", "node", "caldera-cluster", "bind_s") / names_row("500 / 5000", "node", "caldera-names", "bind_s")),
    ("names bind 100", BENCH, r"100 / 1,000: ([\d.]+) s against [\d.]+ s, [\d.]+×\)", lambda: names_row("100 / 1000", "node", "caldera-names", "bind_s")),
    ("names in-tree bind 100", BENCH, r"100 / 1,000: [\d.]+ s against ([\d.]+) s, [\d.]+×\)", lambda: names_row("100 / 1000", "node", "intree", "bind_s")),
    ("names bind ratio 100", BENCH, r"100 / 1,000: [\d.]+ s against [\d.]+ s, ([\d.]+)×\)", lambda: names_row("100 / 1000", "node", "caldera-names", "bind_s") / names_row("100 / 1000", "node", "intree", "bind_s")),
    ("names batched predicates", BENCH, r"batched predicates in ([\d.]+) s \(", lambda: verb_figure(NAMES, "predicate", **NODE_500)),
    ("names batched predicate each", BENCH, r"\(([\d.]+) ms each: 500 nodes", lambda: 1000 * verb_figure(NAMES, "predicate", **NODE_500) / verb_figure(NAMES, "predicate", "calderaVerbCalls", **NODE_500)),
    ("names per node", BENCH, r"about ([\d.]+) µs a node\)", lambda: 1e6 * verb_figure(NAMES, "predicate", **NODE_500) / verb_figure(NAMES, "predicate", "calderaVerbCalls", **NODE_500) / 500),
    ("names prioritizes", BENCH, r"prioritizes in ([\d.]+) s \(`calderaVerbSeconds`", lambda: verb_figure(NAMES, "prioritize", **NODE_500)),
    ("names answering", BENCH, r"\(88\.4 - 29\.8 - ([\d.]+), by elimination\)", lambda: answering_seconds(NAMES, **NODE_500)),
    ("names nodes a task", BENCH, r"was asked ([\d.]+) nodes a\s+task on average", lambda: cluster_mode_calls("predicate") / cluster_mode_calls("prioritize")),
    ("names per-node calls", BENCH, r"cluster mode's ([\d,]+) predicate calls", lambda: cluster_mode_calls("predicate")),
    ("names job bind 1,000", BENCH, r"\((\d+) s and \d+ s,\s+\d+ s in-tree\)", lambda: names_row(NAMES_1000, "job", "caldera-names", "bind_s")),
    ("names cluster job bind 1,000", BENCH, r"\(\d+ s and (\d+) s,\s+\d+ s in-tree\)", lambda: names_row(NAMES_1000, "job", "caldera-cluster", "bind_s")),
    ("names in-tree job bind 1,000", BENCH, r"\(\d+ s and \d+ s,\s+(\d+) s in-tree\)", lambda: names_row(NAMES_1000, "job", "intree", "bind_s")),
    ("names minutes", BENCH, r"commit e180e6c,\s+(\d+) min, one run", lambda: results(NAMES)["seconds"] / 60),
    ("proposal: names idle ratio x3", PROPOSAL, r"10,000 pods: ([\d.]+)× in-tree over three rounds\*\*", lambda: idle_p50(NAMES_X3, "caldera-names") / idle_p50(NAMES_X3, "intree")),
    ("proposal: names idle x3", PROPOSAL, r"three rounds\*\* \((\d+) ms\s+against \d+ ms; target", lambda: idle_p50(NAMES_X3, "caldera-names")),
    ("proposal: names in-tree idle x3", PROPOSAL, r"three rounds\*\* \(\d+ ms\s+against (\d+) ms; target", lambda: idle_p50(NAMES_X3, "intree")),
    ("proposal: names idle ratio", PROPOSAL, r"repeat3\.json\), ([\d.]+)× in the\s+single run", lambda: names_row(NAMES_1000, "job", "caldera-names", "idle_p50_ms") / names_row(NAMES_1000, "job", "intree", "idle_p50_ms")),
    ("proposal: names cluster mode ratio", PROPOSAL, r"on stock Volcano measured ([\d.]+)×\.", lambda: names_row(NAMES_1000, "job", "caldera-cluster", "idle_p50_ms") / names_row(NAMES_1000, "job", "intree", "idle_p50_ms")),
    ("names x3 minutes", BENCH, r"commit 9bbf817, (\d+) min\): in-tree", lambda: results(NAMES_X3)["seconds"] / 60),
    ("names x3 in-tree", BENCH, r"min\): in-tree (\d+) ms \(\d+–\d+\), identifiers", lambda: idle_p50(NAMES_X3, "intree")),
    ("names x3 in-tree range", BENCH, r"min\): in-tree \d+ ms \((\d+–\d+)\), identifiers", lambda: idle_p50_range(NAMES_X3, "intree")),
    ("names x3 identifiers", BENCH, r"\), identifiers (\d+) ms \(\d+–\d+\), \*\*", lambda: idle_p50(NAMES_X3, "caldera-names")),
    ("names x3 identifiers range", BENCH, r"\), identifiers \d+ ms \((\d+–\d+)\), \*\*", lambda: idle_p50_range(NAMES_X3, "caldera-names")),
    ("names x3 ratio", BENCH, r"\(\d+–\d+\), \*\*([\d.]+)×\*\*;\s+the single run", lambda: idle_p50(NAMES_X3, "caldera-names") / idle_p50(NAMES_X3, "intree")),
    ("names x3 ratio (headline)", BENCH, r"over\s+three rounds ([\d.]+)×, so the 1\.2× target", lambda: idle_p50(NAMES_X3, "caldera-names") / idle_p50(NAMES_X3, "intree")),
    ("floor x3 minutes", BENCH, r"round 3 on 01e7d61, (\d+) min;", lambda: results(NAMES_FLOOR_X3)["seconds"] / 60),
    ("floor x3 in-tree rounds", BENCH, r"idle cycle p50 in-tree (\d+), \d+ and \d+ ms, the floor", lambda: idle_by_round("intree")[0]),
    ("floor x3 in-tree round 2", BENCH, r"idle cycle p50 in-tree \d+, (\d+) and \d+ ms, the floor", lambda: idle_by_round("intree")[1]),
    ("floor x3 in-tree round 3", BENCH, r"idle cycle p50 in-tree \d+, \d+ and (\d+) ms, the floor", lambda: idle_by_round("intree")[2]),
    ("floor x3 floor round 1", BENCH, r"the floor (\d+),\s+\d+ and \d+ ms, identifiers", lambda: idle_by_round("neutral-names")[0]),
    ("floor x3 floor round 2", BENCH, r"the floor \d+,\s+(\d+) and \d+ ms, identifiers", lambda: idle_by_round("neutral-names")[1]),
    ("floor x3 floor round 3", BENCH, r"the floor \d+,\s+\d+ and (\d+) ms, identifiers", lambda: idle_by_round("neutral-names")[2]),
    ("floor x3 identifiers round 1", BENCH, r"identifiers (\d+), \d+ and \d+ ms; medians", lambda: idle_by_round("caldera-names")[0]),
    ("floor x3 identifiers round 2", BENCH, r"identifiers \d+, (\d+) and \d+ ms; medians", lambda: idle_by_round("caldera-names")[1]),
    ("floor x3 identifiers round 3", BENCH, r"identifiers \d+, \d+ and (\d+) ms; medians", lambda: idle_by_round("caldera-names")[2]),
    ("floor x3 floor median", BENCH, r"medians \*\*([\d.]+)× in-tree for the floor", lambda: idle_p50(NAMES_FLOOR_X3, "neutral-names") / idle_p50(NAMES_FLOOR_X3, "intree")),
    ("floor x3 names median", BENCH, r"for the floor,\s+([\d.]+)× for identifiers", lambda: idle_p50(NAMES_FLOOR_X3, "caldera-names") / idle_p50(NAMES_FLOOR_X3, "intree")),
    ("floor x3 names over floor", BENCH, r"for identifiers, ([\d.]+)× the floor's\*\*", lambda: idle_p50(NAMES_FLOOR_X3, "caldera-names") / idle_p50(NAMES_FLOOR_X3, "neutral-names")),
    ("floor x3 undisturbed floor", BENCH, r"undisturbed round ([\d.]+)× and [\d.]+×\.", lambda: idle_round_ratio("neutral-names", "intree", UNDISTURBED)),
    ("floor x3 undisturbed names", BENCH, r"undisturbed round [\d.]+× and ([\d.]+)×\.", lambda: idle_round_ratio("caldera-names", "intree", UNDISTURBED)),
    ("proposal: floor median", PROPOSAL, r"medians of \*\*([\d.]+)× in-tree for the floor", lambda: idle_p50(NAMES_FLOOR_X3, "neutral-names") / idle_p50(NAMES_FLOOR_X3, "intree")),
    ("proposal: names median", PROPOSAL, r"for the floor and\s+([\d.]+)× for Caldera", lambda: idle_p50(NAMES_FLOOR_X3, "caldera-names") / idle_p50(NAMES_FLOOR_X3, "intree")),
    ("proposal: names over floor", PROPOSAL, r"for Caldera, ([\d.]+)× the floor's\*\*", lambda: idle_p50(NAMES_FLOOR_X3, "caldera-names") / idle_p50(NAMES_FLOOR_X3, "neutral-names")),
    ("proposal: undisturbed floor", PROPOSAL, r"undisturbed round ([\d.]+)× and [\d.]+×\.", lambda: idle_round_ratio("neutral-names", "intree", UNDISTURBED)),
    ("proposal: undisturbed names", PROPOSAL, r"undisturbed round [\d.]+× and ([\d.]+)×\.", lambda: idle_round_ratio("caldera-names", "intree", UNDISTURBED)),
    ("floor node500 minutes", BENCH, r"commit\s+b993eec, (\d+) min\): the floor bound", lambda: results(FLOOR_NODE500)["seconds"] / 60),
    ("floor node500 floor", BENCH, r"the floor bound in ([\d.]+) s against in-tree's", lambda: trial_run(FLOOR_NODE500, "neutral-names", "bind_s")),
    ("floor node500 in-tree", BENCH, r"against in-tree's ([\d.]+) s, \*\*[\d.]+× in-tree\*\*, and", lambda: trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("floor node500 ratio", BENCH, r"\*\*([\d.]+)× in-tree\*\*, and\s+identifiers", lambda: trial_run(FLOOR_NODE500, "neutral-names", "bind_s") / trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("floor node500 names", BENCH, r"identifiers in ([\d.]+) s, [\d.]+×, decisions identical", lambda: trial_run(FLOOR_NODE500, "caldera-names", "bind_s")),
    ("floor node500 names ratio", BENCH, r"identifiers in [\d.]+ s, ([\d.]+)×, decisions identical", lambda: trial_run(FLOOR_NODE500, "caldera-names", "bind_s") / trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("node500 x2 minutes", BENCH, r"repeat2\.json\),\s+(\d+) min\)", lambda: results(NODE500_X2)["seconds"] / 60),
    ("node500 x2 round 1", BENCH, r"min\): ([\d.]+) s against [\d.]+ s and", lambda: bind_by_round(NODE500_X2, "caldera-names")[0]),
    ("node500 x2 round 1 in-tree", BENCH, r"min\): [\d.]+ s against ([\d.]+) s and", lambda: bind_by_round(NODE500_X2, "intree")[0]),
    ("node500 x2 round 2", BENCH, r"s and ([\d.]+) s against [\d.]+ s, \*\*", lambda: bind_by_round(NODE500_X2, "caldera-names")[1]),
    ("node500 x2 round 2 in-tree", BENCH, r"s and [\d.]+ s against ([\d.]+) s, \*\*", lambda: bind_by_round(NODE500_X2, "intree")[1]),
    ("node500 x2 ratio 1", BENCH, r"\*\*([\d.]+)× and [\d.]+×\*\*: the 2× target", lambda: bind_round_ratio(1)),
    ("node500 x2 ratio 2", BENCH, r"\*\*[\d.]+× and ([\d.]+)×\*\*: the 2× target", lambda: bind_round_ratio(2)),
    ("floor node500 above", BENCH, r"above the floor \(about (\d+) s\)", lambda: trial_run(FLOOR_NODE500, "caldera-names", "bind_s") - trial_run(FLOOR_NODE500, "neutral-names", "bind_s")),
    ("floor node500 predicates", BENCH, r"Caldera's: ([\d.]+) s of batched predicates", lambda: verb_figure(FLOOR_NODE500, "predicate")),
    ("floor node500 prioritizes", BENCH, r"([\d.]+) s\s+of prioritizes \(", lambda: verb_figure(FLOOR_NODE500, "prioritize")),
    ("floor node500 prioritize per call", BENCH, r"of prioritizes \(([\d.]+) ms a call\)", lambda: 1000 * verb_figure(FLOOR_NODE500, "prioritize") / verb_figure(FLOOR_NODE500, "prioritize", "calderaVerbCalls")),
    ("floor node500 allocates", BENCH, r"and ([\d.]+) s of allocates", lambda: verb_figure(FLOOR_NODE500, "allocate")),
    ("proposal: floor node500 ratio", PROPOSAL, r"bound in \*\*([\d.]+)× in-tree's time\*\*", lambda: trial_run(FLOOR_NODE500, "neutral-names", "bind_s") / trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("proposal: floor node500 floor", PROPOSAL, r"time\*\* \(([\d.]+) s\s+against [\d.]+ s; bench", lambda: trial_run(FLOOR_NODE500, "neutral-names", "bind_s")),
    ("proposal: floor node500 in-tree", PROPOSAL, r"time\*\* \([\d.]+ s\s+against ([\d.]+) s; bench", lambda: trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("proposal: floor node500 names", PROPOSAL, r"Caldera in ([\d.]+)× in that run", lambda: trial_run(FLOOR_NODE500, "caldera-names", "bind_s") / trial_run(FLOOR_NODE500, "intree", "bind_s")),
    ("proposal: node500 x2 ratio 1", PROPOSAL, r"in two more rounds ([\d.]+)× and [\d.]+×", lambda: bind_round_ratio(1)),
    ("proposal: node500 x2 ratio 2", PROPOSAL, r"in two more rounds [\d.]+× and ([\d.]+)×", lambda: bind_round_ratio(2)),
    ("proposal: floor node500 answering", PROPOSAL, r"allocates, about (\d+) s,", floor_answering),
    ("proposal: node500 ratio", PROPOSAL, r"500 nodes: ([\d.]+)× in-tree's time to bind", lambda: trial_run(NODE500, "caldera-names", "bind_s") / trial_run(NODE500, "intree", "bind_s")),
    ("proposal: node500 bind", PROPOSAL, r"time to bind\*\* \(([\d.]+) s against", lambda: trial_run(NODE500, "caldera-names", "bind_s")),
    ("proposal: node500 in-tree", PROPOSAL, r"time to bind\*\* \([\d.]+ s against ([\d.]+) s; target", lambda: trial_run(NODE500, "intree", "bind_s")),
    ("proposal: names bind ratio", PROPOSAL, r"every node of the session: ([\d.]+)× \(", lambda: names_row("500 / 5000", "node", "caldera-names", "bind_s") / names_row("500 / 5000", "node", "intree", "bind_s")),
    ("proposal: names bind", PROPOSAL, r"every node of the session: [\d.]+× \(([\d.]+) s against", lambda: names_row("500 / 5000", "node", "caldera-names", "bind_s")),
    ("proposal: names in-tree bind", PROPOSAL, r"every node of the session: [\d.]+× \([\d.]+ s against ([\d.]+) s\)", lambda: names_row("500 / 5000", "node", "intree", "bind_s")),
    ("proposal: cluster mode bind", PROPOSAL, r"today's protocol took ([\d.]+) s, ", lambda: names_row("500 / 5000", "node", "caldera-cluster", "bind_s")),
    ("proposal: names slower", PROPOSAL, r"s, ([\d.]+)× as long\.", lambda: names_row("500 / 5000", "node", "caldera-cluster", "bind_s") / names_row("500 / 5000", "node", "caldera-names", "bind_s")),
    ("proposal: answering", PROPOSAL, r"answers took (\d+) s of the 88", lambda: answering_seconds(NAMES, **NODE_500)),
    ("proposal: batched predicates", PROPOSAL, r"\(([\d.]+) s for 5,000 batched", lambda: verb_figure(NAMES, "predicate", **NODE_500)),
    ("proposal: prioritizes", PROPOSAL, r"([\d.]+) s for 5,000 prioritizes", lambda: verb_figure(NAMES, "prioritize", **NODE_500)),
    ("proposal: nodes a task", PROPOSAL, r"asked only ([\d.]+) nodes a task", lambda: cluster_mode_calls("predicate") / cluster_mode_calls("prioritize")),
    ("proposal: per-node calls", PROPOSAL, r"a task \(([\d,]+) calls for 5,000 tasks\)", lambda: cluster_mode_calls("predicate")),
    ("proposal: node500 predicates", PROPOSAL, r"With it the batched predicates took ([\d.]+) s", lambda: verb_figure(NODE500, "predicate")),
    ("proposal: node500 prioritize", PROPOSAL, r"took [\d.]+ s, prioritize ([\d.]+) s", lambda: verb_figure(NODE500, "prioritize")),
    ("proposal: node500 answering", PROPOSAL, r"without the extender's ([\d.]+) s of answering", lambda: answering_seconds(NODE500)),
    ("proposal: node500 without answering", PROPOSAL, r"bind would have taken about ([\d.]+) s, [\d.]+× in-tree, as if", lambda: trial_run(NODE500, "caldera-names", "bind_s") - answering_seconds(NODE500)),
    ("proposal: node500 floor estimate", PROPOSAL, r"about [\d.]+ s, ([\d.]+)× in-tree, as if the round trips", lambda: (trial_run(NODE500, "caldera-names", "bind_s") - answering_seconds(NODE500)) / trial_run(NODE500, "intree", "bind_s")),
    ("proposal: protocol's calls", PROPOSAL, r"where today's protocol\s+made ([\d,]+)\.", lambda: cluster_mode_calls("predicate")),
    ("node500 bind", BENCH, r"\*\*bound in ([\d.]+) s against [\d.]+ s in-tree, [\d.]+×\*\*", lambda: trial_run(NODE500, "caldera-names", "bind_s")),
    ("node500 in-tree", BENCH, r"\*\*bound in [\d.]+ s against ([\d.]+) s in-tree, [\d.]+×\*\*", lambda: trial_run(NODE500, "intree", "bind_s")),
    ("node500 ratio", BENCH, r"\*\*bound in [\d.]+ s against [\d.]+ s in-tree, ([\d.]+)×\*\*", lambda: trial_run(NODE500, "caldera-names", "bind_s") / trial_run(NODE500, "intree", "bind_s")),
    ("node500 minutes", BENCH, r"brings this run has it, (\d+) min\)", lambda: results(NODE500)["seconds"] / 60),
    ("node500 predicates", BENCH, r"batched predicates down to ([\d.]+) s \(from", lambda: verb_figure(NODE500, "predicate")),
    ("node500 predicates before", BENCH, r"batched predicates down to [\d.]+ s \(from ([\d.]+)\)", lambda: verb_figure(NAMES, "predicate", **NODE_500)),
    ("node500 prioritize", BENCH, r"\(from [\d.]+\), prioritize ([\d.]+) s", lambda: verb_figure(NODE500, "prioritize")),
    ("node500 in-tree moved", BENCH, r"own time moved from ([\d.]+) to [\d.]+ s", lambda: names_row("500 / 5000", "node", "intree", "bind_s")),
    ("node500 in-tree moved to", BENCH, r"own time moved from [\d.]+ to ([\d.]+) s", lambda: trial_run(NODE500, "intree", "bind_s")),
    ("node500 answering", BENCH, r"without Caldera's ([\d.]+) s of answering", lambda: answering_seconds(NODE500)),
    ("node500 without answering", BENCH, r"the bind would have taken\s+about ([\d.]+) s \(", lambda: trial_run(NODE500, "caldera-names", "bind_s") - answering_seconds(NODE500)),
    ("node500 floor estimate", BENCH, r"about [\d.]+ s \(([\d.]+)×\), which suggested", lambda: (trial_run(NODE500, "caldera-names", "bind_s") - answering_seconds(NODE500)) / trial_run(NODE500, "intree", "bind_s")),
    ("shadow's target", BENCH, r'"met": the third quartile is within ([\d.]+);', lambda: readme_sections.TARGET_RATIO),
    ("soak ratio", BENCH, r"the last minute within ([\d.]+)× \(or", lambda: soak.P99_RATIO_LIMIT),
    ("soak slack", BENCH, r"within [\d.]+× \(or (\d+) ms\) of the first", lambda: soak.P99_SLACK_MS),
    ("soak warm-up", BENCH, r"of the first after a (\d+) s warm-up", lambda: soak.WARMUP_SECONDS),
    ("soak calls for a p99", BENCH, r"by p99 where a window\s+has (\d+)\+ calls", lambda: soak.MIN_CALLS_FOR_P99),
    ("soak RSS growth", BENCH, r"RSS growth under (\d+)%", lambda: soak.RSS_GROWTH_LIMIT * 100),
    ("explain bytes an entry", "README.md", r"An entry costs (\d+–\d+) bytes", explain_bytes_per_entry),
    ("explain bound", "README.md", r"holds at most about (\d+) MiB at the defaults", explain_bound_mib),
    ("explain per 1,000 jobs", "README.md", r"asked about 100 nodes takes (\d+) MiB", lambda: results("explain.json")["memory"]["MiB_per_1000_jobs"]),
    ("notes: first snapshot", BENCH, r"Caldera's first ([\d.]+) MiB snapshot grows RSS", lambda: body_mib("onSessionOpen-100n")),
    ("notes: first snapshot growth", BENCH, r"snapshot grows RSS by (\d+) MiB, measured first", lambda: latest("onSessionOpen-100n", "caldera", "first_snapshot_growth_MiB")),
    ("notes: snapshot again", BENCH, r"the same body received again grows\s+it by (\d+) MiB", lambda: latest("onSessionOpen-100n", "caldera", "peak_rss_growth_MiB")),
    ("notes: cycle peak", BENCH, r"The replayed cycle's peak \((\d+) MiB\)", lambda: float(results("latest.json")["cycle"]["caldera"]["peak_rss_MiB"])),
    ("notes: 500-node buffer", BENCH, r"holds the ([\d.]+) MiB buffer left by onSessionOpen-500n", lambda: body_mib("onSessionOpen-500n")),
    ("notes: evict floor", BENCH, r"once into narrow structs \(([\d.]+) ms\)", lambda: latest("preemptable-c1", "floor")),
    ("notes: evict in process", BENCH, r"runs five plugins: ([\d.]+) ms in process", lambda: latest("preemptable-c1", "caldera_asgi")),
    ("notes: evict over HTTP", BENCH, r"ms in process, ([\d.]+) ms over HTTP with the answer's", lambda: latest("preemptable-c1", "caldera")),
    ("notes: small verbs over HTTP", BENCH, r"onSessionClose: ([\d.]+–[\d.]+) ms over HTTP", lambda: [latest(n, "caldera") for n in SMALL_VERBS]),
    ("notes: small verbs in Caldera", BENCH, r"ms over HTTP, (\d+–\d+) µs of it in Caldera's code", lambda: [latest(n, "caldera_asgi") * 1000 for n in SMALL_VERBS]),
    ("notes: Go's round trip", BENCH, r"Go's onSessionClose, is ([\d.]+) ms", lambda: min(latest(n, "go") for n in SMALL_VERBS)),
    ("notes: 10-node body", BENCH, r"\*\*onSessionOpen ([\d.]+) MiB\*\*: the floor only decodes", lambda: body_mib("onSessionOpen-10n")),
    ("notes: 10-node in process", BENCH, r"task-topology builds its buckets\): ([\d.]+) ms in process", lambda: latest("onSessionOpen-10n", "caldera_asgi")),
    ("notes: 10-node floor", BENCH, r"ms in process against the floor's ([\d.]+) ms\.", lambda: latest("onSessionOpen-10n", "floor")),
    ("split: predicate app", BENCH, r"four node plugins, the answer\) takes ([\d.]+) ms against", lambda: latest("predicate-c1", "caldera_asgi")),
    ("split: predicate floor", BENCH, r"the narrow floor decode's ([\d.]+) ms;", lambda: latest("predicate-c1", "floor")),
    ("split: predicate HTTP share", BENCH, r"take the other (\d+)% of its", lambda: 100 * workload("latest.json", "predicate-c1")["http_share"]),
    ("split: predicate over HTTP", BENCH, r"the other \d+% of its ([\d.]+) ms over HTTP", lambda: latest("predicate-c1", "caldera")),
    ("split: evict over HTTP", BENCH, r"\*\*preemptable, 30 evictees\*\* \(([\d.]+) ms, of which", lambda: latest("preemptable-c1", "caldera")),
    ("split: evict in the app", BENCH, r"ms, of which ([\d.]+) ms in the app\)", lambda: latest("preemptable-c1", "caldera_asgi")),
    ("split: close", BENCH, r"`\{\}` \(onSessionClose\) takes ([\d.]+) ms against", lambda: latest("onSessionClose-c1", "caldera")),
    ("split: close on Go", BENCH, r"\(onSessionClose\) takes [\d.]+ ms against ([\d.]+) ms on the\s+Go server", lambda: latest("onSessionClose-c1", "go")),
    ("split: allocate body", BENCH, r"For allocate \((\d+) KiB\) Caldera takes", lambda: workload("latest.json", "allocate-c1")["body_bytes"] / 1024),
    ("split: allocate", BENCH, r"KiB\) Caldera takes ([\d.]+) ms and Go", lambda: latest("allocate-c1", "caldera")),
    ("split: allocate on Go", BENCH, r"ms and Go ([\d.]+) ms, \d+% of Caldera's in HTTP", lambda: latest("allocate-c1", "go")),
    ("split: allocate HTTP share", BENCH, r"ms, (\d+)% of Caldera's in HTTP", lambda: 100 * workload("latest.json", "allocate-c1")["http_share"]),
    ("split: allocate floor", BENCH, r"an in-process floor of (\d+) µs", lambda: latest("allocate-c1", "floor") * 1000),
    ("split: allocate over floor", BENCH, r"the Caldera/floor ratio is (\d+)× \(Go's", lambda: latest("allocate-c1", "caldera") / latest("allocate-c1", "floor")),
    ("split: Go over floor", BENCH, r"\(Go's (\d+)×\): the 1.5× target", lambda: latest("allocate-c1", "go") / latest("allocate-c1", "floor")),
    ("split: prioritize", BENCH, r"faster than the floor \(([\d.]+) ms against", lambda: latest("prioritize-c1", "caldera")),
    ("split: prioritize floor", BENCH, r"faster than the floor \([\d.]+ ms against ([\d.]+) ms for", lambda: latest("prioritize-c1", "floor")),
    ("split: prioritize body", BENCH, r"ms against [\d.]+ ms for ([\d.]+) MiB\)", lambda: body_mib("prioritize-c1")),
    ("decoders: snapshot", BENCH, r"the decoded narrow snapshot of ([\d.]+) MiB costs", lambda: body_mib("onSessionOpen-100n")),
    ("decoders: snapshot RSS", BENCH, r"snapshot of [\d.]+ MiB costs ~(\d+) MiB of RSS", lambda: latest("onSessionOpen-100n", "floor", "peak_rss_growth_MiB")),
    ("decoders: pydantic least", BENCH, r"same narrow models is ([\d.]+)–\d+× slower", lambda: min(over_msgspec("pydantic"))),
    ("decoders: pydantic most", BENCH, r"same narrow models is [\d.]+–(\d+)× slower", lambda: max(over_msgspec("pydantic"))),
    ("decoders: orjson", BENCH, r"fine for tiny bodies, (\d+–\d+)× slower than msgspec", lambda: over_msgspec("orjson", MiB)),
    ("store beside the snapshot: size", BENCH, r"At 1,000 nodes / 10,000 pods the store holds ~(\d+) MiB", lambda: state_at(1000, 10000)["store_mib"]),
    ("store beside the snapshot: snapshot", BENCH, r"against the ([\d.]+) MiB snapshot Volcano posts every cycle", lambda: cluster_run("1000 / 10000", "job", "caldera", "snapshot_MiB")),
    ("store beside the snapshot: in-tree", BENCH, r"whose in-tree cycle takes (\d+) ms \(p50\)", lambda: cluster_run("1000 / 10000", "job", "intree", "idle_p50_ms")),
    ("explain: jobs", BENCH, r"\(([\d,]+) jobs, 100\s+nodes\) and \[results/explain-1000", lambda: results("explain.json")["jobs"]),
    ("explain: nodes", BENCH, r"\(1,000 jobs, (\d+)\s+nodes\) and \[results/explain-1000", lambda: results("explain.json")["nodes"]),
    ("explain: 1,000-node jobs", BENCH, r"explain-1000-nodes.json\) \((\d+) jobs, 1,000\s+nodes\)", lambda: results(EXPLAIN_1000)["jobs"]),
    ("explain: 1,000-node nodes", BENCH, r"explain-1000-nodes.json\) \(\d+ jobs, ([\d,]+)\s+nodes\)", lambda: results(EXPLAIN_1000)["nodes"]),
    ("explain: MiB per 1,000 jobs", BENCH, r"what the record holds\): ([\d.]+) MiB per 1,000 jobs", lambda: explain_figure("explain.json", "memory", "MiB_per_1000_jobs")),
    ("explain: entries a job", BENCH, r"asked about 100 nodes \(([\d.]+) entries a\s+job", lambda: explain_figure("explain.json", "memory", "entries_per_job")),
    ("explain: bytes an entry", BENCH, r"entries a\s+job, ~(\d+) bytes an entry\); at", lambda: explain_figure("explain.json", "memory", "bytes_per_entry")),
    ("explain: 1,000 nodes per 1,000 jobs", BENCH, r"at 1,000 nodes ([\d.]+) MiB per 1,000 such jobs", lambda: explain_figure(EXPLAIN_1000, "memory", "MiB_per_1000_jobs")),
    ("explain: 1,000 nodes entries", BENCH, r"such jobs \(([\d.]+) entries a job", lambda: explain_figure(EXPLAIN_1000, "memory", "entries_per_job")),
    ("explain: 1,000 nodes bytes", BENCH, r"entries a job, ~(\d+)\s+bytes an\s+entry\)\.", lambda: explain_figure(EXPLAIN_1000, "memory", "bytes_per_entry")),
    ("explain: preemptor KiB", BENCH, r"three plugins veto half holds ([\d.]+) KiB", lambda: explain_figure("explain.json", "evictions", "KiB_per_preemptor")),
    ("explain: preemptor entries", BENCH, r"KiB in (\d+) entries", lambda: explain_figure("explain.json", "evictions", "entries_per_preemptor")),
    ("explain: preemptor bytes", BENCH, r"entries \(~(\d+) bytes an\s+entry\)\. The record", lambda: explain_figure("explain.json", "evictions", "bytes_per_entry")),
    ("explain: entries a session", BENCH, r"`explainEntries` \(([\d,]+)\) per session", lambda: DEFAULT_ENTRIES),
    ("explain: sessions", BENCH, r"`explainSessions` \((\d+)\) hold", lambda: DEFAULT_SESSIONS),
    ("explain: the bound", BENCH, r"hold at most ~(\d+) MiB at", explain_bound_mib),
    ("explain: the bound's entry", BENCH, r"hold at most ~\d+ MiB at (\d+) bytes an entry", lambda: explain_figure("explain.json", "memory", "bytes_per_entry")),
    ("explain: jobEnqueueable", BENCH, r"best of five\): jobEnqueueable \+([\d.]+) µs", lambda: explain_added_us("jobEnqueueable")),
    ("explain: predicate", BENCH, r"µs, predicate \+([\d.]+) µs, preemptable", lambda: explain_added_us("predicate")),
    ("explain: preemptable", BENCH, r"preemptable with 30 evictees\s+(-?[\d.]+) µs \(measured", lambda: explain_added_us("preemptable")),
    ("explain: load", BENCH, r"µs \(measured at load ([\d.]+) on", lambda: results("explain.json")["machine"]["loadavg"]),
    ("explain: CPUs", BENCH, r"on (\d+) CPUs\)\.", lambda: results("explain.json")["machine"]["cpus"]),
    ("prioritize marshal", "README.md", r"prioritize body\s+takes about ([\d.]+) s on one core", lambda: workload("latest.json", "prioritize-c1")["marshal"]["p50_ms"] / 1000),
    ("cycle marshal", "README.md", r"cost the scheduler (\d+–\d+) s of marshalling per cycle", lambda: [results("latest.json")["cycle"]["marshal_estimate_ms"] / 1000]),
]  # fmt: skip
CASES += growth_cases()


def test_go_against_the_decoders_is_what_latest_json_holds() -> None:
    """bench/README's bullet on Go's ``encoding/json``: slower than msgspec on every body of the
    decoders' table, faster than the slower of pydantic and orjson on the bodies it names."""
    rows = [workload("latest.json", name) for name in DECODED]
    assert all(r["go"]["p50_ms"] > r["floor_libs"]["msgspec"]["p50_ms"] for r in rows)
    beats = ", ".join(
        f"{r['verb']} {r['body_bytes'] / MiB:.1f} MiB"
        for r in rows
        if r["go"]["p50_ms"] < max(lib["p50_ms"] for lib in r["floor_libs"].values())
    )
    words = f"slower than msgspec on every body, faster than pydantic or orjson on {beats}:"
    assert words in (ROOT / BENCH).read_text()


def rounded(value: float, digits: int) -> float:
    """``value`` to ``digits`` decimals, a half up, as the prose rounds (68.5 -> 69)."""
    step = Decimal(1).scaleb(-digits)
    return float(Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_UP))


def written_as(text: str, value: float | list[float]) -> bool:
    """``text`` ("253", "1.49", "1,788", "60–130", "3-5") says ``value``: rounded (a half up)
    to the digits written, or for a range, every value inside it once rounded like its
    bounds."""
    text = text.replace(",", "")  # thousands, as the guides write them
    if "–" in text or re.fullmatch(r"[\d.]+-[\d.]+", text):
        low, high = re.split("[–-]", text)
        values = value if isinstance(value, list) else [value]
        digits = len(low.partition(".")[2])
        return all(float(low) <= rounded(v, digits) <= float(high) for v in values)
    assert not isinstance(value, list)
    digits = len(text.partition(".")[2])
    return rounded(value, digits) == float(text)


@pytest.mark.parametrize(
    ("name", "document", "pattern", "value"), CASES, ids=[case[0] for case in CASES]
)
def test_a_quoted_figure_is_what_its_results_file_holds(
    name: str, document: str, pattern: str, value: Callable[[], float | list[float]]
) -> None:
    found = re.search(pattern, (ROOT / document).read_text())
    assert found, f"{document}: {name} ({pattern}) not found"
    assert written_as(found[1], value()), (name, found[1], value())


@pytest.mark.parametrize(
    ("text", "value", "says"),
    [
        ("253", 252.918, True),
        ("253", 252.4, False),
        ("1.49", 1.488, True),
        ("1.5", 1.488, True),
        ("60–130", [59.8, 125.1, 100.7], True),
        ("60–120", [59.8, 125.1], False),
        ("5–10", [7.86], True),
        ("1,788", 1788.04, True),
        ("1,788", 1787.4, False),
        ("69", 68.5, True),  # a half up
        ("723", 722.5, True),
        ("3-5", [3.5, 4.5], True),
        ("5-6", [5.0, 6.0], True),
        ("3-5", [3.5, 5.6], False),
    ],
)
def test_a_figure_is_written_as_its_value_rounded(
    text: str, value: float | list[float], says: bool
) -> None:
    assert written_as(text, value) is says
