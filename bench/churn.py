"""``python -m bench churn``: compare mode under real churn at scale, and the cycle and jobs' time
to start in-tree vs cluster mode on the same workload (issue 50, item 3).

Runs ``TestChurn`` (``tests/e2e/churn_test.go``, build tag ``scale``) on the end-to-end harness:
one API-only cluster of N nodes of 32 CPU, pods that run and finish (Running when bound, as
KWOK's stage-fast does in Volcano's own benchmark, then Succeeded or Failed after their run time,
then deleted with their PodGroup), a fill of the plan's pods at t=0 and Poisson job arrivals that
keep that many live, all drawn from one seed. Per mode one after another on the same nodes:
vc-scheduler v1.14.1 with the job group's plugins in-tree, hosted by Caldera in ``sessionState:
compare``, and hosted by Caldera in ``sessionState: cluster``.

A full run is one size (``--size``, default 100x1000) and merges its runs into
``bench/results/churn.json`` under that size (a run of another size keeps the others), then writes
bench/README's section from it; ``--smoke`` (10 nodes, 100 pods, short windows) writes
``bench/results/churn-smoke.json`` and fails when a run errs, a mode measured no cycle or started
no job, or compare mode found a difference that is not in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.compare_churn import WHY as COMPARE_WHY
from bench.machine import head_commit, machine_info

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
OUT = RESULTS / "churn.json"
SMOKE_OUT = RESULTS / "churn-smoke.json"
README_PATH = REPO / "bench" / "README.md"
MODES = ("compare", "intree", "cluster")
TEST = ["-tags", "scale", "-run", "^TestChurn$", "-timeout", "0"]

FULL = {
    "minRunSeconds": 120.0,
    "maxRunSeconds": 360.0,
    "failRatio": 0.05,
    "keepSeconds": 5.0,
    "fillTimeoutSeconds": 300.0,
    "fillResidual": "equilibrium",
    "arrivalsFrom": "window",
}
SMOKE = {
    "nodes": 10,
    "pods": 100,
    "minRunSeconds": 10.0,
    "maxRunSeconds": 30.0,
    "failRatio": 0.05,
    "keepSeconds": 2.0,
    "fillTimeoutSeconds": 30.0,
    "fillResidual": "equilibrium",
    "arrivalsFrom": "window",
    "windowSeconds": {"compare": 20.0, "intree": 5.0, "cluster": 5.0},
}
SEED = 50

WHY: dict[str, str] = {
    **COMPARE_WHY,
    "task.Pod": "in flight: the same pod update seen by one side only (its phase, nodeName,"
    " conditions); not in flight (before the fix): the node a discarded gang allocation left"
    " in the pod object of Volcano's cache, which the derivation now keeps (overlay.py)",
}
"""Why each kind occurs under churn: the in-flight cause (bench/compare_churn.py), one update
of an object that reached one side first; and for a kind once found not in flight, the bug."""

FIXED: dict[str, str] = {
    "task.Pod": "Statement.Allocate writes the node into task.Pod.Spec.NodeName, the pod object"
    " Volcano's cache shares with the session (TaskInfo.Clone copies the pointer), and"
    " unallocate leaves it: a discarded gang's pending pods were sent with the node last tried"
    " while Caldera derived none. app/cluster_state/overlay.py keeps that node with the pod's"
    " resourceVersion and derive.py writes it into the derived pod until the pod changes.",
}
"""Kinds a run found not in flight, and the derivation's fix: a run measured before the fix
shows them; a run after it must not (``failures``)."""


def parse_size(text: str) -> tuple[int, int]:
    nodes, _, pods = text.partition("x")
    if not nodes.isdigit() or not pods.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a size is NODESxPODS, e.g. 100x1000")
    return int(nodes), int(pods)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--smoke", action="store_true", help="10 nodes, 100 pods, windows of 20/5/5 s (CI)"
    )
    p.add_argument("--size", type=parse_size, default=(100, 1000), help="NODESxPODS")
    p.add_argument(
        "--window",
        type=float,
        default=1200.0,
        help="compare mode's window in seconds (default %(default)g: 20 minutes)",
    )
    p.add_argument(
        "--baseline-window",
        type=float,
        default=300.0,
        help="in-tree's and cluster mode's windows in seconds (default %(default)g)",
    )
    p.add_argument("--modes", default=",".join(MODES), help="subset of compare,intree,cluster")
    p.add_argument("--seed", type=int, default=SEED, help="the workload's seed")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default: by mode)")
    p.add_argument(
        "--label",
        default="",
        help="a note stored with the size's runs (an exploratory run says so here)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan and the command; run nothing"
    )


def plan_of(a: argparse.Namespace) -> dict[str, Any]:
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        raise SystemExit(f"bench churn: --modes from {', '.join(MODES)}")
    if a.smoke:
        plan: dict[str, Any] = {**SMOKE}
    else:
        nodes, pods = a.size
        windows = {m: a.window if m == "compare" else a.baseline_window for m in MODES}
        plan = {**FULL, "nodes": nodes, "pods": pods, "windowSeconds": windows}
    plan["modes"] = modes
    plan["windowSeconds"] = {m: plan["windowSeconds"][m] for m in modes}
    plan["seed"] = a.seed
    out = a.out or (SMOKE_OUT if a.smoke else OUT)
    plan["out"] = str(Path(out).resolve().with_suffix(".runs.json"))
    return plan


def command() -> list[str]:
    return [str(REPO / "tests" / "e2e" / "run.sh"), *TEST]


def run_test(plan: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    caldera = Path(os.environ.get("CALDERA_BIN", str(REPO / ".venv" / "bin" / "caldera")))
    if not caldera.is_file():
        raise SystemExit(
            f"bench churn: no caldera at {caldera} (run `uv sync`, or set CALDERA_BIN)"
        )
    env = {**os.environ, "CALDERA_CHURN_PLAN": json.dumps(plan), "CALDERA_BIN": str(caldera)}
    runs_file = Path(plan["out"])
    runs_file.unlink(missing_ok=True)
    print(f"bench churn: {json.dumps(plan)}", flush=True)
    test = subprocess.run(command(), env=env)
    runs = json.loads(runs_file.read_text()) if runs_file.exists() else []
    runs_file.unlink(missing_ok=True)
    return test.returncode, runs


def failures(runs: list[dict[str, Any]], modes: list[str]) -> list[str]:
    """What makes a run fail: an error, a mode not measured, no cycle or no job started, a
    difference not in flight, a status update or deletion that failed for good."""
    found = []
    measured = {r["mode"] for r in runs}
    found += [f"{m}: not measured" for m in modes if m not in measured]
    for r in runs:
        mode = r["mode"]
        if r.get("error"):
            found.append(f"{mode}: {r['error']}")
        if not r["cycles"]:
            found.append(f"{mode}: no cycle measured")
        if not r["jobsStarted"]:
            found.append(f"{mode}: no job started in the window")
        if r.get("statusErrors"):
            found.append(f"{mode}: {r['statusErrors']} pod updates or deletions failed")
        if mode == "compare" and not r.get("sessions", {}).get("compared"):
            found.append("compare: no session compared")
        for kind, k in (r.get("kinds") or {}).items():
            if k["inFlight"] != k["differences"]:
                found.append(
                    f"compare: {k['differences'] - k['inFlight']:g} difference(s) of kind {kind}"
                    " not in flight"
                )
    return found


def main(a: argparse.Namespace) -> int:
    plan = plan_of(a)
    out = Path(a.out or (SMOKE_OUT if a.smoke else OUT))
    if a.dry_run:
        print(json.dumps(plan))
        print(" ".join(command()))
        return 0
    load_before = os.getloadavg()
    began = time.monotonic()
    commit = head_commit()  # Caldera runs the working tree as it is when each mode starts
    returncode, runs = run_test(plan)
    seconds = round(time.monotonic() - began, 1)
    entry = {
        "plan": {k: v for k, v in plan.items() if k != "out"},
        "label": a.label,
        "measured": {
            **machine_info(),
            "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
            "commitAtStart": commit,
            "loadavg_before": load_before,
            "seconds": seconds,
            "testExitCode": returncode,
        },
        "runs": runs,
    }
    document: dict[str, Any] = {"sizes": {}}
    if out.exists() and not a.smoke:
        document = json.loads(out.read_text())
    document["sizes"][f"{plan['nodes']}x{plan['pods']}"] = entry
    document["sizes"] = dict(sorted(document["sizes"].items(), key=lambda kv: parse_size(kv[0])))
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(readme_text(document))
    problems = failures(runs, plan["modes"])
    if returncode != 0:
        problems.append(f"TestChurn exited {returncode}")
    for problem in problems:
        print(f"bench churn: {problem}", file=sys.stderr)
    print(f"bench churn: {seconds:g} s, written to {out}")
    return 1 if problems else 0


def writes_readme(a: argparse.Namespace) -> bool:
    """Whether the run wrote the committed results file, whose section ``python -m bench``
    then writes into bench/README."""
    return not a.dry_run and not a.smoke and Path(a.out or OUT).resolve() == OUT.resolve()


# ------------------------------------------------------------------------------ the section


def _f(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _mode_row(r: dict[str, Any]) -> str:
    cells = [
        r["mode"],
        _duration(r["windowSeconds"]),
        f"{r['jobsArrived']:,} ({r['podsArrived']:,})",
        f"{r['jobsStarted']:,}"
        + (f" ({r['unstarted']} waiting at the end)" if r["unstarted"] else ""),
        f"{_f(r['startP50Seconds'])} / {_f(r['startP90Seconds'])} / {_f(r['startP99Seconds'])}",
        f"{r['cycles']:,}",
        f"{r['cycleP50Ms']:,.0f} / {r['cycleP99Ms']:,.0f}",
        f"{r['overruns']:,}",
        f"{r['livePodsMean']:,.0f} ({r['pendingPodsMean']:,.0f})",
        f"{r['podsSucceeded']:,} / {r['podsFailed']:,}",
        f"{r['schedulerPeakRssMiB']:.0f}",
        f"{r['calderaPeakRssMiB']:.0f}" if r["mode"] != "intree" else "—",
        f"{r['loadAvgBefore']:.1f}–{r['loadAvgAfter']:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


MODE_HEAD = (
    "| mode | window | jobs arrived (pods) | jobs started | time to start p50 / p90 / p99 (s)"
    " | cycles | cycle p50 / p99 (ms) | cycles > 1 s | live pods (pending) | pods Succeeded /"
    " Failed | vc-scheduler RSS (MiB) | Caldera RSS (MiB) | load |"
)


def _compare_lines(r: dict[str, Any]) -> list[str]:
    sessions = r.get("sessions") or {}
    compared = sessions.get("compared", 0)
    kinds: dict[str, dict[str, float]] = r.get("kinds") or {}
    total = sum(k["differences"] for k in kinds.values())
    in_flight = sum(k["inFlight"] for k in kinds.values())
    skipped = ", ".join(f"{v:g} {k}" for k, v in sorted(sessions.items()) if k != "compared")
    per = r.get("differencesPerSession") or {}
    with_diff = r["sessionsWithDifferences"]
    lines = [
        f"Compare mode: {compared:g} sessions compared ({skipped or 'none skipped'}); with a"
        f" difference: {with_diff:,} ({100 * with_diff / compared if compared else 0:.0f} %);"
        f" differences: {total:,.0f}, {total / compared if compared else 0:.2f} per compared"
        f" session (p50 {per.get('p50', 0):g}, p99 {per.get('p99', 0):g}, max"
        f" {per.get('max', 0):g}); in flight: {in_flight:,.0f}, not in flight:"
        f" {total - in_flight:,.0f}.",
        "",
        "| kind | differences | per compared session | sessions with it | in flight | why |",
        "|---|---|---|---|---|---|",
    ]
    for kind in sorted(kinds, key=lambda k: (-kinds[k]["differences"], k)):
        k = kinds[kind]
        lines.append(
            f"| {kind} | {k['differences']:,.0f} |"
            f" {k['differences'] / compared if compared else 0:.3f} | {k['sessions']:,} |"
            f" {k['inFlight']:,.0f} | {WHY.get(kind, 'not explained yet')} |"
        )
    if not kinds:
        lines.append("| (none) | 0 | 0 | 0 | 0 | |")
    return lines


def readme_text(doc: dict[str, Any]) -> str:
    """The section: per size, the workload, a row per mode, and compare mode's differences."""
    lines = [
        "_Generated by `python -m bench report` from [results/churn.json](results/churn.json),"
        " written by `python -m bench churn`._",
    ]
    for size, entry in doc["sizes"].items():
        plan, m = entry["plan"], entry["measured"]
        nodes, pods = parse_size(size)
        rate = pods / ((plan["minRunSeconds"] + plan["maxRunSeconds"]) / 2 * 3.75)
        lines += [
            "",
            f"**{nodes:,} nodes, {pods:,} live pods** (seed {plan['seed']}; started at commit"
            f" {m.get('commitAtStart', '?')}, ended {m.get('date', '?')} at"
            f" {m.get('commit', '?')}; {m.get('cpus', '?')} CPUs, load"
            f" {m['loadavg_before'][0]:.1f} before; {m['seconds'] / 60:.0f} min in all"
            + (f"; {entry['label']}" if entry.get("label") else "")
            + f"). Jobs of 1, 2, 4 or 8 pods of 2.5 CPU arriving at {rate:.2f}/s (Poisson),"
            f" running {plan['minRunSeconds']:g}–{plan['maxRunSeconds']:g} s (uniform),"
            f" {100 * plan['failRatio']:g} % of pods Failed; after a fill of {pods:,} pods at"
            f" t=0 ({_residual(plan)}), {_arrivals(plan)}; measured over each mode's window.",
            "",
            MODE_HEAD,
            "|" + "---|" * MODE_HEAD.count(" | ") + "---|",
        ]
        runs = entry["runs"]
        lines += [_mode_row(r) for r in runs]
        missing = [mode for mode in plan["modes"] if mode not in {r["mode"] for r in runs}]
        if missing:
            lines += ["", f"Not measured at this size: {', '.join(missing)}."]
        ratio = _ratio(runs)
        if ratio:
            lines += ["", ratio]
        for r in runs:
            if r["mode"] == "compare":
                lines += ["", *_compare_lines(r)]
    return "\n".join(lines)


def _residual(plan: dict[str, Any]) -> str:
    if plan.get("fillResidual") == "equilibrium":
        return "their remaining runs drawn as in a steady state"
    return f"their remaining runs uniform on (0, {plan['maxRunSeconds']:g}] s"


def _arrivals(plan: dict[str, Any]) -> str:
    if plan.get("arrivalsFrom") == "window":
        return "the arrivals starting once it runs"
    return "the arrivals starting with its creation"


def _ratio(runs: list[dict[str, Any]]) -> str:
    by = {r["mode"]: r for r in runs}
    if "intree" not in by or "cluster" not in by:
        return ""
    i, c = by["intree"], by["cluster"]
    if not i["cycleP50Ms"] or not i["startP50Seconds"]:
        return ""
    return (
        f"Cluster mode against in-tree: cycle p50 {c['cycleP50Ms'] / i['cycleP50Ms']:.2f}×,"
        f" time to start p50 {c['startP50Seconds'] / i['startP50Seconds']:.2f}×, p90"
        f" {c['startP90Seconds'] / i['startP90Seconds']:.2f}×."
        if i["startP90Seconds"]
        else ""
    )
