"""``python -m bench compare-churn``: compare mode's differences while pods bind and finish.

Runs the end-to-end scenario ``compare-churn`` (``tests/e2e/compare_churn_test.go``: vc-scheduler
v1.14.1, a real API server, Caldera with ``sessionState: compare``) on its fixed workload, reads
the figures it writes (``CALDERA_E2E_CHURN_OUT``), adds where and when they were measured, and
writes ``bench/results/compare-churn.json``; bench/README's section on compare mode under churn is
rendered from that file (:func:`readme_text`, by ``python -m bench report``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import cpu_model, head_commit

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
OUT = RESULTS / "compare-churn.json"
README_PATH = REPO / "bench" / "README.md"
TEST = ["-run", "^TestE2E$/^compare-churn$"]

WHY: dict[str, str] = {
    "task.extra": "a pod created after Volcano's snapshot and before Caldera's freeze: only"
    " Caldera has its task",
    "task.missing": "a pod deleted after Volcano's snapshot and before Caldera's freeze (or"
    " created after Caldera's freeze and before Volcano's snapshot)",
    "task.Status": "a pod bound, marked Running or Succeeded, or deleting between the two"
    " instants: the two informers delivered that update at different times",
    "task.Pod": "the same pod update seen by one side only (its phase, nodeName, conditions)",
    "task.NodeName": "a pod bound between the two instants",
    "job.TotalRequest": "its job's tasks: a pod created or deleted between the two instants",
    "job.Allocated": "its job's tasks: a pod bound, finished or deleted between the two instants",
    "job.extra": "a PodGroup created between the two instants",
    "job.missing": "a PodGroup deleted between the two instants",
    "job.PodGroup": "a PodGroup whose status Volcano wrote at its session's close, seen by one"
    " side only",
    "node.Tasks": "the tasks on the node: a pod bound, finished or deleted between the two"
    " instants",
    "node.Used": "the tasks on the node (as node.Tasks)",
    "node.Idle": "the tasks on the node (as node.Tasks)",
    "node.Releasing": "a pod on the node deleting between the two instants",
    "queue.Queue": "a Queue whose status Volcano wrote at its session's close, seen by one side"
    " only",
    "namespace.QuotaStatus": "the namespace's quota used, which the API server moves as pods"
    " come and go",
}
"""Why each kind occurs under churn (the cause its in-flight classification names)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=OUT, help="results JSON (default %(default)s)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the end-to-end command and run nothing"
    )


def command() -> list[str]:
    return [str(REPO / "tests" / "e2e" / "run.sh"), *TEST]


def main(a: argparse.Namespace) -> int:
    if a.dry_run:
        print(" ".join(command()))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "churn.json"
        env = {
            **os.environ,
            "CALDERA_E2E_CHURN_OUT": str(figures),
            "CALDERA_BIN": os.environ.get("CALDERA_BIN", str(REPO / ".venv" / "bin" / "caldera")),
        }
        load_before = os.getloadavg()[0]
        started = time.time()
        test = subprocess.run(command(), env=env)
        if test.returncode != 0 or not figures.exists():
            print(f"bench compare-churn: the scenario failed (exit {test.returncode})")
            return 1
        document: dict[str, Any] = json.loads(figures.read_text())
    document["measured"] = {
        "commit": head_commit(),
        "date": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
        "loadBefore": round(load_before, 1),
        "loadAfter": round(os.getloadavg()[0], 1),
    }
    a.out.write_text(json.dumps(document, indent=2) + "\n")
    print(readme_text(document))
    return 0


def writes_readme(a: argparse.Namespace) -> bool:
    """Whether the run wrote the committed results file, whose section ``python -m bench``
    then writes into bench/README (bench/readme.py imports this module, not the other way)."""
    return not a.dry_run and Path(a.out).resolve() == OUT.resolve()


def readme_text(doc: dict[str, Any]) -> str:
    """The section's text: the workload, then per kind its differences, per session, in flight,
    and why."""
    w, m = doc["workload"], doc.get("measured", {})
    compared = doc["sessions"].get("compared", 0)
    kinds: dict[str, dict[str, float]] = doc["kinds"]
    total = sum(k["differences"] for k in kinds.values())
    in_flight = sum(k["inFlight"] for k in kinds.values())
    lines = [
        f"Commit {m.get('commit', '?')}, {m.get('cpus', '?')} CPUs, load {m.get('loadBefore', '?')}"
        f" before and {m.get('loadAfter', '?')} after. Workload: {w['nodes']} nodes,"
        f" {w['waves']} jobs of {w['podsPerJob']} one-CPU pods, one every"
        f" {w['waveEverySeconds']:g} s; each pod marked Succeeded {w['runSeconds']:g} s after it"
        f" runs and each finished job deleted {w['keepSeconds']:g} s later ({doc['pods']} pods"
        f" bound and finished in {doc['seconds']:.1f} s).",
        "",
        f"Sessions compared: {compared:g} ({_others(doc['sessions'])}); with a difference:"
        f" {doc['sessionsWithDifferences']} ({_percent(doc['sessionsWithDifferences'], compared)});"
        f" differences: {total:g} ({total / compared if compared else 0:.2f} per session), in"
        f" flight: {in_flight:g}.",
        "",
        "| kind | differences | per session | sessions with it | in flight | why |",
        "|---|---|---|---|---|---|",
    ]
    for kind in sorted(kinds, key=lambda k: (-kinds[k]["differences"], k)):
        k = kinds[kind]
        lines.append(
            f"| {kind} | {k['differences']:g} | {k['differences'] / compared if compared else 0:.2f}"
            f" | {k['sessions']} | {k['inFlight']:g} | {WHY.get(kind, 'not explained yet')} |"
        )
    if not kinds:
        lines.append("| (none) | 0 | 0 | 0 | 0 | |")
    return "\n".join(lines)


def _others(sessions: dict[str, float]) -> str:
    rest = {k: v for k, v in sessions.items() if k != "compared" and v}
    if not rest:
        return "none skipped"
    return ", ".join(f"{v:g} {k}" for k, v in sorted(rest.items()))


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "—"
