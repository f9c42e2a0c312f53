"""``python -m bench run``: generate the workloads, drive Caldera and the Go extender with the
load generator, measure the in-process floor, and write bench/results/latest.{json,md} and
latency.png (a full run; --quick writes quick.*, --smoke smoke.*)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import traceback
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import configs, gobuild, servers, workloads
from bench.machine import machine_info

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
TMP = RESULTS / "tmp"
MiB = 1024 * 1024


@dataclass
class Check:
    """One call whose answer must show plugin work (configs.neutral_failure)."""

    name: str
    verb: str
    body: str  # file
    expect: configs.Expect


@dataclass
class Load:
    name: str
    verb: str
    body: str  # file
    concurrency: int
    requests: int
    max_seconds: float
    warmup: int
    desc: str
    body_bytes: int = 0
    config: str = ""  # configs.CONFIGS key Caldera runs this load with
    setup: str | None = None  # onSessionOpen body posted before the load (the session it needs)
    checks: list[Check] = field(default_factory=list)


@dataclass
class Cycle:
    name: str
    desc: str
    steps: list[dict[str, Any]]
    repeat: int
    warmup: int
    max_seconds: float
    period_seconds: float = 1.0
    config: str = ""


@dataclass
class Suite:
    mode: str
    loads: list[Load] = field(default_factory=list)
    cycle: Cycle | None = None
    metrics_time: str = ""  # when the nodes' ResourceUsage was sampled (see retime)
    timed_files: list[str] = field(default_factory=list)  # files carrying that sample
    files: dict[str, str] = field(default_factory=dict)  # data files plugins read (pdb)

    def config_order(self) -> list[str]:
        """The configurations Caldera runs, in the order their loads first appear."""
        names = [ld.config for ld in self.loads]
        if self.cycle is not None:
            names.append(self.cycle.config)
        return list(dict.fromkeys(names))


def retime(suite: Suite, now: datetime | None = None) -> str:
    """Move every node's metrics sample to 30 s before ``now`` in the suite's files, so usage's
    5-minute freshness rule holds for the turn that follows. Returns the new sample time."""
    now = now or datetime.now(UTC)
    new = workloads.go_time(now - workloads.METRICS_AGE)
    if suite.metrics_time and new != suite.metrics_time:
        for f in suite.timed_files:
            p = Path(f)
            p.write_bytes(workloads.retime_metrics(p.read_bytes(), suite.metrics_time, new))
    suite.metrics_time = new
    return new


# ----------------------------------------------------------------------------------- sizing

SIZES = {
    # name: (predicate pods on node, prioritize nodes, preempt evictees, opens, cycle (nodes, pods, tasks))
    "full": dict(
        pred_pods=30,
        prio_cluster=(100, 2000),
        evictees=30,
        opens=[(10, 100), (100, 2000), (500, 10000)],
        cycle=(100, 2000, 50),
        scale=1.0,
    ),
    "quick": dict(
        pred_pods=30,
        prio_cluster=(100, 2000),
        evictees=30,
        opens=[(10, 100), (100, 2000)],
        cycle=(100, 2000, 50),
        scale=0.25,
    ),
    "smoke": dict(
        pred_pods=6, prio_cluster=(5, 40), evictees=8, opens=[(5, 40)], cycle=(5, 40, 2), scale=0.0
    ),
}


def _n(mode: str, full: int, quick: int, smoke: int) -> int:
    return {"full": full, "quick": quick, "smoke": smoke}[mode]


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.stat().st_size != len(data) or path.read_bytes() != data:
        path.write_bytes(data)
    return str(path)


def build_suite(mode: str, out: Path, now: datetime | None = None) -> Suite:
    """Generate every body into ``out`` (deterministic for one ``now``, the run's start: the
    times plugins compare with their clock are relative to it; files are rewritten only if
    changed)."""
    sz = SIZES[mode]
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    s = Suite(mode)
    s.metrics_time = workloads.go_time(now - workloads.METRICS_AGE)
    marker = workloads.metrics_marker(s.metrics_time)
    w = workloads
    m = mode
    cfg = configs.VERB_CONFIG

    def put(path: Path, data: bytes) -> str:
        f = _write(path, data)
        if marker in data and f not in s.timed_files:
            s.timed_files.append(f)
        return f

    # predicate: one node with N pods, one pending task its queue's node-group affinity allows
    pc = w.plugin_predicate_cluster(now, sz["pred_pods"])
    pnode = pc.node_names[0]
    _, _, task = w.node_task(pc, pnode)
    node = pc.nodes[pnode]
    pred = put(out / f"predicate-{sz['pred_pods']}pods.json", w.predicate_body(task, node))
    pred_open = put(out / f"predicate-{sz['pred_pods']}pods-session.json", w.session_open_body(pc))
    pred_checks = [Check("every node plugin passes the load's node", "predicate", pred,
                         configs.Expect("pass"))]  # fmt: skip
    for k, (reason, body) in enumerate(w.predicate_probes(task, node).items()):
        probe = put(out / f"predicate-probe-{k}.json", body)
        pred_checks.append(Check(f"rejects: {reason}", "predicate", probe,
                                 configs.Expect("reject", reason)))  # fmt: skip
    desc = f"1 task + 1 node with {sz['pred_pods']} pods"
    for name, conc, reqs, warm in (
        ("predicate-c1", 1, _n(m, 3000, 1000, 10), _n(m, 100, 50, 2)),
        ("predicate-c16", 16, _n(m, 4000, 1500, 32), _n(m, 160, 64, 16)),
    ):
        s.loads.append(Load(name, "predicate", pred, conc, reqs, _n(m, 20, 8, 5), warm, desc,
                            config=cfg["predicate"], setup=pred_open,
                            checks=pred_checks if conc == 1 else []))  # fmt: skip

    # the cluster of prioritize, the eviction and enqueue verbs, allocate, jobReady
    big = w.plugin_cluster(*sz["prio_cluster"], now)
    big_open = put(
        out / f"onSessionOpen-{sz['prio_cluster'][0]}n-{sz['prio_cluster'][1]}p.json",
        w.session_open_body(big),
    )
    s.files["pdb"] = _write(out / "pdb.json", json.dumps(w.pdb_objects(big), indent=1).encode())

    # prioritize: the candidate nodes with their tasks
    nodes = [big.nodes[n] for n in big.node_names]
    _, _, ptask = w.node_task(big)
    prio = put(out / f"prioritize-{len(nodes)}nodes.json", w.prioritize_body(ptask, nodes))
    desc = f"1 task + {len(nodes)} nodes (~{sz['prio_cluster'][1] * 3 // 4 // len(nodes) + 10} pods each)"
    prio_checks = [Check("node scores differ", "prioritize", prio, configs.Expect("scores-differ"))]
    for name, conc, reqs, secs, warm in (
        ("prioritize-c1", 1, _n(m, 40, 12, 3), _n(m, 30, 10, 5), _n(m, 2, 1, 1)),
        ("prioritize-c16", 16, _n(m, 96, 32, 16), _n(m, 40, 15, 5), 16),
    ):
        s.loads.append(Load(name, "prioritize", prio, conc, reqs, secs, warm, desc,
                            config=cfg["prioritize"], setup=big_open,
                            checks=prio_checks if conc == 1 else []))  # fmt: skip

    # preemptable / reclaimable: running evictees, some of them protected by each plugin
    case = w.evict_case(big, sz["evictees"], now)
    pre = put(out / f"evict-{len(case.evictees)}.json", w.evict_body(case.evictor, case.evictees))
    for verb in ("preemptable", "reclaimable"):
        expect = configs.Expect("some-victims", evictees=len(case.evictees))
        s.loads.append(
            Load(f"{verb}-c1", verb, pre, 1, _n(m, 1000, 300, 10), _n(m, 15, 6, 5),
                 _n(m, 50, 20, 2), f"1 evictor + {len(case.evictees)} evictees",
                 config=cfg[verb], setup=big_open,
                 checks=[Check("some but not all evictees are victims", verb, pre, expect)])
        )  # fmt: skip

    # jobEnqueueable: a pending job, and the same job over its namespace's quota
    enq, over = w.enqueue_job(big)
    enq_path = put(out / "jobEnqueueable.json", enq)
    over_path = put(out / "jobEnqueueable-over-quota.json", over)
    s.loads.append(
        Load("jobEnqueueable-c1", "jobEnqueueable", enq_path, 1, _n(m, 1000, 300, 10),
             _n(m, 10, 5, 5), _n(m, 50, 20, 2), "1 pending job",
             config=cfg["jobEnqueueable"], setup=big_open,
             checks=[Check("a decision", "jobEnqueueable", enq_path, configs.Expect("decided")),
                     Check("over quota: Reject", "jobEnqueueable", over_path,
                           configs.Expect("enqueue-reject"))])
    )  # fmt: skip

    # allocate / jobReady bodies (used by the cycle; also measured on their own)
    alloc = put(out / "allocate.json", w.task_body(big.pending[0][3]))
    s.loads.append(Load("allocate-c1", "allocate", alloc, 1, _n(m, 2000, 500, 10),
                        _n(m, 10, 5, 5), _n(m, 100, 20, 2), "1 allocated task",
                        config=cfg["allocate"], setup=big_open))  # fmt: skip
    jname = f"{big.pending[0][0].namespace}/{big.pending[0][0].name}"
    jr = put(out / "jobReady.json", w.job_body(big.job_bytes[jname]))
    s.loads.append(Load("jobReady-c1", "jobReady", jr, 1, _n(m, 500, 150, 5), _n(m, 10, 5, 5),
                        _n(m, 20, 5, 1), f"1 job with {len(big.pending[0][0].pods)} tasks",
                        config=cfg["jobReady"], setup=big_open))  # fmt: skip

    # the fixed cost of one HTTP round trip through each server: onSessionClose, body "{}"
    close = put(out / "onSessionClose.json", b"{}")
    s.loads.append(Load("onSessionClose-c1", "onSessionClose", close, 1, _n(m, 2000, 500, 10),
                        _n(m, 10, 5, 5), _n(m, 100, 20, 2), "body {} (per-request fixed cost)",
                        config=cfg["onSessionClose"]))  # fmt: skip

    # onSessionOpen
    for nn, npods in sz["opens"]:
        if (nn, npods) == sz["prio_cluster"]:
            path = big_open
        else:
            c = w.plugin_cluster(nn, npods, now)
            path = put(out / f"onSessionOpen-{nn}n-{npods}p.json", w.session_open_body(c))
            del c
        reqs = {10: _n(m, 40, 15, 3), 100: _n(m, 10, 4, 3), 500: _n(m, 3, 2, 2)}.get(nn, 3)
        s.loads.append(Load(f"onSessionOpen-{nn}n", "onSessionOpen", path, 1, reqs,
                            _n(m, 90, 40, 10), 1 if nn <= 100 else 0, f"{nn} nodes, {npods} pods",
                            config=cfg["onSessionOpen"]))  # fmt: skip

    # the replayed cycle
    cn, cp, ntasks = sz["cycle"]
    c = big if (cn, cp) == sz["prio_cluster"] else w.plugin_cluster(cn, cp, now)
    cdir = out / f"cycle-{cn}n-{cp}p"
    open_path = put(cdir / "onSessionOpen.json", w.session_open_body(c))
    close_path = put(cdir / "onSessionClose.json", b"{}")
    node_files = [put(cdir / "nodes" / f"{n}.json", c.nodes[n]) for n in c.node_names]

    def step(verb: str, calls: list[dict[str, Any]], concurrency: int = 1) -> dict[str, Any]:
        return {"name": verb, "concurrency": concurrency, "calls": calls}

    steps = [step("onSessionOpen", [{"path": "/onSessionOpen", "body": open_path}])]
    placed = c.pending[:ntasks]
    for i, (job, _pod, pending_task, allocated_task) in enumerate(placed):
        tfile = put(cdir / "tasks" / f"{i:03d}.json", pending_task)
        afile = put(cdir / "allocated" / f"{i:03d}.json", w.task_body(allocated_task))
        jfile = put(
            cdir / "jobs" / f"{job.namespace}-{job.name}.json",
            w.job_body(c.job_bytes[f"{job.namespace}/{job.name}"]),
        )
        predicates = [
            {"path": "/predicate", "parts": ['={"task":', tfile, '=,"node":', nf, "=}"]}
            for nf in node_files
        ]
        parts = ['={"task":', tfile, '=,"nodes":[']
        for k, nf in enumerate(node_files):
            parts += ([] if k == 0 else ["=,"]) + [nf]
        parts.append("=]}")
        steps += [
            step("predicate", predicates, concurrency=16),
            step("prioritize", [{"path": "/prioritize", "parts": parts}]),
            step("allocate", [{"path": "/allocate", "body": afile}]),
            step("jobReady", [{"path": "/jobReady", "body": jfile}]),
        ]
    steps.append(step("onSessionClose", [{"path": "/onSessionClose", "body": close_path}]))
    s.cycle = Cycle(
        "cycle",
        f"onSessionOpen ({cn} nodes, {cp} pods), then for each of {len(placed)} tasks: predicate x{cn} "
        f"(16 in flight), prioritize ({cn} nodes), allocate, jobReady; then onSessionClose",
        steps,
        repeat=_n(m, 2, 1, 1),
        warmup=0,
        max_seconds=_n(m, 300, 120, 20),
        config=cfg["cycle"],
    )
    for ld in s.loads:
        ld.body_bytes = os.path.getsize(ld.body)
    return s


# ---------------------------------------------------------------------------------- running


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    ys = sorted(xs)
    k = min(len(ys) - 1, max(0, round(q / 100 * (len(ys) - 1))))
    return ys[k]


def summarize(lat_us: list[float], elapsed: float, body_bytes: int) -> dict[str, Any]:
    n = len(lat_us)
    p50 = pct(lat_us, 50)
    return {
        "requests": n,
        "throughput_rps": n / elapsed if elapsed > 0 else float("nan"),
        "p50_ms": p50 / 1e3,
        "p90_ms": pct(lat_us, 90) / 1e3,
        "p99_ms": pct(lat_us, 99) / 1e3,
        "max_ms": max(lat_us) / 1e3 if lat_us else float("nan"),
        "mean_ms": statistics.fmean(lat_us) / 1e3 if lat_us else float("nan"),
        "ingest_MBps": body_bytes / (p50 / 1e6) / 1e6 if p50 else float("nan"),
    }


def loadgen(binary: Path, plan: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [*servers.taskset(servers.LOADGEN_CPU), str(binary)]
    p = subprocess.run(
        cmd, input=json.dumps(plan).encode(), capture_output=True, timeout=timeout, cwd=servers.REPO
    )
    if p.returncode != 0:
        raise RuntimeError(
            f"loadgen failed ({p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}"
        )
    result: dict[str, Any] = json.loads(p.stdout)
    return result


def load_plan(base: str, ld: Load, **over: Any) -> dict[str, Any]:
    """The load generator's plan for ``ld`` against the server at ``base`` (``over``: the
    fields a caller sets otherwise, such as fewer requests)."""
    return {
        "base": base,
        "mode": "load",
        "path": "/" + ld.verb,
        "body": ld.body,
        "concurrency": ld.concurrency,
        "requests": ld.requests,
        "warmup": ld.warmup,
        "max_seconds": ld.max_seconds,
        "timeout_seconds": 120,
        **over,
    }


def post(base: str, verb: str, body_file: str, timeout: float = 120) -> Any:
    """POST a body file to a server under test (loopback) and return the decoded answer."""
    req = urllib.request.Request(
        base + "/" + verb,
        data=Path(body_file).read_bytes(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:  # loopback only
        return json.loads(r.read() or b"null")


def run_checks(srv: servers.Server, loads: list[Load], when: str, log: Any) -> list[str]:
    """Each load's checks, each after its session is opened: the answers must show plugin work."""
    problems: list[str] = []
    for ld in loads:
        for chk in ld.checks:
            try:
                if ld.setup:
                    post(srv.base, "onSessionOpen", ld.setup)
                why = configs.neutral_failure(chk.expect, post(srv.base, chk.verb, chk.body))
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
            if why is not None:
                problems.append(f"{srv.name} [{ld.config}] {ld.name} {when}: {chk.name}: {why}")
        if ld.checks:
            log(f"{srv.name} [{ld.config}] {ld.name}: {len(ld.checks)} plugin checks {when}")
    return problems


FIRST_SNAPSHOT_LOAD = "onSessionOpen-100n"


def first_snapshot_growth(srv: servers.Server, loads: list[Load], log: Any) -> dict[str, float]:
    """Peak RSS growth of the first snapshot a freshly started Caldera receives (the 100-node
    one, when this server runs it). The load itself is measured later, after this cluster's
    snapshot has been received before, as every cycle's is: its body then lands in the buffer
    the previous one left (app/server/buffers.py) and its snapshot in the memory of the one it
    replaces. Both figures are reported; this one is the worst case."""
    load = next((ld for ld in loads if ld.name == FIRST_SNAPSHOT_LOAD), None)
    if load is None:
        return {}
    before = srv.rss()
    if not srv.reset_peak():
        return {}
    post(srv.base, "onSessionOpen", load.body)
    growth = (srv.peak_rss() - before) / MiB
    log(f"{srv.name} {load.name}: first snapshot of a fresh server, peak RSS +{growth:.0f} MiB")
    return {load.name: growth}


def run_server(
    srv: servers.Server,
    loads: list[Load],
    cycle: Cycle | None,
    lg: Path,
    failures: list[str],
    raw: dict[str, Any],
    log: Any,
    sessions: bool = False,
) -> dict[str, Any]:
    """Drive ``loads`` (and ``cycle``) through ``srv``. With ``sessions`` (Caldera), each load
    that needs a session gets its onSessionOpen first, and the loads' plugin checks run before
    and after: a configuration that answers only neutrally is a failure."""
    rows: dict[str, Any] = {}
    try:
        srv.start()
        if sessions:
            srv.wait_ready()
    except Exception as exc:
        failures.append(f"{srv.name}: start failed: {exc}")
        srv.stop()
        return rows
    try:
        log(
            f"{srv.name}: up at {srv.base} (pids {srv.server_pids()}), idle RSS {srv.rss() / MiB:.0f} MiB"
        )
        first_growth: dict[str, float] = {}
        if sessions:
            first_growth = first_snapshot_growth(srv, loads, log)
            failures += run_checks(srv, loads, "before", log)
        for ld in loads:
            if sessions and ld.setup:
                try:
                    post(srv.base, "onSessionOpen", ld.setup)
                except Exception as exc:
                    failures.append(f"{srv.name} {ld.name}: session open failed: {exc}")
                    continue
            base_rss = srv.rss()
            reset = srv.reset_peak()
            plan = load_plan(srv.base, ld)
            t0 = time.monotonic()
            try:
                res = loadgen(lg, plan, timeout=ld.max_seconds * 4 + 600)
            except Exception as exc:
                failures.append(f"{srv.name} {ld.name}: {exc}")
                log(f"{srv.name} {ld.name}: FAILED {exc}")
                if srv.proc is not None and srv.proc.poll() is not None:
                    failures.append(f"{srv.name} exited ({srv.proc.returncode}) during {ld.name}")
                    break
                continue
            row = summarize(res["latencies_us"], res["elapsed_seconds"], ld.body_bytes)
            row.update(
                errors=res["errors"],
                first_error=res.get("first_error", ""),
                stopped_by_time=res.get("stopped_by_time", False),
                rss_before_MiB=base_rss / MiB,
                peak_rss_MiB=srv.peak_rss() / MiB if reset else None,
                rss_after_MiB=srv.rss() / MiB,
                config=srv.config,
                sample_response=res.get("last_response", "")[:200],
            )
            row["peak_rss_growth_MiB"] = (
                (row["peak_rss_MiB"] - row["rss_before_MiB"]) if reset else None
            )
            if ld.name in first_growth:
                row["first_snapshot_growth_MiB"] = first_growth[ld.name]
            if res["errors"]:
                failures.append(
                    f"{srv.name} {ld.name}: {res['errors']} errors, first: {res.get('first_error')}"
                )
            rows[ld.name] = row
            raw[f"{srv.name}/{ld.name}"] = res["latencies_us"]
            log(
                f"{srv.name} {ld.name}: {row['requests']} req in {time.monotonic() - t0:.1f}s, "
                f"{row['throughput_rps']:.1f}/s p50 {row['p50_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms"
                f" peak RSS {row['peak_rss_MiB'] or 0:.0f} MiB"
                + (f" ERRORS {res['errors']}" if res["errors"] else "")
            )
        if cycle is not None and (srv.proc is None or srv.proc.poll() is None):
            cy = cycle
            base_rss = srv.rss()
            reset = srv.reset_peak()
            plan = {
                "base": srv.base,
                "mode": "cycle",
                "steps": cy.steps,
                "repeat": cy.repeat,
                "warmup": cy.warmup,
                "max_seconds": cy.max_seconds,
                "timeout_seconds": 120,
            }
            try:
                res = loadgen(lg, plan, timeout=cy.max_seconds * 4 + 600)
                steps = {}
                for st in res["steps"]:
                    agg = steps.setdefault(
                        st["name"],
                        {"calls": 0, "body_bytes": 0, "elapsed_us": [], "latencies_us": []},
                    )
                    agg["calls"] += st["calls"]
                    agg["body_bytes"] += st["body_bytes"]
                    agg["elapsed_us"].append(sum(st["elapsed_us"]) / max(1, len(st["elapsed_us"])))
                    agg["latencies_us"] += st["latencies_us"]
                row = {
                    "cycles": res["cycles"],
                    "errors": res["errors"],
                    "first_error": res.get("first_error", ""),
                    "total_ms": [t / 1e3 for t in res["total_us"]],
                    "total_ms_median": statistics.median(res["total_us"]) / 1e3
                    if res["total_us"]
                    else None,
                    "steps": {
                        k: {
                            "calls_per_cycle": v["calls"],
                            "MiB_per_cycle": v["body_bytes"] / MiB,
                            "ms_per_cycle": sum(v["elapsed_us"]) / 1e3,
                            "call_p50_ms": pct(v["latencies_us"], 50) / 1e3,
                            "call_p99_ms": pct(v["latencies_us"], 99) / 1e3,
                        }
                        for k, v in steps.items()
                    },
                    "rss_before_MiB": base_rss / MiB,
                    "peak_rss_MiB": srv.peak_rss() / MiB if reset else None,
                    "config": srv.config,
                }
                if res["errors"]:
                    failures.append(
                        f"{srv.name} cycle: {res['errors']} errors, first: {res.get('first_error')}"
                    )
                rows["cycle"] = row
                log(
                    f"{srv.name} cycle: {row['cycles']} cycles, median {row['total_ms_median']:.0f} ms per cycle"
                )
            except Exception as exc:
                failures.append(f"{srv.name} cycle: {exc}")
        if sessions and (srv.proc is None or srv.proc.poll() is None):
            failures += run_checks(srv, loads, "after", log)
        if srv.proc is not None and srv.proc.poll() is not None:
            failures.append(f"{srv.name} died (exit {srv.proc.returncode}); log {srv.log}")
    finally:
        srv.stop()
    return rows


def pinned_child(
    command: str,
    plan: list[dict[str, Any]],
    tag: str,
    repo: Path = servers.REPO,
    env: dict[str, str] | None = None,
) -> tuple[Any, str | None]:
    """``python -m bench COMMAND PLAN OUT`` (floor or asgi) of the checkout ``repo`` in a fresh
    process pinned to the server core; its output, or else what failed."""
    plan_path, out_path = TMP / f"{command}-plan-{tag}.json", TMP / f"{command}-out-{tag}.json"
    plan_path.write_text(json.dumps(plan))
    python = sys.executable if repo == servers.REPO else str(repo / ".venv" / "bin" / "python")
    cmd = [*servers.taskset(servers.SERVER_CPU), python, "-m", "bench", command]
    p = subprocess.run(
        [*cmd, str(plan_path), str(out_path)],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {p.stderr[-2000:]}"
    return json.loads(out_path.read_text()), None


def asgi_plan(loads: list[Load], cfg: Path, requests: Any = None) -> list[dict[str, Any]]:
    """``bench asgi``'s plan: each one-in-flight load after its session's onSessionOpen, under
    the configuration file ``cfg`` (``requests``: the calls of a load, else its own count)."""
    return [
        {
            "name": ld.name,
            "verb": ld.verb,
            "body": ld.body,
            "requests": requests(ld) if requests else ld.requests,
            "max_seconds": min(ld.max_seconds, 20),
            "config": str(cfg),
            "setup": ld.setup,
        }
        for ld in loads
        if ld.concurrency == 1
    ]


def run_floor(suite: Suite, failures: list[str], raw: dict[str, Any], log: Any) -> dict[str, Any]:
    """In a subprocess pinned to the server core: decode each distinct body with each library."""
    seen: dict[str, Load] = {}
    for ld in suite.loads:
        if ld.concurrency == 1:
            seen.setdefault(ld.body, ld)
    plan = [
        {
            "name": ld.name,
            "verb": ld.verb,
            "body": ld.body,
            "requests": ld.requests,
            "max_seconds": min(ld.max_seconds, 20),
        }
        for ld in seen.values()
    ]
    # One fresh process per body (and per library for bodies over 1 MiB), so that each peak
    # RSS growth starts from a clean heap rather than from what the previous body left.
    from bench import floor as floor_mod

    groups: list[list[dict[str, Any]]] = []
    for item in plan:
        if os.path.getsize(item["body"]) > MiB:
            groups += [[{**item, "libs": [lib]}] for lib in floor_mod.LIBS]
        else:
            groups.append([{**item, "libs": list(floor_mod.LIBS)}])
    data: dict[str, Any] = {}
    for k, group in enumerate(groups):
        out, error = pinned_child("floor", group, f"{suite.mode}-{k}")
        if error:
            failures.append(f"floor ({group[0]['name']}): {error}")
            continue
        for body, per in out.items():
            data.setdefault(body, {}).update(per)
    rows: dict[str, Any] = {}
    for body, ld in seen.items():
        per = data.get(body, {})
        libs = {}
        for lib, r in per.items():
            if "error" in r:
                failures.append(f"floor {lib} {ld.name}: {r['error']}")
                continue
            libs[lib] = summarize(r["latencies_us"], r["elapsed_seconds"], ld.body_bytes)
            libs[lib]["peak_rss_growth_MiB"] = r.get("rss_growth_MiB")
            raw[f"floor-{lib}/{ld.verb}:{Path(body).name}"] = r["latencies_us"]
        best = min(libs, key=lambda k: libs[k]["p50_ms"]) if libs else None
        rows[body] = {"libs": libs, "best": best}
        if best:
            log(
                f"floor {ld.verb} ({Path(body).name}): "
                + ", ".join(f"{k} {v['p50_ms']:.3f} ms" for k, v in libs.items())
                + f" -> {best}"
            )
    return rows


def run_asgi(
    loads: list[Load],
    cfg: Path,
    mode: str,
    config_name: str,
    failures: list[str],
    raw: dict[str, Any],
    log: Any,
) -> dict[str, Any]:
    """Caldera's app without sockets: the ASGI app from create_app driven in-process (one body
    per call), pinned to the server core, each load after its session is opened. Over-HTTP
    minus this is what uvicorn, the socket and the client cost."""
    plan = asgi_plan(loads, cfg)
    if not plan:
        return {}
    out, error = pinned_child("asgi", plan, f"{mode}-{config_name}")
    if error:
        failures.append(f"caldera in-process ASGI: {error}")
        return {}
    rows: dict[str, Any] = {}
    for name, r in out.items():
        ld = next(x for x in loads if x.name == name)
        if "error" in r:
            failures.append(f"caldera in-process ASGI {name}: {r['error']}")
            continue
        rows[name] = summarize(r["latencies_us"], r["elapsed_seconds"], ld.body_bytes)
        raw[f"asgi/{name}"] = r["latencies_us"]
        log(f"caldera in-process ASGI {name}: p50 {rows[name]['p50_ms']:.3f} ms")
    return rows


def run_marshal(
    suite: Suite, binary: Path, failures: list[str], raw: dict[str, Any], log: Any
) -> dict[str, Any]:
    """Volcano's own cost per call (bench/go-marshal): each distinct body of a one-in-flight
    load decoded into Volcano v1.14.1's request type for its verb, then ``json.Marshal`` timed,
    GOMAXPROCS=1 on the server core. Keyed by body file."""
    seen: dict[str, Load] = {}
    for ld in suite.loads:
        if ld.concurrency == 1:
            seen.setdefault(ld.body, ld)
    plan = [
        {
            "name": body,
            "verb": ld.verb,
            "body": body,
            "requests": max(3, ld.requests // 2),
            "max_seconds": min(ld.max_seconds, 10),
        }
        for body, ld in seen.items()
    ]
    p = subprocess.run(
        [*servers.taskset(servers.SERVER_CPU), str(binary)],
        input=json.dumps(plan).encode(),
        capture_output=True,
        env={**os.environ, "GOMAXPROCS": "1"},
        timeout=1800,
    )
    if p.returncode != 0:
        failures.append(
            f"go-marshal: exit {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}"
        )
        return {}
    rows: dict[str, Any] = {}
    for body, r in json.loads(p.stdout).items():
        ld = seen[body]
        lat = r["latencies_us"]
        row = summarize(lat, sum(lat) / 1e6, ld.body_bytes)
        row.update(min_ms=min(lat) / 1e3, out_bytes=r["out_bytes"], in_bytes=r["in_bytes"])
        rows[body] = row
        raw[f"marshal/{ld.verb}:{Path(body).name}"] = lat
        log(
            f"volcano marshal {ld.verb} ({Path(body).name}, {r['out_bytes'] / 1024:.0f} KiB out): "
            f"p50 {row['p50_ms']:.3f} ms, min {row['min_ms']:.3f} ms"
        )
    return rows


def asgi_main(plan_path: str, out_path: str) -> int:
    import asyncio

    from app.config import load_config
    from app.server.main import create_app
    from app.server.options import ServeOptions
    from bench.asgi import drive

    plan = json.loads(Path(plan_path).read_text())
    out: dict[str, Any] = {}
    shadow = os.environ.get("CALDERA_SHADOW")  # bench.hotpath --shadow
    app = None
    if plan:
        app = create_app(ServeOptions.of(load_config(plan[0]["config"])).replace(shadow=shadow))

    async def go() -> None:
        assert app is not None
        async with app.router.lifespan_context(app):
            await until_ready(app)
            for item in plan:
                body = Path(item["body"]).read_bytes()
                try:
                    if item.get("setup"):
                        await drive(app, "/onSessionOpen", Path(item["setup"]).read_bytes(), 1)
                    await drive(app, "/" + item["verb"], body, 1 if len(body) > 50 * MiB else 2)
                    lat: list[float] = []
                    deadline = time.monotonic() + item["max_seconds"]
                    t0 = time.perf_counter()
                    while len(lat) < item["requests"] and time.monotonic() < deadline:
                        lat += [t * 1e6 for t in await drive(app, "/" + item["verb"], body, 1)]
                    out[item["name"]] = {
                        "latencies_us": lat,
                        "elapsed_seconds": time.perf_counter() - t0,
                    }
                except Exception as exc:
                    out[item["name"]] = {"error": f"{type(exc).__name__}: {exc}"}

    if app is not None:
        asyncio.run(go())
    Path(out_path).write_text(json.dumps(out))
    return 0


async def until_ready(app: Any, timeout: float = 30.0) -> None:
    """Until every plugin's background data is loaded (pdb reads its file after start)."""
    import asyncio

    runtime = app.runtime
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(b.ready() for b in runtime.backgrounds.values()):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("plugin background data not ready")


def floor_main(plan_path: str, out_path: str) -> int:
    from bench import floor

    plan = json.loads(Path(plan_path).read_text())
    out: dict[str, Any] = {}
    for item in plan:
        body = Path(item["body"]).read_bytes()
        per = out.setdefault(item["body"], {})
        for lib in item.get("libs", floor.LIBS):
            try:
                rss0 = servers._status(os.getpid()).get("VmRSS", 0)
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
                r = floor.measure(
                    lib,
                    item["verb"],
                    body,
                    requests=item["requests"],
                    max_seconds=item["max_seconds"],
                    warmup=1 if len(body) > 50 * MiB else 2,
                )
                hwm = servers._status(os.getpid()).get("VmHWM", 0)
                r["rss_growth_MiB"] = (hwm - rss0) / MiB
                per[lib] = r
            except Exception as exc:  # recorded, reported as a failure by the parent
                per[lib] = {"error": f"{type(exc).__name__}: {exc}"}
        del body
    Path(out_path).write_text(json.dumps(out))
    return 0


# ------------------------------------------------------------------------------------- main


def main(mode: str, targets: set[str], out_dir: Path, caldera_cmd: list[str] | None) -> int:
    t_start = time.monotonic()
    failures: list[str] = []
    raw: dict[str, Any] = {}

    def log(msg: str) -> None:
        print(f"[{time.monotonic() - t_start:6.1f}s] {msg}", flush=True)

    load_start = os.getloadavg()
    data_dir = TMP / mode
    log(f"generating {mode} workloads into {data_dir}")
    suite = build_suite(mode, data_dir)
    for ld in suite.loads:
        log(f"  {ld.name}: {ld.body_bytes / 1024:.0f} KiB ({ld.desc})")

    bins: dict[str, Path] = {}
    lg: Path | None = None
    if not gobuild.have_go():
        failures.append(
            "build: the go toolchain is not on PATH (needed for bench/loadgen and bench/go-extender)"
        )
    else:
        try:
            bins = gobuild.build(go_extender=False)
            lg = bins["loadgen"]
        except gobuild.BuildError as exc:
            failures.append(f"build loadgen: {exc}")
        if "go" in targets:
            try:
                bins.update(gobuild.build(go_extender=True))
            except gobuild.BuildError as exc:
                failures.append(f"build go-extender: {exc}")
                targets = targets - {"go"}

    if "marshal" in targets and gobuild.have_go():
        try:
            bins.update(gobuild.build(go_extender=False, go_marshal=True))
        except gobuild.BuildError as exc:
            failures.append(f"build go-marshal: {exc}")
            targets = targets - {"marshal"}

    results: dict[str, Any] = {"caldera": {}, "go": {}, "floor": {}, "asgi": {}, "marshal": {}}
    caldera_cfg: dict[str, Any] | None = None
    if lg is not None and "caldera" in targets:
        # One Caldera per configuration, each turn right after re-timing the nodes' metrics
        # samples (usage's 5-minute rule); then the same loads through the ASGI app in-process.
        caldera_cfg = {}
        for name in suite.config_order():
            cfg_obj = configs.CONFIGS[name]
            loads = [ld for ld in suite.loads if ld.config == name]
            cycle = suite.cycle if suite.cycle is not None and suite.cycle.config == name else None
            try:
                retime(suite)
                cfg = configs.write(cfg_obj, TMP, suite.files)
                caldera_cfg[name] = {"plugins": configs.describe(cfg_obj), "why": cfg_obj.why,
                                     "file": cfg.read_text()}  # fmt: skip
                log(f"caldera config {configs.describe(cfg_obj)}")
                srv = servers.caldera_server(
                    cfg, TMP / "logs" / f"caldera-{mode}-{name}.log", caldera_cmd
                )
                srv.config = configs.describe(cfg_obj)
                results["caldera"].update(
                    run_server(srv, loads, cycle, lg, failures, raw, log, sessions=True)
                )
                results["asgi"].update(run_asgi(loads, cfg, mode, name, failures, raw, log))
            except Exception as exc:
                failures.append(f"caldera [{name}]: {exc}")
                log(f"caldera [{name}]: FAILED {exc}")
    if lg is not None and "go" in targets and "go-extender" in bins:
        srv = servers.go_server(bins["go-extender"], TMP / "logs" / f"go-{mode}.log")
        srv.config = "go-extender (GOMAXPROCS=1, encoding/json into volcano v1.14.1 types)"
        results["go"] = run_server(srv, suite.loads, suite.cycle, lg, failures, raw, log)
    if "marshal" in targets and "go-marshal" in bins:
        log("volcano's marshal cost: encoding/json.Marshal of Volcano's request types")
        results["marshal"] = run_marshal(suite, bins["go-marshal"], failures, raw, log)
    if "floor" in targets:
        log("floor: msgspec / pydantic / orjson in-process")
        results["floor"] = run_floor(suite, failures, raw, log)

    from bench import report

    machine = machine_info()
    machine["loadavg_at_start"] = load_start
    doc = report.assemble(
        suite, results, machine, caldera_cfg, failures, time.monotonic() - t_start
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = result_stem(mode)
    (out_dir / f"{stem}.json").write_text(json.dumps(doc, indent=1, default=_jsonable) + "\n")
    (out_dir / f"{stem}.md").write_text(report.markdown(doc))
    try:
        report.plot(
            doc, raw, out_dir / ("latency.png" if mode == "full" else f"{stem}-latency.png")
        )
    except Exception as exc:  # matplotlib missing in a bare env: not a benchmark failure
        log(f"plot skipped: {type(exc).__name__}: {exc}")
        if mode != "smoke":
            traceback.print_exc()
    if mode == "full" and out_dir.resolve() == RESULTS.resolve():
        # Every generated section of bench/README from the files just written (bench/readme.py).
        from bench import readme

        readme.write()
    log(f"wrote {out_dir}/{stem}.json, {stem}.md")
    if failures:
        print("\nFAILURES:", file=sys.stderr)
        for f in failures:
            print("  - " + f, file=sys.stderr)
        return 1
    return 0


def result_stem(mode: str) -> str:
    """The results' file stem: only a full run writes latest.{json,md} (the published numbers,
    which app/commands/sizing.py's test and the README's generated section read); --quick writes
    quick.*, --smoke smoke.*."""
    return {"full": "latest", "quick": "quick", "smoke": "smoke"}[mode]


def _jsonable(o: Any) -> Any:
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o))
