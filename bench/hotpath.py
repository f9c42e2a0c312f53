"""``python -m bench.hotpath``: A/B of Caldera's hot path between checkouts, interleaved.

On a shared 2-core machine one run of A then one of B measures the neighbours as much as the
change. This runs the same workloads (the bodies of ``python -m bench run --quick``, each under
its own plugin configuration from bench/configs.py and after the onSessionOpen it needs, as
``bench run`` does) against ``caldera serve`` from each checkout in turn, alternating the order
every round, and reports the median over rounds of each figure: p50/p99 over HTTP (the Go load
generator, as ``bench run``), peak RSS growth per workload, and p50 of the ASGI app in-process
(``python -m bench asgi``). Each checkout runs from its own ``.venv`` (``uv sync`` in it first).

    uv run python -m bench.hotpath --repo base=/tmp/perf-base --repo new=. \\
        --loads preemptable-c1,allocate-c1,onSessionClose-c1 --rounds 3

With two checkouts it also reports, per workload, the in-process p50 of the second over the
first paired round by round (the median ratio and its quartiles): on a VM whose speed drifts
between runs, the pair measured back to back is what a few-percent change shows in, where the
HTTP figures of this 2-core machine move ±10–25% between runs of the same code. Beside the p50
of all the calls it pairs the steady p50, the lowest median of five consecutive blocks of
them, which a burst of the neighbours does not move (:func:`steady_p50`).
``--no-http`` measures only that, for a change of Caldera's own path (``--rounds 11``: about a
minute a round for the evict and node workloads).

A load named in :data:`CYCLE_LOADS` has Volcano's shape instead of back-to-back calls: a session
(onSessionOpen with the load's snapshot, a burst of the verb's calls, onSessionClose), then idle
until the next period begins; its p50/p99 are the burst's calls. That is the load a shadow
configuration (``--shadow``) meets in a cluster, and does its work in the idle part of. With a
shadow each load begins once the shadow has caught up with the one before (``queuedBytes`` 0 in
/readyz), as it would have in Volcano's period.
With two checkouts and HTTP it also pairs the HTTP p50 and p99 of the second over the first
round by round (median and quartiles); with more, every later checkout over every earlier one
(``--repo live=A --repo base=A --repo new=B --shadow base --shadow new``: what a shadow costs
before and after a change, and the change itself, in one run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import configs, gobuild, servers
from bench import run as runmod

MiB = 1024 * 1024


@dataclass(frozen=True)
class CycleLoad:
    """Volcano's traffic scaled down: each period a session, a burst of calls, then idle."""

    name: str
    of: str
    """The back-to-back load whose verb, body, configuration and session (its setup) it sends."""
    calls: int
    """The verb's calls in one session, one in flight (times ``--scale``)."""
    period_seconds: float
    """A session begins this often (Volcano's schedule period is 1 s; the 75 MiB snapshot of
    the quick suite's cluster takes the live and the shadow's process most of a second each
    to open on this machine, hence longer)."""
    cycles: int


CYCLE_LOADS = {
    c.name: c
    for c in (
        CycleLoad("jobEnqueueable-cycle", "jobEnqueueable-c1", 200, 4.0, 6),
        CycleLoad("preemptable-cycle", "preemptable-c1", 200, 4.0, 6),
    )
}


def _cycle_plan(base: str, ld: runmod.Load, shape: CycleLoad, scale: float) -> dict[str, object]:
    assert ld.setup is not None, f"{ld.name} has no session to open"
    close = runmod.TMP / "hotpath-onSessionClose.json"
    close.write_text("{}")
    calls = [{"path": "/" + ld.verb, "body": ld.body}] * max(3, int(shape.calls * scale))
    return {
        "base": base,
        "mode": "cycle",
        "steps": [
            {"name": "onSessionOpen", "concurrency": 1,
             "calls": [{"path": "/onSessionOpen", "body": ld.setup}]},
            {"name": ld.verb, "concurrency": 1, "calls": calls},
            {"name": "onSessionClose", "concurrency": 1,
             "calls": [{"path": "/onSessionClose", "body": str(close)}]},
        ],
        "repeat": shape.cycles,
        "warmup": 1,
        "period_seconds": shape.period_seconds,
        "max_seconds": shape.period_seconds * (shape.cycles + 1) * 3,
        "timeout_seconds": 120,
    }  # fmt: skip


def _shadow(base: str) -> dict[str, Any] | None:
    """The shadow's part of /readyz, None without a shadow."""
    with urllib.request.urlopen(base + "/readyz", timeout=10) as r:  # loopback only
        shadow: dict[str, Any] | None = json.loads(r.read()).get("shadow")
    return shadow


def _dropped_sessions(base: str) -> float:
    """The shadow's dropped sessions so far, 0 without a shadow."""
    shadow = _shadow(base)
    return float(shadow["droppedSessions"]) if shadow else 0.0


SETTLE_SECONDS = 60.0


def _shadow_settled(base: str, timeout: float = SETTLE_SECONDS) -> None:
    """Wait until the shadow has evaluated everything offered to it (``queuedBytes`` 0): the
    sessions of the load before work in the idle time after it, and a load measured while the
    shadow's process still decodes the last one's snapshot on the other CPU measures that
    overlap (the 75 MiB snapshot takes it about a second), not the load. Volcano's own period
    leaves the shadow that time; back-to-back loads must wait for it as well."""
    deadline = time.monotonic() + timeout
    while (shadow := _shadow(base)) is not None and shadow.get("queuedBytes", 0) > 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the shadow still has {shadow['queuedBytes']} bytes queued")
        time.sleep(0.1)


def _http(
    name: str,
    repo: Path,
    cfg: Path,
    loads: list[runmod.Load],
    lg: Path,
    scale: float,
    env: dict[str, str] | None = None,
) -> dict[str, dict[str, float]]:
    srv = servers.caldera_server(
        cfg, runmod.TMP / "logs" / f"hotpath-{name}.log", [str(repo / ".venv" / "bin" / "caldera")]
    )
    srv.env.update(env or {})
    out: dict[str, dict[str, float]] = {}
    srv.start()
    try:
        srv.wait_ready()
        for ld in loads:
            shape = CYCLE_LOADS.get(ld.name)
            _shadow_settled(srv.base)
            if ld.setup and shape is None:
                runmod.post(srv.base, "onSessionOpen", ld.setup)
            before = srv.rss()
            dropped_before = _dropped_sessions(srv.base)
            srv.reset_peak()
            plan = (
                _cycle_plan(srv.base, ld, shape, scale)
                if shape
                else runmod.load_plan(srv.base, ld, requests=max(3, int(ld.requests * scale)))
            )
            res = runmod.loadgen(lg, plan, timeout=ld.max_seconds * 4 + 600)
            if res["errors"]:
                raise RuntimeError(
                    f"{name} {ld.name}: {res['errors']} errors: {res.get('first_error')}"
                )
            if shape:  # the burst's calls, not the session's open and close
                [burst] = [st for st in res["steps"] if st["name"] == ld.verb]
                latencies = burst["latencies_us"]
            else:
                latencies = res["latencies_us"]
            out[ld.name] = {
                "p50_ms": runmod.pct(latencies, 50) / 1e3,
                "p99_ms": runmod.pct(latencies, 99) / 1e3,
                "growth_MiB": (srv.peak_rss() - before) / MiB,
                "dropped_sessions": _dropped_sessions(srv.base) - dropped_before,
            }
    finally:
        srv.stop()
    return out


def _asgi(
    name: str,
    repo: Path,
    cfg: Path,
    loads: list[runmod.Load],
    scale: float,
    env: dict[str, str] | None = None,
) -> dict[str, dict[str, float]]:
    calls = [ld for ld in loads if ld.name not in CYCLE_LOADS]
    plan = runmod.asgi_plan(calls, cfg, lambda ld: max(3, int(ld.requests * scale)))
    if not plan:
        return {}
    rows, error = runmod.pinned_child("asgi", plan, f"hotpath-{name}", repo, env)
    if error:
        raise RuntimeError(f"{name}: bench asgi: {error}")
    return {
        k: {"asgi_p50_ms": runmod.pct(v["latencies_us"], 50) / 1e3,
            "asgi_steady_ms": steady_p50(v["latencies_us"]) / 1e3}
        for k, v in rows.items()
    }  # fmt: skip


def steady_p50(latencies: list[float], blocks: int = 5) -> float:
    """The lowest median of ``blocks`` consecutive blocks of the calls: a burst of the VM's
    neighbours slows a block, not the figure (as ``timeit`` keeps its fastest repeat)."""
    size = max(1, len(latencies) // blocks)
    chunks = [latencies[i : i + size] for i in range(0, len(latencies) - size + 1, size)]
    return min(statistics.median(chunk) for chunk in chunks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.hotpath", description=__doc__)
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH of a checkout")
    ap.add_argument("--loads", required=True, help="comma list of workload names (bench run)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="times each load's request count")
    ap.add_argument("--no-asgi", action="store_true", help="HTTP only")
    ap.add_argument("--no-http", action="store_true", help="in process only (paired ratios)")
    ap.add_argument(
        "--shadow",
        action="append",
        default=[],
        metavar="NAME",
        help="serve checkout NAME with a shadow configuration (the load's own configuration"
        " again, so the shadow does the live work twice): what a shadow costs the live verbs",
    )
    a = ap.parse_args(argv)
    if a.no_asgi and a.no_http:
        ap.error("--no-asgi and --no-http leave nothing to measure")

    repos = [(n, Path(p).resolve()) for n, _, p in (r.partition("=") for r in a.repo)]
    wanted = a.loads.split(",")
    suite = runmod.build_suite("quick", runmod.TMP / "quick")
    known = {ld.name: ld for ld in suite.loads}
    known |= {c.name: replace(known[c.of], name=c.name) for c in CYCLE_LOADS.values()}
    loads = [known[name] for name in wanted if name in known]
    if len(loads) != len(wanted):
        raise SystemExit(f"unknown load in {wanted}; known: {list(known)}")
    lg = Path() if a.no_http else gobuild.build(go_extender=False)["loadgen"]
    groups = [
        (name, [ld for ld in loads if ld.config == name])
        for name in dict.fromkeys(ld.config for ld in loads)
    ]
    samples: dict[tuple[str, str, str], list[float]] = {}
    print(f"load average {os.getloadavg()}", flush=True)
    for r in range(a.rounds):
        order = repos if r % 2 == 0 else repos[::-1]
        for config_name, group in groups:
            cfg_obj = configs.CONFIGS[config_name]
            for name, repo in order:
                runmod.retime(suite)  # usage's metrics must stay fresh for every turn
                cfg = configs.write(cfg_obj, runmod.TMP, suite.files)
                env = {"CALDERA_SHADOW": str(cfg)} if name in a.shadow else {}
                http = {} if a.no_http else _http(name, repo, cfg, group, lg, a.scale, env)
                asgi = {} if a.no_asgi else _asgi(name, repo, cfg, group, a.scale, env)
                for load, figures in [*http.items(), *asgi.items()]:
                    for key, value in figures.items():
                        samples.setdefault((load, name, key), []).append(value)
                shown = asgi if a.no_http else http
                print(
                    f"round {r + 1} {name} [{configs.describe(cfg_obj)}]: " + json.dumps(shown),
                    flush=True,
                )
    print(f"\nload average at end {os.getloadavg()}; medians over {a.rounds} rounds")
    keys = ([] if a.no_http else ["p50_ms", "p99_ms", "growth_MiB", "dropped_sessions"]) + (
        [] if a.no_asgi else ["asgi_p50_ms", "asgi_steady_ms"]
    )
    print("| workload | checkout | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 2) + "|")
    for ld in loads:
        for name, _ in repos:
            cells = [
                f"{statistics.median(samples[(ld.name, name, k)]):.3f}"
                if (ld.name, name, k) in samples
                else "–"
                for k in keys
            ]
            print(f"| {ld.name} | {name} | " + " | ".join(cells) + " |")
    for (first, _), (second, _) in itertools.combinations(repos, 2):
        for where, skipped in (("over HTTP", a.no_http), ("in process", a.no_asgi)):
            if not skipped:
                print_paired(samples, [ld.name for ld in loads], first, second, where)
    return 0


def paired_ratios(before: list[float], after: list[float]) -> dict[str, float]:
    """``after / before`` round by round: the median and quartiles of the ratios."""
    ratios = [b / a for a, b in zip(before, after, strict=True)]
    if len(ratios) == 1:
        return {"median": ratios[0], "q1": ratios[0], "q3": ratios[0]}
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"median": median, "q1": q1, "q3": q3}


PAIRED = {
    "over HTTP": (("p50_ms", "p50 ratio"), ("p99_ms", "p99 ratio")),
    "in process": (("asgi_p50_ms", "p50 ratio"), ("asgi_steady_ms", "steady p50 ratio")),
}
"""Per way of calling, the two figures whose ratios ``print_paired`` shows."""


def print_paired(
    samples: dict[tuple[str, str, str], list[float]],
    loads: list[str],
    first: str,
    second: str,
    where: str,
) -> None:
    """The figures of ``second`` over ``first`` (:data:`PAIRED`), round by round: the two ran
    back to back in each round (in alternating order), so the neighbours' load moves both alike."""
    print(f"\n{where}, {second} / {first}, paired by round (median, quartiles)")
    print("| workload | " + " | ".join(f"{title} | quartiles" for _, title in PAIRED[where]) + " |")
    print("|---|---|---|---|---|")
    for load in loads:
        cells = []
        for key, _ in PAIRED[where]:
            before, after = samples.get((load, first, key)), samples.get((load, second, key))
            if not (before and after):
                break
            r = paired_ratios(before, after)
            cells += [f"{r['median']:.3f}", f"{r['q1']:.3f}–{r['q3']:.3f}"]
        if cells:
            print(f"| {load} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
