"""How big Volcano's bodies get and how long Caldera takes with them, for a cluster of a given
size: the estimates behind ``caldera volcano-config --nodes N --pods P`` warnings.

Every figure comes from the benchmark (``bench/README.md``; the latency figures from the full run
of 2026-11-21 at commit 7edf20e on one core of an AMD EPYC VM, job-plugin configuration) or from
the bodies ``bench/workloads.py`` builds, which follow Go's ``json.Marshal`` of Volcano's structs.
``tests/app/test_sizing.py`` regenerates bodies with bench/workloads.py and checks the byte
figures against them, and checks the latency figures against the published full run
(``bench/results/latest.json``): every measured p99 at or below the estimate, and within 4x of
it where the body dominates, so the model cannot drift from either silently. Later runs are
faster (75 MiB: 129 ms p99 at 92b0a1b): the older rates are kept as the margin.

The model is deliberately simple and errs high: one ingest rate for every large body, a fixed
per-request cost for small ones, and, for predicate, Volcano's 16 parallel calls queueing on
Caldera's single event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from plugins.api.extension_points import BY_VERB, Rule

# --- body sizes (bench/workloads.py; fitted on make_cluster(20, 400), (20, 800), (40, 400)) ---

SESSION_BYTES_PER_NODE = 88_400
"""onSessionOpen bytes per node: its Node (~18.5 KiB with 50 status.images), NodeInfo
bookkeeping, and ten DaemonSet pods as TaskInfos on it."""
SESSION_BYTES_PER_POD = 34_900
"""onSessionOpen bytes per Volcano pod: its TaskInfo in its node's NodeInfo.Tasks (when
running) and four times in its JobInfo (Tasks, TaskStatusIndex, SubJobs)."""
NODE_INFO_BASE_BYTES = 88_100
"""One NodeInfo, as predicate and prioritize carry it, before its Volcano pods."""
NODE_INFO_BYTES_PER_POD = 5_700
"""Added to a NodeInfo per Volcano pod of the cluster per node (3/4 of them running)."""
TASK_INFO_BYTES = 7_200
"""One TaskInfo: a ~6.4 KiB pod plus ~1 KiB of Volcano's bookkeeping."""
JOB_INFO_BYTES_PER_TASK = 29_200
"""JobInfo bytes per task of the job (each task appears four times)."""
JOB_TASKS = 16
"""Tasks of the job in jobEnqueueable/jobEnqueued/jobReady bodies: the benchmark's largest job
(jobReady, 16 tasks, 410 KiB)."""
DAEMON_PODS_PER_NODE = 10
"""DaemonSet pods per node in the benchmark's clusters: eviction candidates too."""
SMALL_BODY_BYTES = 2_048
"""queueOverused (a QueueInfo) and onSessionClose ({}): a few hundred bytes at most."""

# --- latency (full run at 7edf20e, Caldera over HTTP, one core; checked against latest.json) ---

INGEST_P99_BYTES_PER_SECOND = 75 * 2**20 / 0.360
"""p99 ingest rate: onSessionOpen of 100 nodes / 2,000 pods, 75 MiB in 360 ms p99 (208 MiB/s;
the 375 MiB body measured 1,488 ms p99, 252 MiB/s, so the rate errs low)."""
FIXED_P99_SECONDS = 0.0027
"""p99 of a request whose body costs nothing: allocate (6 KiB) 2.70 ms, onSessionClose 2.44 ms."""
PREDICATE_IN_FLIGHT = 16
"""Volcano's PredicateNodes asks up to 16 nodes at once (workqueue.ParallelizeUntil(16)); one
event loop answers them one after another, so a call can wait for 15 others. The benchmark's
predicate with 16 in flight: p99 32 ms for 241 KiB; this model says 61 ms."""
CYCLE_BYTES_PER_SECOND = 2047 * 2**20 / 5.715
"""Sustained rate over a replayed cycle (onSessionOpen 100/2,000, then 50 tasks x (predicate on
100 nodes, prioritize on 100 nodes, allocate, jobReady)): 2,047 MiB in 5,715 ms (358 MiB/s)."""
BENCH_PENDING_TASKS = 50
"""Pending tasks per cycle in the benchmark's replayed cycle: the default of --pending-tasks."""

# --- Volcano's own side (python -m bench cluster: the real vc-scheduler v1.14.1) ---

VOLCANO_SNAPSHOT_BYTES_PER_SECOND = 163.9 * 2**20 / 1.952
"""How fast Volcano's extender gets the session snapshot out: its OnSessionOpen time (Volcano's
``plugin_scheduling_latency_milliseconds``: ``json.Marshal`` of the whole session, the POST,
the wait) less Caldera's own onSessionOpen time, over the snapshot's bytes: 84 MiB/s, from the
largest snapshot of the published cluster run (bench/results/cluster.json at 51aa5dc, 1,000
nodes / 10,000 pods, 164 MiB: Volcano's OnSessionOpen 2,324 ms, Caldera's 373 ms of it), five
times Caldera's own time for the same body. Every extender pays it, a server answering at once
too (its cycles were no faster); in-tree plugins do not."""


@dataclass(frozen=True)
class Cluster:
    nodes: int
    pods: int
    pending_tasks: int = BENCH_PENDING_TASKS

    @property
    def pods_per_node(self) -> float:
        return self.pods / self.nodes if self.nodes else 0.0

    def node_info_bytes(self) -> int:
        return round(NODE_INFO_BASE_BYTES + NODE_INFO_BYTES_PER_POD * self.pods_per_node)

    def body_bytes(self, verb: str) -> int:
        """Estimated largest body of ``verb`` for this cluster."""
        if verb == "onSessionOpen":
            return SESSION_BYTES_PER_NODE * self.nodes + SESSION_BYTES_PER_POD * self.pods
        if verb == "predicate":
            return TASK_INFO_BYTES + self.node_info_bytes()
        if verb == "prioritize":  # every node passed the predicates: the worst case
            return TASK_INFO_BYTES + self.nodes * self.node_info_bytes()
        if verb in ("preemptable", "reclaimable"):  # every pod of one node is a candidate
            evictees = self.pods_per_node + DAEMON_PODS_PER_NODE
            return round(TASK_INFO_BYTES * (1 + evictees))
        if verb in ("jobEnqueueable", "jobEnqueued", "jobReady"):
            return JOB_INFO_BYTES_PER_TASK * JOB_TASKS
        if verb in ("allocate", "deallocate"):
            return TASK_INFO_BYTES
        return SMALL_BODY_BYTES

    def p99_seconds(self, verb: str) -> float:
        """Estimated p99 latency of one ``verb`` call, as Volcano's HTTP client waits for it."""
        one = FIXED_P99_SECONDS + self.body_bytes(verb) / INGEST_P99_BYTES_PER_SECOND
        return one * PREDICATE_IN_FLIGHT if verb == "predicate" else one

    def cycle_bytes(self, verbs: set[str]) -> int:
        """Bytes Volcano sends Caldera in one cycle: the snapshot, and for each pending task a
        predicate per node and one prioritize over all nodes (an upper bound: Volcano can stop
        predicates early, --percentage-nodes-to-find)."""
        total = self.body_bytes("onSessionOpen") if "onSessionOpen" in verbs else 0
        if "predicate" in verbs:
            total += self.pending_tasks * self.nodes * self.body_bytes("predicate")
        if "prioritize" in verbs:
            total += self.pending_tasks * self.body_bytes("prioritize")
        return total

    def cycle_seconds(self, verbs: set[str]) -> float:
        return self.cycle_bytes(verbs) / CYCLE_BYTES_PER_SECOND


def mib(size: float) -> str:
    return f"{size / 2**20:,.1f} MiB"


def warnings(
    cluster: Cluster,
    verbs: list[str],
    http_timeout_seconds: float,
    body_limit: Callable[[str], int],
    schedule_period_seconds: float,
) -> list[str]:
    """What hurts for this cluster: each message states the estimate behind it."""
    found: list[str] = []
    if not verbs:
        return found
    heaviest = max(verbs, key=cluster.p99_seconds)
    p99 = cluster.p99_seconds(heaviest)
    if http_timeout_seconds < p99:
        found.append(
            f"extender.httpTimeout {http_timeout_seconds:g}s is below the estimated p99 of"
            f" {heaviest} ({p99:.3f}s for a {mib(cluster.body_bytes(heaviest))} body at"
            f" {cluster.nodes} nodes / {cluster.pods} pods): Volcano would time out and"
            f" treat the call as failed. Use --http-timeout {max(1, round(p99 * 2 + 0.5))}s."
        )
    for setting in dict.fromkeys(BY_VERB[verb].body_limit for verb in verbs):
        bounded = [verb for verb in verbs if BY_VERB[verb].body_limit == setting]
        largest = max(bounded, key=cluster.body_bytes)
        size, limit = cluster.body_bytes(largest), body_limit(largest)
        if size > limit:
            consequence = (
                "Volcano would run every cycle without Caldera's plugins"
                if BY_VERB[largest].rule is Rule.OPEN
                else "Volcano would treat those calls as failed"
            )
            found.append(
                f"{setting} {limit} ({mib(limit)}) is below the estimated {largest} body of"
                f" {mib(size)} at {cluster.nodes} nodes / {cluster.pods} pods: Caldera would"
                f" refuse it with 413 and {consequence}. Set {setting} to at least"
                f" {size * 3 // 2} (1.5 x the estimate)."
            )
    if "onSessionOpen" in verbs:
        snapshot = cluster.body_bytes("onSessionOpen")
        volcano = snapshot / VOLCANO_SNAPSHOT_BYTES_PER_SECOND
        session = volcano + cluster.p99_seconds("onSessionOpen")
        if session > schedule_period_seconds:
            found.append(
                f"the session snapshot of about {mib(snapshot)} at {cluster.nodes} nodes /"
                f" {cluster.pods} pods costs Volcano about {volcano:.1f}s to marshal and send"
                f" (measured {mib(VOLCANO_SNAPSHOT_BYTES_PER_SECOND)}/s on vc-scheduler"
                f" v1.14.1, python -m bench cluster) and {session:.1f}s with Caldera's answer:"
                f" longer than the {schedule_period_seconds:g}s scheduling period, so every"
                " cycle runs late through any extender (in-tree plugins do not pay it)."
                " Lengthen --schedule-period, or keep these plugins in-tree at this size."
            )
    per_cycle = {"predicate", "prioritize"} & set(verbs)
    if per_cycle:
        seconds = cluster.cycle_seconds(set(verbs))
        if seconds > schedule_period_seconds:
            found.append(
                f"{' and '.join(sorted(per_cycle))} enabled: one cycle with"
                f" {cluster.pending_tasks} pending tasks on {cluster.nodes} nodes sends about"
                f" {mib(cluster.cycle_bytes(set(verbs)))}, about {seconds:.1f}s of Caldera's"
                f" time at {mib(CYCLE_BYTES_PER_SECOND)}/s, longer than the"
                f" {schedule_period_seconds:g}s scheduling period: cycles would run late."
                " Keep node filtering and scoring in-tree, or set managedResources so only"
                " the tasks that need Caldera reach it."
            )
    return found
