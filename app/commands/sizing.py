"""How big Volcano's bodies get and how long Volcano and Caldera take with them, for a cluster of a
given size: the estimates behind ``caldera volcano-config --nodes N --pods P`` warnings, and the
``sessionState`` it recommends with the sidecar's memory for it (issue 50 item 5).

Every measured figure comes from :mod:`app.commands.measured`, generated from bench/results by
``python -m bench.measured`` (the wheel ships no bench/results); the operator guide's memory
table, the sidecar's comments and the README are checked against this model by
``tests/app/commands/test_sizing_docs.py``.

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


_LARGEST, _SMALLEST = measured.CLUSTER_RUNS[-1], measured.CLUSTER_RUNS[0]
MEASUREMENT = Measurement(
    file="bench/results/cluster.json",
    date="2026-11-27",
    commit=measured.CLUSTER_RUN_COMMIT,
    release="vc-scheduler v1.14.1",
    nodes=_LARGEST.nodes,
    pods=_LARGEST.pods,
    snapshot_bytes=_LARGEST.snapshot_bytes,
    open_seconds=_LARGEST.extender_open_seconds,
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
SMALLEST_MEASURED = (_SMALLEST.snapshot_bytes, _SMALLEST.extender_open_seconds)
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
"""A started server's RSS before its first snapshot (59 MiB measured by the hot-path benchmark;
bench.cluster_state's fresh process with the server imported: ``measured.STORE_RUNS``)."""
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


# --- which sessionState, and the memory the sidecar needs in it ---

MiB = 2**20
SNAPSHOT_SHARE = 0.2
"""Snapshot mode is recommended while Volcano's extender OnSessionOpen (marshal the snapshot,
post it) takes at most this share of ``--schedule-period``: 200 ms of the default 1 s, which
the cluster run's 100 nodes / 1,000 pods stay under (its in-tree cycle took 20 ms, through
Caldera 149 ms). Beyond, the snapshot is most of what Volcano's cycle costs, and cluster mode
removes it (docs/operator-guide.md §9)."""
CLUSTER_LIMIT_FACTOR = 1.5
"""Cluster mode's memory limit over its estimated peak. The estimate is of the benchmark's
objects; the store keeps each object's JSON less managedFields, so pods with more annotations,
env or status keep more, and no setting bounds the watched objects as ``maxSnapshotBytes``
bounds a snapshot: a margin, not a measurement."""
QUANTUM = 16 * MiB
"""Requests and limits are printed rounded up to this (Mi quantities)."""


def _fit_cluster_peak() -> tuple[float, float, float]:
    """Cluster mode's peak RSS as idle + a x pods + b x nodes (bytes), from the process
    ``python -m bench.cluster_state`` measured at each size: idle is the fresh process's RSS
    with the server imported, a and b the least-squares fit of the rest over the sizes."""
    runs = measured.STORE_RUNS
    idle = sum(r.idle_rss_mib for r in runs) / len(runs) * MiB
    rest = [(r.pods, r.nodes, r.peak_rss_mib * MiB - idle) for r in runs]
    pp = sum(p * p for p, _, _ in rest)
    nn = sum(n * n for _, n, _ in rest)
    pn = sum(p * n for p, n, _ in rest)
    py = sum(p * y for p, _, y in rest)
    ny = sum(n * y for _, n, y in rest)
    determinant = pp * nn - pn * pn
    if abs(determinant) > 1e-9 * pp * nn:
        per_pod, per_node = (py * nn - ny * pn) / determinant, (ny * pp - py * pn) / determinant
        if per_pod >= 0 and per_node >= 0:
            return idle, per_pod, per_node
    # One shape of cluster, or a fit that makes nodes free: the pods carry it all.
    return idle, py / pp, 0.0


CLUSTER_IDLE_BYTES, CLUSTER_BYTES_PER_POD, CLUSTER_BYTES_PER_NODE = _fit_cluster_peak()
"""Cluster mode's peak RSS = idle + per pod x pods + per node x nodes: the store, the derived
session's state and the listed objects of a relist of every pod, which sit beside the store
until its replace (``bench/results/cluster-state.json``, through ``app/commands/measured.py``)."""


def mi(size: float) -> int:
    """``size`` in Mi, rounded up to :data:`QUANTUM`."""
    return -(-round(size) // QUANTUM) * (QUANTUM // MiB)


@dataclass(frozen=True)
class Memory:
    """The sidecar's memory in one ``sessionState`` for one cluster."""

    mode: SessionStateMode
    peak_bytes: float
    """The estimated peak RSS: the request."""
    limit_bytes: float
    how: str
    """What the estimate is made of, for the output."""

    @property
    def request_mi(self) -> int:
        return mi(self.peak_bytes)

    @property
    def limit_mi(self) -> int:
        return max(mi(self.limit_bytes), self.request_mi)

    def line(self, qualifier: str = "") -> str:
        return (
            f"memory ({self.mode}{qualifier}): request {self.request_mi}Mi, limit"
            f" {self.limit_mi}Mi; {self.how}"
        )


def snapshot_peak_bytes(cluster: Cluster) -> float:
    """Snapshot mode's peak RSS: idle plus 1.5 x the snapshot (the first snapshot of a fresh
    server measured 1.47 x; the cluster run's peaks are within a quarter of it:
    tests/app/commands/test_sizing.py)."""
    return IDLE_RSS_BYTES + PEAK_RSS_PER_SNAPSHOT_BYTE * cluster.body_bytes(Verb.ON_SESSION_OPEN)


def cluster_peak_bytes(cluster: Cluster) -> float:
    """Cluster mode's peak RSS (:data:`CLUSTER_IDLE_BYTES`)."""
    return (
        CLUSTER_IDLE_BYTES
        + CLUSTER_BYTES_PER_POD * cluster.pods
        + CLUSTER_BYTES_PER_NODE * cluster.nodes
    )


def memory(cluster: Cluster, mode: SessionStateMode, max_snapshot_bytes: int) -> Memory:
    """The request (the estimated peak) and the limit for ``mode``: a snapshot mode's limit
    holds the largest snapshot ``max_snapshot_bytes`` accepts; cluster mode's is
    :data:`CLUSTER_LIMIT_FACTOR` x its peak; compare mode runs both, so costs both."""
    size = f"at {cluster.nodes} nodes / {cluster.pods} pods"
    snapshot = cluster.body_bytes(Verb.ON_SESSION_OPEN)
    watched = cluster_peak_bytes(cluster) - CLUSTER_IDLE_BYTES
    snapshot_limit = memory_limit_bytes(max_snapshot_bytes)
    snapshot_how = (
        f"{IDLE_RSS_BYTES // MiB} MiB + {PEAK_RSS_PER_SNAPSHOT_BYTE:g} x the {mib(snapshot)}"
        " snapshot"
    )
    limit_how = (
        f"the limit holds the largest snapshot maxSnapshotBytes accepts"
        f" ({IDLE_RSS_BYTES // MiB} MiB + {PEAK_RSS_PER_SNAPSHOT_BYTE:g} x"
        f" {mib(max_snapshot_bytes)})"
    )
    watched_how = (
        f"{CLUSTER_BYTES_PER_POD * 1000 / MiB:.1f} MiB per 1,000 pods and"
        f" {CLUSTER_BYTES_PER_NODE * 1000 / MiB:.1f} MiB per 1,000 nodes for the watched"
        " objects, the derived state and a relist, measured by python -m bench.cluster_state"
    )
    if mode == SessionStateMode.SNAPSHOT:
        peak = snapshot_peak_bytes(cluster)
        how = f"peak RSS about {mib(peak)} {size} ({snapshot_how}); {limit_how}"
        return Memory(mode, peak, max(snapshot_limit, peak), how)
    if mode == SessionStateMode.CLUSTER:
        peak = cluster_peak_bytes(cluster)
        how = (
            f"peak RSS about {mib(peak)} {size} ({CLUSTER_IDLE_BYTES / MiB:.0f} MiB +"
            f" {watched_how}); the limit is {CLUSTER_LIMIT_FACTOR:g} x it, for objects larger"
            " than the benchmark's"
        )
        return Memory(mode, peak, CLUSTER_LIMIT_FACTOR * peak, how)
    peak = snapshot_peak_bytes(cluster) + watched
    how = (
        f"peak RSS about {mib(peak)} {size} ({snapshot_how} + {mib(watched)} for the"
        f" watch: {watched_how}); {limit_how}, plus {CLUSTER_LIMIT_FACTOR:g} x the watch's"
    )
    return Memory(
        mode,
        peak,
        max(snapshot_limit, snapshot_peak_bytes(cluster)) + CLUSTER_LIMIT_FACTOR * watched,
        how,
    )


@dataclass(frozen=True)
class Recommendation:
    mode: SessionStateMode
    reason: str


def recommend(
    cluster: Cluster, schedule_period_seconds: float, cluster_refusals: list[str]
) -> Recommendation:
    """Snapshot mode while Volcano's OnSessionOpen takes at most :data:`SNAPSHOT_SHARE` of the
    period; beyond, cluster mode, unless this configuration cannot run it
    (``cluster_refusals``: app/cluster_state/modes.py)."""
    seconds = cluster.extender_open_seconds()
    share = seconds / schedule_period_seconds if schedule_period_seconds else float("inf")
    cost = (
        f"Volcano's extender OnSessionOpen (marshal and post the {mib(cluster.body_bytes(Verb.ON_SESSION_OPEN))}"
        f" snapshot) takes about {seconds:.2f}s of each {schedule_period_seconds:g}s period at"
        f" {cluster.nodes} nodes / {cluster.pods} pods"
    )
    if share <= SNAPSHOT_SHARE:
        return Recommendation(
            SessionStateMode.SNAPSHOT,
            f"{cost}, within the {SNAPSHOT_SHARE:.0%} snapshot mode is kept for",
        )
    if cluster_refusals:
        return Recommendation(
            SessionStateMode.SNAPSHOT,
            f"{cost}, more than {SNAPSHOT_SHARE:.0%}, but this configuration cannot run"
            f" sessionState cluster: {'; '.join(cluster_refusals)}",
        )
    return Recommendation(
        SessionStateMode.CLUSTER,
        f"{cost}, more than {SNAPSHOT_SHARE:.0%}; Volcano then posts no snapshot. Run"
        " sessionState compare first, under your usual load, until"
        " caldera_session_state_differences_total rises only while pods bind and finish"
        " (docs/operator-guide.md §9)",
    )


def mode_lines(
    cluster: Cluster,
    schedule_period_seconds: float,
    configured: SessionStateMode,
    cluster_refusals: list[str],
    max_snapshot_bytes: int,
) -> list[str]:
    """``volcano-config``'s recommendation and memory for this cluster: the mode, its memory,
    and compare mode's too on the way to cluster mode."""
    chosen = recommend(cluster, schedule_period_seconds, cluster_refusals)
    lines = [f"mode: {chosen.mode}: {chosen.reason}."]
    lines.append(memory(cluster, chosen.mode, max_snapshot_bytes).line() + ".")
    if chosen.mode == SessionStateMode.CLUSTER and configured != SessionStateMode.CLUSTER:
        lines.append(
            memory(cluster, SessionStateMode.COMPARE, max_snapshot_bytes).line(", meanwhile") + "."
        )
    return lines


def snapshot_mode_up_to(pods_per_node: int = 10, schedule_period_seconds: float = 1.0) -> int:
    """The most nodes (a multiple of 10) at ``pods_per_node`` for which snapshot mode is
    recommended: the guide's §9 table says it."""
    nodes = 0
    while recommend(Cluster(nodes + 10, (nodes + 10) * pods_per_node), schedule_period_seconds,
                    []).mode == SessionStateMode.SNAPSHOT:  # fmt: skip
        nodes += 10
    return nodes


def memory_table(max_snapshot_bytes: int) -> str:
    """docs/operator-guide.md §2's memory table: at each size either benchmark measured, the
    mode ``volcano-config`` recommends and each mode's estimated peak beside the measured one
    (tests/app/commands/test_sizing_docs.py holds the guide's copy equal to this)."""
    snapshot_runs = {(r.nodes, r.pods): r for r in measured.CLUSTER_RUNS}
    store_runs = {(r.nodes, r.pods): r for r in measured.STORE_RUNS}
    lines = [
        "| nodes / pods | mode (1s period) | snapshot mode: peak RSS estimated (measured) |"
        " request / limit | cluster mode: peak RSS estimated (measured) | request / limit |",
        "|---|---|---|---|---|---|",
    ]
    for nodes, pods in sorted(snapshot_runs.keys() | store_runs.keys()):
        cluster = Cluster(nodes, pods)
        snapshot = memory(cluster, SessionStateMode.SNAPSHOT, max_snapshot_bytes)
        watched = memory(cluster, SessionStateMode.CLUSTER, max_snapshot_bytes)
        run, store = snapshot_runs.get((nodes, pods)), store_runs.get((nodes, pods))
        snapshot_measured = f" ({run.snapshot_peak_rss_mib:,.0f})" if run else ""
        if cluster.body_bytes(Verb.ON_SESSION_OPEN) > max_snapshot_bytes:
            snapshot_measured += f", a {mib(cluster.body_bytes(Verb.ON_SESSION_OPEN))} snapshot"
        cluster_measured = [
            *([f"{run.cluster_peak_rss_mib:,.0f} in the cluster run"] if run else []),
            *([f"{store.peak_rss_mib:,.0f} offline"] if store else []),
        ]
        lines.append(
            f"| {nodes:,} / {pods:,} | {recommend(cluster, 1.0, []).mode}"
            f" | {snapshot.peak_bytes / MiB:,.0f} MiB{snapshot_measured}"
            f" | {snapshot.request_mi}Mi / {snapshot.limit_mi}Mi"
            f" | {watched.peak_bytes / MiB:,.0f} MiB"
            + (f" ({', '.join(cluster_measured)})" if cluster_measured else "")
            + f" | {watched.request_mi}Mi / {watched.limit_mi}Mi |"
        )
    return "\n".join(lines)


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
                " Lengthen --schedule-period, keep these plugins in-tree at this size, or turn"
                " the snapshot off: sessionState cluster (the mode line below)."
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
