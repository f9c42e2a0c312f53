"""What the decision record (app/explain.py) costs: memory per 1,000 jobs and time per verb.

``python -m bench explain [--jobs N] [--nodes N]`` builds one session's log the way the framework
fills it for a cycle of Volcano's: per job, three jobEnqueueable verdicts with reasons (the
default configuration's sla, overcommit, resourcequota) and a jobReady; per job one pending
task asked about every node, a third of them failing; its prioritize; and one preemptor whose
evictees a plugin vetoes in part. A second log holds only eviction questions, Volcano's preempt
action asking for every preemptor about 30 running pods of a 2,000-pod cluster, each evictee
decoded afresh per question as a request delivers it, half of them vetoed by each of three
plugins. Memory is measured with ``tracemalloc`` (what the log holds, not the process); the
time per call is the framework's vote, predicate and preemptable with the record against
without it, in-process, best of five rounds. Results: bench/results/explain.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.config import PluginOption
from app.explain import DEFAULT_ENTRIES, DecisionRecord, SessionLog
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import EvictResult, FitError, Plugin, Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.reasons import Explained, Reason
from plugins.api.release import Release
from schemas.api import JobInfo, NodeInfo, TaskInfo

RESULTS = Path(__file__).resolve().parent / "results"
T0 = datetime(2026, 11, 26, tzinfo=UTC)
FULL = Reason("insufficient-idle", "needs 8 CPU with 40 CPU already admitted, 44 CPU idle")


class Decides(Plugin):
    """Answers as the hosted plugins do, with their reasons: a Reject every other job, a
    predicate failing on a third of the nodes, a score per node, and vetoes."""

    name = "decides"

    def __init__(self) -> None:
        super().__init__(Arguments())

    def job_enqueueable(self, job: JobInfo) -> Explained[Vote]:
        return Explained(Vote.REJECT if job.Priority % 2 else Vote.ABSTAIN, FULL)

    def job_ready(self, job: JobInfo) -> bool:
        return True

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError("node(s) didn't match the node group") if hash(node.Name) % 3 == 0 else None

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        return float(len(node.Name))

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        spared = {t.UID: Reason("min-runtime", "protected until noon") for t in preemptees[::2]}
        return Explained(
            ([t for t in preemptees if t.UID not in spared], Vote.PERMIT), vetoes=spared
        )


def build(log: SessionLog | None, plugins: int = 3) -> Framework:
    tier = [
        Slot(PluginOption(name=f"p{i}"), plugin, plugin.hooks())
        for i, plugin in enumerate(Decides() for _ in range(plugins))
    ]
    return Framework([tier], Release(1, 15), Metrics(), log, clock=lambda: T0)


def cycle(fw: Framework, jobs: int, nodes: Sequence[NodeInfo]) -> None:
    enqueueable, ready = BY_VERB["jobEnqueueable"], BY_VERB["jobReady"]
    predicate, prioritize = BY_VERB["predicate"], BY_VERB["prioritize"]
    preemptable = BY_VERB["preemptable"]
    evictees = [TaskInfo(UID=f"v{i}", Name=f"victim-{i}", Namespace="ns") for i in range(20)]
    for j in range(jobs):
        job = JobInfo(Name=f"job-{j:05d}", Namespace=f"team-{j % 10}", Queue="q", Priority=j)
        fw.vote(enqueueable, job)
        fw.all_true(ready, job)
        task = TaskInfo(UID=f"t{j}", Name=f"job-{j:05d}-0", Namespace=job.Namespace,
                        Job=f"{job.Namespace}/{job.Name}")  # fmt: skip
        for node in nodes:
            fw.first_failure(predicate, task, node)
        fw.score_sum(prioritize, task, nodes)
        if j % 100 == 0:
            fw.victims(preemptable, task, evictees)


def memory_per_1000_jobs(jobs: int, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    record = DecisionRecord(1, entries=10**9)
    # The framework subscribes its session's log when built (app/decisions.py): both exist
    # before the measurement starts, so what it holds is what the cycle recorded.
    fw = build(record.open(1, T0))
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    cycle(fw, jobs, nodes)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    log = record.logs[-1]
    return {
        "MiB_per_1000_jobs": round(held / 2**20 * 1000 / jobs, 2),
        "entries_per_job": round(log.size / jobs, 1),
        "bytes_per_entry": round(held / log.size, 1),
    }


def evictees(question: int, count: int = 30, pods: int = 2000) -> list[TaskInfo]:
    """``count`` running pods of a ``pods``-pod cluster, decoded afresh (new strings each)."""
    first = question * 7 % pods
    numbers = [(first + i) % pods for i in range(count)]
    return [
        TaskInfo(UID=f"uid-{n:05d}", Name=f"job-{n:05d}-0", Namespace="team-a", Job="team-a/job")
        for n in numbers
    ]


def memory_of_evictions(preemptors: int) -> dict[str, float]:
    """What a log of eviction questions holds per kept entry and per preemptor."""
    record = DecisionRecord(1, entries=10**9)
    fw = build(record.open(1, T0))  # subscribed when built, before the measurement starts
    preemptable = BY_VERB["preemptable"]
    questions = [
        (TaskInfo(UID=f"p{i}", Name=f"pending-{i}", Namespace="team-b", Job="team-b/p"),
         evictees(i))
        for i in range(preemptors)
    ]  # fmt: skip
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for preemptor, pods in questions:
        fw.victims(preemptable, preemptor, pods)
    del questions, preemptor, pods  # what the log does not keep goes
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    log = record.logs[-1]
    return {
        "KiB_per_preemptor": round(held / 1024 / preemptors, 2),
        "entries_per_preemptor": round(log.size / preemptors, 1),
        "bytes_per_entry": round(held / log.size, 1),
    }


def best_of(rounds: int, fn: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def time_per_call(nodes: Sequence[NodeInfo], calls: int = 2000) -> dict[str, dict[str, float]]:
    """µs per framework call with and without the record, three plugins answering."""
    enqueueable, predicate = BY_VERB["jobEnqueueable"], BY_VERB["predicate"]
    preemptable = BY_VERB["preemptable"]
    job = JobInfo(Name="j", Namespace="ns", Queue="q", Priority=1)
    task = TaskInfo(UID="t", Name="t-0", Namespace="ns", Job="ns/j")
    pods = evictees(0)
    out: dict[str, dict[str, float]] = {}
    for label, record in (("without", None), ("with", DecisionRecord(1, DEFAULT_ENTRIES))):
        fw = build(None if record is None else record.open(1, T0))

        def votes(fw: Framework = fw) -> None:
            for _ in range(calls):
                fw.vote(enqueueable, job)

        def predicates(fw: Framework = fw) -> None:
            for i in range(calls):
                fw.first_failure(predicate, task, nodes[i % len(nodes)])

        def evictions(fw: Framework = fw) -> None:
            for _ in range(calls):
                fw.victims(preemptable, task, pods)

        out[label] = {
            "jobEnqueueable_us": best_of(5, votes) / calls * 1e6,
            "predicate_us": best_of(5, predicates) / calls * 1e6,
            "preemptable_us": best_of(5, evictions) / calls * 1e6,
        }
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=1000, help="jobs in the session (default 1000)")
    p.add_argument("--nodes", type=int, default=100, help="nodes each task is checked against")
    p.add_argument("--out", type=Path, default=RESULTS / "explain.json")


def main(a: argparse.Namespace) -> int:
    nodes = [NodeInfo(Name=f"node-{i:04d}") for i in range(a.nodes)]
    memory = memory_per_1000_jobs(a.jobs, nodes)
    evicting = memory_of_evictions(a.jobs)
    timing = time_per_call(nodes)
    # The timings move with the machine's load (best of five does not hide a busy neighbour):
    # the load and CPUs go into the document and the README's text beside them.
    machine = {"cpus": os.cpu_count(), "loadavg": round(os.getloadavg()[0], 1)}
    document: dict[str, Any] = {"jobs": a.jobs, "nodes": a.nodes, "memory": memory,
                                "evictions": evicting, "time_per_call": timing,
                                "machine": machine}  # fmt: skip
    a.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=1) + "\n"
    a.out.write_text(text)
    print(text, end="")
    return 0
