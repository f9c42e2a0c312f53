"""How big Volcano's bodies get and how long Volcano and Caldera take with them, for a cluster of a
given size: the estimates behind ``caldera volcano-config --nodes N --pods P`` warnings.

The session snapshot and Volcano's time for it come from the measurement of the real scheduler,
:data:`MEASUREMENT` (``python -m bench cluster``): the snapshot bytes and the extender plugin's
OnSessionOpen time vc-scheduler reported at 100 / 1,000, 500 / 5,000 and 1,000 / 10,000 nodes /
pods. ``tests/app/commands/test_sizing.py`` reads ``bench/results/cluster.json`` and holds every
estimate within 25% of it, so a new measurement keeps the model honest. Its objects are plain (bare
Nodes, small pods): a cluster whose pods carry more gives its own figure from
``caldera_request_body_bytes`` (``--snapshot-bytes`` / ``--bytes-per-pod``).

The other bodies come from the benchmark's synthetic objects (``bench/workloads.py``, which
follow Go's ``json.Marshal`` of Volcano's structs; the test regenerates them) and Caldera's
latency figures from the hot-path full run of 2026-11-21 at commit 7edf20e on one core of an
AMD EPYC VM (checked against ``bench/results/latest.json``: every measured p99 at or below the
estimate, and within 4x of it where the body dominates). Later runs are faster (75 MiB: 129 ms
p99 at 92b0a1b): the older rates are kept as the margin.

The model is deliberately simple and errs high: one ingest rate for every large body, a fixed
per-request cost for small ones, and, for predicate, Volcano's 16 parallel calls queueing on
Caldera's single event loop.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from app.cluster_state.modes import SessionStateMode
from app.commands import measured
from plugins.api.extension_points import BY_VERB, Rule, Verb

# --- the session snapshot and Volcano's time for it (python -m bench cluster) ---


@dataclass(frozen=True)
class Measurement:
    """The cluster-scale run the snapshot figures come from, as the output names it."""

    file: str
    date: str
    commit: str
    release: str
    nodes: int
    pods: int
    snapshot_bytes: int
    """The largest size's mean onSessionOpen body through Caldera (vc-scheduler's snapshot;
    the median over the rounds of a repeated run)."""
    open_seconds: float
    """The extender plugin's mean OnSessionOpen there (``plugin_scheduling_latency``; the
    median over the rounds)."""

    def __str__(self) -> str:
        return (
            f"{self.file} ({self.date} at {self.commit}, {self.release}: {mib(self.snapshot_bytes)}"
            f" and {self.open_seconds:.2f}s of OnSessionOpen at {self.nodes:,} nodes /"
            f" {self.pods:,} pods)"
        )


MEASUREMENT = Measurement(
    file="bench/results/cluster.json",
    date="2026-11-27",
    commit="d2e7bc4",
    release="vc-scheduler v1.14.1",
    nodes=1000,
    pods=10000,
    snapshot_bytes=166_084_532,
    open_seconds=1.623,
)
SNAPSHOT_BYTES_PER_NODE = 8_060
"""A NodeInfo without pods or images (bench/workloads.py's Node, its labels, annotations and
managed fields): the measurement ran 10 pods per node at every size, so it cannot tell a node's
bytes from its pods'; this share errs high for its bare Nodes."""
SNAPSHOT_BYTES_PER_POD = (
    MEASUREMENT.snapshot_bytes - SNAPSHOT_BYTES_PER_NODE * MEASUREMENT.nodes
) // MEASUREMENT.pods
"""The rest of the measured snapshot, per pod (15,802 bytes: its TaskInfo in its JobInfo four
times and once in its node's NodeInfo when running)."""
SMALLEST_MEASURED = (16_538_519, 0.1139)
"""The smallest size of the same run (100 nodes / 1,000 pods, job plugins): its mean snapshot
bytes and the extender's mean OnSessionOpen seconds."""


def _open_time_fit() -> tuple[float, float]:
    """a, b of Volcano's extender OnSessionOpen for a snapshot of x MiB, a x + b x², through the
    smallest and the largest measured runs."""
    (x1, t1) = (SMALLEST_MEASURED[0] / 2**20, SMALLEST_MEASURED[1])
    (x2, t2) = (MEASUREMENT.snapshot_bytes / 2**20, MEASUREMENT.open_seconds)
    b = (t2 / x2 - t1 / x1) / (x2 - x1)
    return t1 / x1 - b * x1, b


OPEN_SECONDS_PER_MIB, OPEN_SECONDS_PER_MIB_SQUARED = _open_time_fit()
"""Volcano's extender OnSessionOpen (``json.Marshal`` of the whole session, the POST, Caldera's
answer, which comes before its build: app/server/routes/verbs.py) for a snapshot of x MiB:
a x + b x² (15.8 MiB in 0.114 s, 158.4 MiB in 1.623 s, medians of three rounds; the 500 / 5,000
run between them, 78.4 MiB in 0.666 s, the fit says 0.670 s). The rate moves with the snapshot and
with the machine (139 MiB/s at 16 MiB and 98 MiB/s at 158 MiB in this run; 99 and 110 MiB/s in
the single run of c68e0e9; 86 and 94 MiB/s in the run of 938ab83, whose answer still waited for
the build), so the fit goes through both ends rather than assume one rate."""
PERIOD_SHARE = 0.75
"""The share of the scheduling period OnSessionOpen may take: the actions need the rest (the
same measurement's in-tree idle cycles took 146 ms at 500 / 5,000 and 209 ms at 1,000 /
10,000; the cycle through Caldera overran the 1 s period at 500 / 5,000, 1,014 ms with
OnSessionOpen 0.666 s of it)."""

# --- other bodies (bench/workloads.py; fitted on make_cluster(20, 400), (20, 800), (40, 400)) ---

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

# --- memory: what the container's limit must hold (docs/operator-guide.md §2, "Memory") ---

IDLE_RSS_BYTES = 60 * 2**20
"""A started server's RSS before its first snapshot (59 MiB measured: the sidecar manifest's
comment)."""
PEAK_RSS_PER_SNAPSHOT_BYTE = 1.5
"""The peak over idle per byte of the largest snapshot: 1.3 measured, 1.47 for the first snapshot
of a freshly started server (the operator guide's rules of thumb), rounded up."""
SHADOW_RSS_MEASURED = "bench/results/shadow-settled-hotpath.txt"
"""Where the shadow's memory was measured (``python -m bench.hotpath --shadow``, commit 7fef737):
the peak RSS growth of the server's processes summed over Volcano's shape of load, 75 MiB
snapshots, 92 MiB without a shadow and 315-381 MiB with one (tests/app/test_sizing.py holds the
estimate above it)."""


def memory_limit_bytes(max_snapshot_bytes: int, shadow_queued_bytes: int | None = None) -> int:
    """The container memory that holds the largest snapshot the configuration accepts, so a
    snapshot Caldera takes never gets it OOM-killed: idle plus 1.5 x ``maxSnapshotBytes``. With
    a shadow configuration (``shadow_queued_bytes``: its ``--shadow-max-queued-bytes``), as much
    again for the shadow's process, which decodes and builds every session the live one does,
    plus the bodies the live process holds until the shadow has taken them: a little over double.
    An estimate from the measured ratios, not a measurement of the sum at the limit."""
    one = IDLE_RSS_BYTES + PEAK_RSS_PER_SNAPSHOT_BYTE * max_snapshot_bytes
    if shadow_queued_bytes is None:
        return round(one)
    return round(2 * one + shadow_queued_bytes)


# --- what a session's first call waits for (its state), on top of its own answer ---

FIRST_DERIVATIONS = sorted({r.pods: r.first_session_seconds for r in measured.STORE_RUNS}.items())
"""``sessionState: cluster``: the first session after Caldera starts (and after a relist that
changed every pod) derives every task, node and job; later sessions rebuild only what changed
(bench/README.md, "The cluster-state store", ``bench/results/cluster-state.json``): (pods,
seconds) at each measured size, medians of wall time on 2 shared CPUs, so they err high."""


def first_derivation_seconds(pods: int) -> float:
    """The first session's derivation for ``pods``: linear between the measured sizes (and
    from none), the last segment's slope beyond the largest. It grows faster than the pods
    (a larger heap, more of the collector's passes, and the load the larger runs met)."""
    points = [(0, 0.0), *FIRST_DERIVATIONS]
    for (p0, s0), (p1, s1) in itertools.pairwise(points):
        if pods <= p1:
            return s0 + (s1 - s0) * (pods - p0) / (p1 - p0)
    (p0, s0), (p1, s1) = points[-2], points[-1]
    return s1 + (s1 - s0) * (pods - p1) / (p1 - p0)


SESSION_FIRST_CALL = "the session's first call"
"""How a warning names the call that waits for the session's state."""


@dataclass(frozen=True)
class Cluster:
    nodes: int
    pods: int
    pending_tasks: int = BENCH_PENDING_TASKS
    snapshot_bytes: int | None = None
    """The onSessionOpen body this cluster sends, as measured (``--snapshot-bytes``)."""
    bytes_per_pod: float | None = None
    """Its snapshot over its pods, nodes' share included (``--bytes-per-pod``)."""

    def snapshot_source(self) -> str:
        """Where the snapshot estimate comes from, for the output."""
        if self.snapshot_bytes is not None:
            return "--snapshot-bytes"
        if self.bytes_per_pod is not None:
            return f"--bytes-per-pod {self.bytes_per_pod:,.0f}"
        return (
            f"{SNAPSHOT_BYTES_PER_NODE:,} bytes per node and {SNAPSHOT_BYTES_PER_POD:,} per pod,"
            f" measured by python -m bench cluster: {MEASUREMENT}"
        )

    def extender_open_seconds(self) -> float:
        """Volcano's extender OnSessionOpen for this cluster's snapshot."""
        x = self.body_bytes(Verb.ON_SESSION_OPEN) / 2**20
        return OPEN_SECONDS_PER_MIB * x + OPEN_SECONDS_PER_MIB_SQUARED * x * x

    @property
    def pods_per_node(self) -> float:
        return self.pods / self.nodes if self.nodes else 0.0

    def node_info_bytes(self) -> int:
        return round(NODE_INFO_BASE_BYTES + NODE_INFO_BYTES_PER_POD * self.pods_per_node)

    def body_bytes(self, verb: str) -> int:
        """Estimated largest body of ``verb`` for this cluster."""
        if verb == Verb.ON_SESSION_OPEN:
            if self.snapshot_bytes is not None:
                return self.snapshot_bytes
            if self.bytes_per_pod is not None:
                return round(self.bytes_per_pod * self.pods)
            return SNAPSHOT_BYTES_PER_NODE * self.nodes + SNAPSHOT_BYTES_PER_POD * self.pods
        if verb == Verb.PREDICATE:
            return TASK_INFO_BYTES + self.node_info_bytes()
        if verb == Verb.PRIORITIZE:  # every node passed the predicates: the worst case
            return TASK_INFO_BYTES + self.nodes * self.node_info_bytes()
        if verb in (Verb.PREEMPTABLE, Verb.RECLAIMABLE):  # every pod of one node is a candidate
            evictees = self.pods_per_node + DAEMON_PODS_PER_NODE
            return round(TASK_INFO_BYTES * (1 + evictees))
        if verb in (Verb.JOB_ENQUEUEABLE, Verb.JOB_ENQUEUED, Verb.JOB_READY):
            return JOB_INFO_BYTES_PER_TASK * JOB_TASKS
        if verb in (Verb.ALLOCATE, Verb.DEALLOCATE):
            return TASK_INFO_BYTES
        return SMALL_BODY_BYTES

    def session_state_seconds(self, session_state: SessionStateMode) -> float:
        """What the session's first call waits for before Caldera answers it: the decode and
        build of the snapshot, done after onSessionOpen was answered (app/server/routes/verbs.py),
        at the p99 ingest rate (``snapshot`` and ``compare``, whose own derivation runs off the
        verbs' path); the first derivation from the watched objects (``cluster``)."""
        if session_state == SessionStateMode.CLUSTER:
            return first_derivation_seconds(self.pods)
        return self.body_bytes(Verb.ON_SESSION_OPEN) / INGEST_P99_BYTES_PER_SECOND

    def p99_seconds(self, verb: str) -> float:
        """Estimated p99 latency of one ``verb`` call, as Volcano's HTTP client waits for it."""
        one = FIXED_P99_SECONDS + self.body_bytes(verb) / INGEST_P99_BYTES_PER_SECOND
        return one * PREDICATE_IN_FLIGHT if verb == Verb.PREDICATE else one

    def cycle_bytes(self, verbs: set[str]) -> int:
        """Bytes Volcano sends Caldera in one cycle: the snapshot, and for each pending task a
        predicate per node and one prioritize over all nodes (an upper bound: Volcano can stop
        predicates early, --percentage-nodes-to-find)."""
        total = self.body_bytes(Verb.ON_SESSION_OPEN) if Verb.ON_SESSION_OPEN in verbs else 0
        if Verb.PREDICATE in verbs:
            total += self.pending_tasks * self.nodes * self.body_bytes(Verb.PREDICATE)
        if Verb.PRIORITIZE in verbs:
            total += self.pending_tasks * self.body_bytes(Verb.PRIORITIZE)
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
    session_state: SessionStateMode = SessionStateMode.SNAPSHOT,
) -> list[str]:
    """What hurts for this cluster: each message states the estimate behind it."""
    found: list[str] = []
    if not verbs:
        return found
    timeout = _timeout_warning(cluster, verbs, http_timeout_seconds, session_state)
    if timeout is not None:
        found.append(timeout)
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
    if Verb.ON_SESSION_OPEN in verbs:
        snapshot = cluster.body_bytes(Verb.ON_SESSION_OPEN)
        session = cluster.extender_open_seconds()
        # A cycle that asks Caldera anything waits for the session's build too (its first call).
        build = cluster.session_state_seconds(session_state) if _callers(verbs) else 0.0
        if session + build > PERIOD_SHARE * schedule_period_seconds:
            found.append(
                f"Volcano's extender OnSessionOpen (marshal the session snapshot of about"
                f" {mib(snapshot)} at {cluster.nodes} nodes / {cluster.pods} pods, send it)"
                f" takes about {session:.2f}s"
                + (
                    f", and a cycle that asks Caldera anything waits {build:.2f}s more for"
                    " Caldera's build of the session"
                    if build
                    else ""
                )
                + f": more than {PERIOD_SHARE:.0%} of the {schedule_period_seconds:g}s"
                " scheduling period, so those cycles run late (in-tree plugins pay neither)."
                " Lengthen --schedule-period, or keep these plugins in-tree at this size."
            )
    per_cycle = {Verb.PREDICATE, Verb.PRIORITIZE} & set(verbs)
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


def _timeout_warning(
    cluster: Cluster, verbs: list[str], http_timeout_seconds: float, session_state: SessionStateMode
) -> str | None:
    """``extender.httpTimeout`` against the slowest call: the heaviest verb's own p99, or the
    session's first call, which also waits for the session's state
    (:meth:`Cluster.session_state_seconds`). Any verb but onSessionOpen and onSessionClose can
    be that call: an idle cycle's first call is whichever Volcano makes first."""
    size = f"at {cluster.nodes} nodes / {cluster.pods} pods"
    heaviest = max(verbs, key=cluster.p99_seconds)
    p99 = cluster.p99_seconds(heaviest)
    what = f"{heaviest} ({p99:.3f}s for a {mib(cluster.body_bytes(heaviest))} body {size})"
    callers = _callers(verbs)
    if callers:
        first = max(callers, key=cluster.p99_seconds)
        state = cluster.session_state_seconds(session_state)
        if cluster.p99_seconds(first) + state > p99:
            p99 = cluster.p99_seconds(first) + state
            waits_for = (
                "the first derivation of the session's state from the watched objects"
                if session_state == SessionStateMode.CLUSTER
                else f"Caldera's build of the {mib(cluster.body_bytes('onSessionOpen'))}"
                " snapshot, done after onSessionOpen is answered"
            )
            what = (
                f"{SESSION_FIRST_CALL}, {first} ({p99:.3f}s {size}, {state:.3f}s of it waiting"
                f" for {waits_for})"
            )
    if http_timeout_seconds >= p99:
        return None
    return (
        f"extender.httpTimeout {http_timeout_seconds:g}s is below the estimated p99 of {what}:"
        " Volcano would time out and treat the call as failed. Use --http-timeout"
        f" {max(1, round(p99 * 2 + 0.5))}s."
    )


def _callers(verbs: list[str]) -> list[str]:
    """The verbs that can be a session's first call: all but onSessionOpen and onSessionClose."""
    return [verb for verb in verbs if BY_VERB[verb].rule not in (Rule.OPEN, Rule.CLOSE)]
