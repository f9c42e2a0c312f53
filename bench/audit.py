"""``python -m bench.audit``: what cluster mode's self-audit (app/cluster_state/audit.py) costs.

Two figures, in-process on the benchmark's own cluster (bench/workloads.py, 1,000 nodes and
10,000 pods by default), the job group's configuration (bench/snapshot.py):

- **on the call's path**: the extender answering predicate (a pending task against a node),
  prioritize (against 10 nodes) and jobEnqueueable, with the audit taking its sample against
  without it, paired round by round (the median ratio over rounds and its quartiles). The
  audit's part is a few dictionary operations; the ratio says whether they show;
- **between sessions**: ``SelfAudit.session_closed`` with a full sample (8 jobs, 8 tasks and 8
  nodes) compared against the session's state, the work done after onSessionClose's answer.

The session's state here is the same cluster decoded from its onSessionOpen body, as Caldera
would derive it with nothing moving: every comparison walks every field and finds nothing.
Results: bench/results/audit.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from app.cluster_state.audit import SelfAudit
from app.config import load_config_text
from app.extender import Extender
from app.metrics import Metrics
from app.session import SessionManager
from bench import workloads as wl
from bench.snapshot import JOB_GROUP
from schemas.api import JobInfo, NodeInfo, TaskInfo
from schemas.requests import OnSessionOpenRequest

RESULTS = Path(__file__).parent / "results" / "audit.json"
CALLS = 400
"""Calls per verb per round."""


def _bodies(c: wl.Cluster) -> dict[str, list[bytes]]:
    names = c.node_names
    pending = c.pending[:CALLS]
    predicate = [
        wl.predicate_body(t, c.nodes[names[i % len(names)]])
        for i, (_, _, t, _) in enumerate(pending)
    ]
    prioritize = [
        wl.prioritize_body(t, [c.nodes[names[(i + k) % len(names)]] for k in range(10)])
        for i, (_, _, t, _) in enumerate(pending[: CALLS // 4])
    ]
    jobs = list(c.job_bytes.values())
    enqueue = [wl.job_body(jobs[i % len(jobs)]) for i in range(CALLS)]
    return {"predicate": predicate, "prioritize": prioritize, "jobEnqueueable": enqueue}


def _time(extender: Extender, verb: str, bodies: list[bytes]) -> float:
    """Seconds per call (CPU time: the neighbours' share of the machine is not ours)."""
    start = time.process_time()
    for body in bodies:
        extender.handle(verb, body)
    return (time.process_time() - start) / len(bodies)


def measure(nodes: int, pods: int, rounds: int) -> dict[str, Any]:
    now = datetime.now(UTC)
    c = wl.plugin_cluster(nodes, pods, now)
    snapshot = bytearray(wl.session_open_body(c))
    state = msgspec.json.decode(snapshot, type=OnSessionOpenRequest)
    config = load_config_text(JOB_GROUP, "job-group.yaml")
    metrics = Metrics()
    extender = Extender(config, SessionManager(config, metrics), metrics)
    extender.handle("onSessionOpen", snapshot)
    bodies = _bodies(c)
    audit = SelfAudit()

    def with_audit(run: Callable[[], float]) -> float:
        extender._audit = audit  # as cluster mode attaches it (Extender.session_state)
        audit.session_opened(1, state)
        try:
            return run()
        finally:
            extender._audit = None
            audit.session_closed()

    ratios: dict[str, list[float]] = {verb: [] for verb in bodies}
    per_call: dict[str, list[float]] = {verb: [] for verb in bodies}
    for round_ in range(rounds):
        for verb, verb_bodies in bodies.items():
            pair = []
            run = functools.partial(_time, extender, verb, verb_bodies)
            for audited in (round_ % 2 == 0, round_ % 2 == 1):  # alternate which goes first
                pair.append((audited, with_audit(run) if audited else run()))
            off = next(t for a, t in pair if not a)
            on = next(t for a, t in pair if a)
            ratios[verb].append(on / off)
            per_call[verb].append(off)
    closes = []
    # Volcano's objects decoded from their own bytes, as its calls deliver them: equal to the
    # state's, not the same objects.
    jobs = [msgspec.json.decode(j, type=JobInfo) for j in list(c.job_bytes.values())[:8]]
    tasks = [msgspec.json.decode(t, type=TaskInfo) for _, _, t, _ in c.pending[:8]]
    sent_nodes = [msgspec.json.decode(n, type=NodeInfo) for n in list(c.nodes.values())[:8]]
    for _ in range(rounds):
        audit.session_opened(1, state)
        for job in jobs:
            audit.job(job)
        for task in tasks:
            audit.task(task)
        for node in sent_nodes:
            audit.nodes((node,))
        start = time.process_time()
        result = audit.session_closed()
        closes.append(time.process_time() - start)
        assert result is not None and result.unexplained == 0, result
    return {
        "nodes": nodes,
        "pods": pods,
        "rounds": rounds,
        "loadAverage": round(os.getloadavg()[0], 2),
        "perCall": {
            verb: {
                "withoutAuditMicroseconds": round(statistics.median(per_call[verb]) * 1e6, 1),
                "ratioMedian": round(statistics.median(r), 3),
                "ratioQuartiles": [round(q, 3) for q in _quartiles(r)],
            }
            for verb, r in ratios.items()
        },
        "sessionClosedMilliseconds": {
            "median": round(statistics.median(closes) * 1e3, 2),
            "max": round(max(closes) * 1e3, 2),
            "objects": 24,
        },
    }


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    result = measure(a.nodes, a.pods, a.rounds)
    text = json.dumps(result, indent=2) + "\n"
    a.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
