"""Assemble the results document, render it as Markdown, and plot latency distributions."""

from __future__ import annotations

import math
import textwrap
import time
from pathlib import Path
from typing import Any

MiB = 1024 * 1024


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def assemble(
    suite: Any,
    results: dict[str, Any],
    machine: dict[str, Any],
    caldera_cfg: dict[str, Any] | None,
    failures: list[str],
    seconds: float,
) -> dict[str, Any]:
    rows = []
    for ld in suite.loads:
        cal = results["caldera"].get(ld.name)
        go = results["go"].get(ld.name)
        fl = results["floor"].get(ld.body) or {}
        best = fl.get("best")
        flo = fl.get("libs", {}).get(best) if best else None
        row: dict[str, Any] = {
            "workload": ld.name,
            "verb": ld.verb,
            "concurrency": ld.concurrency,
            "description": ld.desc,
            "body_bytes": ld.body_bytes,
            "caldera": cal,
            "caldera_asgi": results.get("asgi", {}).get(ld.name),
            "go": go,
            "floor": {"best": best, **(flo or {})} if flo else None,
            "floor_libs": fl.get("libs"),
            "config": getattr(ld, "config", ""),
            "marshal": results.get("marshal", {}).get(ld.body) if ld.concurrency == 1 else None,
        }
        # Volcano's own json.Marshal of this call's request vs Caldera's whole answer over HTTP
        mar = row["marshal"]
        row["caldera_over_marshal"] = _ratio(cal and cal["p50_ms"], mar and mar["p50_ms"])
        # Caldera/Go: throughput ratio (>1: Caldera serves more requests per second)
        row["caldera_over_go_throughput"] = _ratio(
            cal and cal["throughput_rps"], go and go["throughput_rps"]
        )
        row["caldera_over_go_p50"] = _ratio(cal and cal["p50_ms"], go and go["p50_ms"])
        # Caldera/floor: time per request relative to the in-process floor (>1: slower than floor).
        # One in flight: p50 latency; more in flight: 1/throughput (one server core either way).
        if (
            cal and flo and ld.verb != "onSessionClose"
        ):  # "{}": nothing to decode, see the HTTP column
            if ld.concurrency == 1:
                row["caldera_over_floor"] = _ratio(cal["p50_ms"], flo["p50_ms"])
            else:
                row["caldera_over_floor"] = _ratio(1 / cal["throughput_rps"], flo["p50_ms"] / 1e3)
        else:
            row["caldera_over_floor"] = None
        rows.append(row)
    # The floor has no HTTP. The smallest round trip through a compiled server (Go, body "{}")
    # is the HTTP share any server pays; Caldera / (floor + that) separates HTTP from decoding.
    fixed = next(
        (r["go"]["p50_ms"] for r in rows if r["workload"] == "onSessionClose-c1" and r.get("go")),
        None,
    )
    for row in rows:
        cal, flo = row["caldera"], row["floor"]
        row["http_fixed_ms"] = fixed
        row["caldera_over_floor_plus_http"] = (
            _ratio(cal["p50_ms"], flo["p50_ms"] + fixed)
            if cal and flo and fixed and row["concurrency"] == 1
            else None
        )
    for row in rows:
        asg, cal, flo = row.get("caldera_asgi"), row["caldera"], row["floor"]
        row["caldera_asgi_over_floor"] = (
            _ratio(asg["p50_ms"], flo["p50_ms"])
            if asg and flo and row["verb"] != "onSessionClose"
            else None
        )
        row["http_share"] = (
            (1 - asg["p50_ms"] / cal["p50_ms"]) if asg and cal and cal["p50_ms"] else None
        )
    cycle = None
    if suite.cycle is not None:
        cycle = {
            "description": suite.cycle.desc,
            "caldera": results["caldera"].get("cycle"),
            "go": results["go"].get("cycle"),
            "period_seconds": suite.cycle.period_seconds,
        }
        # the floor's and Volcano's marshal per-call time summed over the cycle's calls
        floor_steps = _cycle_estimate(suite, rows, "floor")
        marshal_steps = _cycle_estimate(suite, rows, "marshal")
        cycle["floor_steps_ms"] = floor_steps
        cycle["marshal_steps_ms"] = marshal_steps
        cycle["floor_estimate_ms"] = sum(floor_steps.values()) if floor_steps else None
        cycle["marshal_estimate_ms"] = sum(marshal_steps.values()) if marshal_steps else None
        cycle["config"] = getattr(suite.cycle, "config", "")
    doc = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "mode": suite.mode,
        "seconds": round(seconds, 1),
        "machine": machine,
        "setup": {
            "server_cpu": "taskset -c 1 (one core; Go with GOMAXPROCS=1)",
            "loadgen_cpu": "taskset -c 0 (bench/loadgen, Go net/http keep-alive client)",
            "floor_cpu": "taskset -c 1, in-process, no HTTP",
            "caldera_config": caldera_cfg,
        },
        "workloads": rows,
        "cycle": cycle,
        "failures": failures,
    }
    doc["targets"] = targets(doc)
    return doc


def _cycle_estimate(suite: Any, rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """Per cycle step, the summed per-call time of ``key`` (``floor``: the in-process decode
    floor; ``marshal``: Volcano's json.Marshal of the request) over the step's calls: for each
    call, the p50 of the measured body of the same verb nearest in size, scaled by size (both
    are close to linear in bytes). Empty when a verb of the cycle has no such measurement."""
    import os

    by_verb: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["concurrency"] == 1 and r.get(key):
            by_verb.setdefault(r["verb"], []).append(r)
    sizes: dict[str, int] = {}

    def size(f: str) -> int:
        if f.startswith("="):
            return len(f) - 1
        if f not in sizes:
            sizes[f] = os.path.getsize(f)
        return sizes[f]

    out: dict[str, float] = {}
    for st in suite.cycle.steps:
        for call in st["calls"]:
            verb = call["path"].lstrip("/")
            if verb == "onSessionClose" and key == "floor":
                continue  # "{}": nothing to decode
            cands = by_verb.get(verb)
            if not cands:
                return {}
            n = sum(size(p) for p in call["parts"]) if "parts" in call else size(call["body"])
            ref = min(cands, key=lambda x: abs(x["body_bytes"] - n))
            scale = n / ref["body_bytes"] if ref["body_bytes"] else 1.0
            out[st["name"]] = out.get(st["name"], 0.0) + ref[key]["p50_ms"] * scale
    return out


def _per_body(row: dict[str, Any] | None, key: str, body_bytes: int) -> float | None:
    """``row[key]`` MiB as a multiple of the body's size; None when not measured."""
    value = row.get(key) if row else None
    return None if value is None else float(value) * MiB / body_bytes


def marshal_target_rows(
    rows: list[dict[str, Any]], min_bytes: int = 100 * 1024
) -> list[dict[str, Any]]:
    """The one-in-flight rows whose body is over ``min_bytes``, one per verb and body: the calls
    for which Caldera's p50 over HTTP must be below Volcano's own marshal time."""
    seen: set[tuple[str, int]] = set()
    out = []
    for r in rows:
        key = (r["verb"], r["body_bytes"])
        if r["concurrency"] != 1 or r["body_bytes"] <= min_bytes or key in seen:
            continue
        seen.add(key)
        out.append(r)
    return out


def _row(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((r for r in doc["workloads"] if r["workload"] == name), None)


CYCLE_FLOOR_GOAL = 1.2
"""The replayed cycle: Caldera's total over the floor sum must be below this."""


def is_met(value: float | None, goal: float, better: str) -> bool | None:
    """The one comparison of every target: at least the goal when higher is better, strictly
    below it when lower is better (the text says so: goal_text)."""
    if value is None:
        return None
    return value >= goal if better == "higher" else value < goal


def goal_text(better: str, goal: float, unit: str = "") -> str:
    return f"{'≥' if better == 'higher' else '<'} {goal:g}{unit}"


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, goal: float, better: str, unit: str = "") -> None:
        met = is_met(value, goal, better)
        dist = None if value is None else (value / goal)
        out.append(
            {
                "target": name,
                "value": value,
                "goal": goal,
                "better": better,
                "unit": unit,
                "met": met,
                "value_over_goal": dist,
            }
        )

    for w in ("predicate-c16", "prioritize-c16"):
        r = _row(doc, w)
        add(
            f"{w}: Caldera throughput / Go throughput",
            r and r["caldera_over_go_throughput"],
            2.0,
            "higher",
            "x",
        )
    r = _row(doc, "predicate-c1")
    add(
        f"predicate-c1 ({r['description'] if r else ''}): Caldera p99",
        r and r["caldera"] and r["caldera"]["p99_ms"],
        1.0,
        "lower",
        "ms",
    )
    r = _row(doc, "onSessionOpen-100n")
    if r:
        cal = r["caldera"]
        add(
            "onSessionOpen-100n (75 MiB): Caldera p50 ingest time",
            cal and cal["p50_ms"],
            150.0,
            "lower",
            "ms",
        )
        add(
            "onSessionOpen-100n: Caldera peak RSS growth / body size (this cluster's snapshot"
            " received before, as in every cycle)",
            _per_body(cal, "peak_rss_growth_MiB", r["body_bytes"]),
            1.0,
            "lower",
            "x",
        )
        add(
            "onSessionOpen-100n: Caldera peak RSS growth / body size, the first snapshot of a"
            " fresh server",
            _per_body(cal, "first_snapshot_growth_MiB", r["body_bytes"]),
            1.0,
            "lower",
            "x",
        )
    for r in marshal_target_rows(doc["workloads"]):
        cal, mar = r["caldera"], r.get("marshal")
        add(
            f"{r['workload']} ({_size(r['body_bytes'])}): Caldera p50 / Volcano's marshal p50",
            _ratio(cal and cal["p50_ms"], mar and mar["p50_ms"]),
            1.0,
            "lower",
            "x",
        )
    cy = doc.get("cycle") or {}
    c = cy.get("caldera")
    add(
        "cycle: Caldera total / floor sum",
        _ratio(c and c["total_ms_median"], cy.get("floor_estimate_ms")),
        CYCLE_FLOOR_GOAL,
        "lower",
        "x",
    )
    add(
        "cycle: Caldera extender time / 1 s period",
        c and c["total_ms_median"] and c["total_ms_median"] / 1000,
        0.10,
        "lower",
        "of period",
    )
    for r in doc["workloads"]:
        if r["concurrency"] == 1 and r["verb"] != "onSessionClose":
            add(
                f"{r['workload']}: Caldera / floor ({r['floor']['best'] if r['floor'] else '-'})",
                r["caldera_over_floor"],
                1.5,
                "lower",
                "x",
            )
    return out


# ------------------------------------------------------------------------------------ markdown


def _f(x: Any, fmt: str = "{:.2f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return fmt.format(x)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v * 100:.0f}%"


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}×"


def share(extender_ms: float | None, marshal_ms: float | None) -> float | None:
    """The extender's share of a call's cost to Volcano: its answer time over that plus
    Volcano's own marshal time."""
    if extender_ms is None or marshal_ms is None or extender_ms + marshal_ms <= 0:
        return None
    return extender_ms / (extender_ms + marshal_ms)


def _size(b: int) -> str:
    return f"{b / MiB:.1f} MiB" if b >= MiB else f"{b / 1024:.0f} KiB"


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    L: list[str] = []
    L.append(f"# Caldera benchmark ({doc['mode']}) — {doc['generated']}")
    L.append("")
    L.append(
        f"Machine: {m.get('cpu', '?')}, {m.get('cpus')} CPUs, {m.get('memory_GiB')} GiB"
        f"{' (VM)' if m.get('hypervisor') == 'yes' else ''}; {m.get('platform')}; Python {m.get('python')}; "
        f"{m.get('go', 'no Go')}; commit {m.get('commit', '?')}{' + uncommitted changes' if m.get('worktree_dirty') else ''}; "
        f"msgspec {m['libs']['msgspec']}, pydantic {m['libs']['pydantic']}, orjson {m['libs']['orjson']}. "
        f"Run took {doc['seconds']:.0f} s. Load average at start/end: "
        f"{'/'.join(f'{x:.1f}' for x in m.get('loadavg_at_start', [])[:1] + m.get('loadavg_at_end', [])[:1])} "
        "(other work on the machine disturbs the numbers; 2-core machines are sensitive to it)."
    )
    s = doc["setup"]
    cfgs = s.get("caldera_config") or {}
    L.append("")
    L.append(
        f"Servers pinned to one core ({s['server_cpu']}); load generator on the other ({s['loadgen_cpu']}). "
        "Floor: the fastest of msgspec / pydantic / orjson decoding the same bytes in-process into narrow "
        "typed structures (bench/floor.py), no HTTP. Volcano's marshal: bench/go-marshal, "
        "`encoding/json.Marshal` of Volcano v1.14.1's request type for the verb, GOMAXPROCS=1, same core."
    )
    L.append("")
    L.append(
        "Caldera configurations (bench/configs.py; one Caldera per configuration, each load "
        "after the onSessionOpen of its cluster, Volcano 1.16 dialect):"
    )
    L += ["", "| configuration | tiers | workloads | why |", "|---|---|---|---|"]
    for name, c in cfgs.items():
        used = [r["workload"] for r in doc["workloads"] if r.get("config") == name]
        if (doc.get("cycle") or {}).get("config") == name:
            used.append("cycle")
        L.append(f"| {name} | {c['plugins'].split(': ', 1)[-1]} | {', '.join(used)} | {c['why']} |")
    L += ["", "## Per workload", ""]
    L.append(
        "| workload | body | in flight | server | req | req/s | p50 ms | p99 ms | max ms | ingest MB/s | peak RSS MiB (growth) |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in doc["workloads"]:
        first = True
        for who in ("caldera", "caldera_asgi", "go", "floor"):
            x = r.get(who)
            if not x:
                continue
            label = {
                "caldera": f"caldera [{r.get('config') or '?'}]",
                "floor": f"floor ({x.get('best')})",
                "caldera_asgi": "caldera app in-process (no HTTP)",
            }.get(who, who)
            rss = "–"
            if x.get("peak_rss_MiB") is not None:
                rss = f"{x['peak_rss_MiB']:.0f} ({x['peak_rss_growth_MiB']:+.0f})"
            elif who == "floor" and x.get("peak_rss_growth_MiB") is not None:
                rss = f"({x['peak_rss_growth_MiB']:+.0f})"
            err = f" ⚠{x['errors']} err" if x.get("errors") else ""
            L.append(
                f"| {r['workload'] if first else ''} | {_size(r['body_bytes']) if first else ''} | "
                f"{r['concurrency'] if first else ''} | {label}{err} | {x.get('requests', '–')} | "
                f"{_f(x.get('throughput_rps'), '{:.1f}')} | {_f(x.get('p50_ms'), '{:.3f}')} | "
                f"{_f(x.get('p99_ms'), '{:.3f}')} | {_f(x.get('max_ms'), '{:.3f}')} | "
                f"{_f(x.get('ingest_MBps'), '{:.0f}') if r['verb'] == 'onSessionOpen' else ''} | {rss} |"
            )
            first = False
    L += ["", "## Ratios", ""]
    L.append(
        "Caldera/Go throughput > 1 means Caldera serves more requests per second than the Go extender. "
        "Caldera/floor is Caldera's time per request over the floor's (p50 with one in flight; 1/throughput with 16)."
    )
    L.append("")
    fixed = next((r.get("http_fixed_ms") for r in doc["workloads"] if r.get("http_fixed_ms")), None)
    L.append(
        "The floor has no HTTP. *Caldera/(floor + HTTP)* adds the smallest HTTP round trip measured here "
        f"(Go extender, onSessionClose `{{}}`, p50 {_f(fixed, '{:.3f}')} ms) to the floor. *Caldera app alone* "
        "drives Caldera's ASGI app in-process with the same bodies (no sockets, no uvicorn; bench/run.py "
        "`run_asgi`), and *HTTP share* is 1 − that p50 / Caldera's p50 over HTTP: the part of Caldera's "
        "latency spent in uvicorn, the socket and the load generator rather than in Caldera's code."
    )
    L.append("")
    L.append(
        "| workload | Caldera/Go throughput | Caldera/Go p50 | Caldera/floor | floor library | Caldera/(floor + HTTP) "
        "| Caldera app alone (no HTTP) / floor | HTTP share of Caldera p50 |"
    )
    L.append("|---|---|---|---|---|---|---|---|")
    for r in doc["workloads"]:
        L.append(
            f"| {r['workload']} | {_x(r['caldera_over_go_throughput'])} | {_x(r['caldera_over_go_p50'])} | "
            f"{_x(r['caldera_over_floor'])} | {(r['floor'] or {}).get('best', '–')} | "
            f"{_x(r.get('caldera_over_floor_plus_http'))} | {_x(r.get('caldera_asgi_over_floor'))} | "
            f"{_pct(r.get('http_share'))} |"
        )
    L += ["", "## Volcano's own cost per call: the marshal before the POST", ""]
    L.append(
        "Volcano's extender plugin calls `json.Marshal` on the verb's request struct before every "
        "POST (`send` in pkg/scheduler/plugins/extender/extender.go). Target: Caldera's p50 over "
        "HTTP below that marshal time for every verb whose body is over 100 KiB. The marshalled "
        "size differs from the body where the v1.14.1 types lack fields of the HEAD-shaped bodies."
    )
    L.append("")
    L.append(
        "| workload | body | marshalled | Volcano marshal p50 ms | min ms | Caldera p50 ms (HTTP) "
        "| Caldera / marshal | target (body > 100 KiB) |"
    )
    L.append("|---|---|---|---|---|---|---|---|")
    target_rows = {id(r) for r in marshal_target_rows(doc["workloads"])}
    for r in doc["workloads"]:
        mar, cal = r.get("marshal"), r.get("caldera")
        if not mar:
            continue
        if id(r) in target_rows:
            ratio = r.get("caldera_over_marshal")
            met = "n/a" if ratio is None else ("met" if ratio < 1 else "**not met**")
        else:
            met = "–"
        L.append(
            f"| {r['workload']} | {_size(r['body_bytes'])} | {_size(mar.get('out_bytes') or 0)} | "
            f"{_f(mar.get('p50_ms'), '{:.3f}')} | {_f(mar.get('min_ms'), '{:.3f}')} | "
            f"{_f(cal and cal.get('p50_ms'), '{:.3f}')} | {_x(r.get('caldera_over_marshal'))} | {met} |"
        )
    cy = doc.get("cycle")
    if cy:
        L += ["", "## Replayed scheduling cycle", ""]
        L.append(cy["description"] + ".")
        L.append("")
        L.append(
            f"Caldera configuration: {cy.get('config') or '?'}. *Volcano marshal* is the estimated "
            "time Volcano spends in `json.Marshal` for the step's calls (per-call p50 of the "
            "nearest measured body of the verb, scaled by size, summed; Volcano's 16 predicate "
            "workers would spread it over its cores). *Extender share* is Caldera's time over "
            "Caldera's plus Volcano's marshal time for the step."
        )
        L.append("")
        L.append(
            "| step | calls/cycle | MiB/cycle | Volcano marshal ms/cycle | Caldera ms/cycle | extender share "
            "| floor ms/cycle | Caldera call p50 ms | Go ms/cycle | Go call p50 ms |"
        )
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        c, g = cy.get("caldera") or {}, cy.get("go") or {}
        mar, flo = cy.get("marshal_steps_ms") or {}, cy.get("floor_steps_ms") or {}
        names = list((c.get("steps") or g.get("steps") or {}).keys())
        for n in names:
            cs, gs = (c.get("steps") or {}).get(n, {}), (g.get("steps") or {}).get(n, {})
            base = cs or gs
            L.append(
                f"| {n} | {base.get('calls_per_cycle')} | {_f(base.get('MiB_per_cycle'), '{:.1f}')} | "
                f"{_f(mar.get(n), '{:.0f}')} | {_f(cs.get('ms_per_cycle'), '{:.0f}')} | "
                f"{_pct(share(cs.get('ms_per_cycle'), mar.get(n)))} | {_f(flo.get(n), '{:.0f}')} | "
                f"{_f(cs.get('call_p50_ms'), '{:.2f}')} | "
                f"{_f(gs.get('ms_per_cycle'), '{:.0f}')} | {_f(gs.get('call_p50_ms'), '{:.2f}')} |"
            )
        L.append(
            f"| **total (median)** | | | **{_f(cy.get('marshal_estimate_ms'), '{:.0f}')}** | "
            f"**{_f(c.get('total_ms_median'), '{:.0f}')}** | "
            f"**{_pct(share(c.get('total_ms_median'), cy.get('marshal_estimate_ms')))}** | "
            f"**{_f(cy.get('floor_estimate_ms'), '{:.0f}')}** | | "
            f"**{_f(g.get('total_ms_median'), '{:.0f}')}** | |"
        )
        L.append("")
        ratio = _ratio(c.get("total_ms_median"), cy.get("floor_estimate_ms"))
        L.append(
            f"Caldera's total is {_x(ratio)} the floor sum (in-process p50s, no HTTP, no "
            f"parallelism; target {goal_text('lower', CYCLE_FLOOR_GOAL, '×')}: "
            f"{'met' if is_met(ratio, CYCLE_FLOOR_GOAL, 'lower') else '**not met**'}). "
            f"Peak RSS: Caldera {_f(c.get('peak_rss_MiB'), '{:.0f}')} MiB, Go "
            f"{_f(g.get('peak_rss_MiB'), '{:.0f}')} MiB."
        )
    L += ["", "## Targets", ""]
    met_n = sum(1 for t in doc["targets"] if t["met"])
    L.append(
        f"Every target of this run ({doc['mode']}, commit {doc['machine'].get('commit', '?')}, "
        f"{doc['generated']}), met or not: {met_n} of {len(doc['targets'])} met."
    )
    L += ["", "| target | measured | goal | met | measured/goal |", "|---|---|---|---|---|"]
    for t in doc["targets"]:
        goal = goal_text(t["better"], t["goal"], f" {t['unit']}")
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        L.append(
            f"| {t['target']} | {_f(t['value'], '{:.3f}')} {t['unit']} | {goal} | {met} | {_f(t['value_over_goal'])} |"
        )
    L += ["", "## Decoding libraries on these bodies (in-process, one core, p50 ms)", ""]
    L.append(
        "| body | size | msgspec (narrow Structs) | pydantic (narrow, model_validate_json) | orjson.loads (dicts) | fastest |"
    )
    L.append("|---|---|---|---|---|---|")
    seen = set()
    for r in doc["workloads"]:
        libs = r.get("floor_libs")
        if not libs or r["description"] + r["verb"] in seen:
            continue
        seen.add(r["description"] + r["verb"])
        cells = []
        for lib in ("msgspec", "pydantic", "orjson"):
            x = libs.get(lib)
            if x:
                extra = f" ({x['ingest_MBps']:.0f} MB/s)" if r["verb"] == "onSessionOpen" else ""
                cells.append(f"{x['p50_ms']:.3f}{extra}")
            else:
                cells.append("–")
        L.append(
            f"| {r['verb']}: {r['description']} | {_size(r['body_bytes'])} | "
            + " | ".join(cells)
            + f" | {(r['floor'] or {}).get('best', '–')} |"
        )
    if doc["failures"]:
        L += ["", "## Failures", ""]
        for f in doc["failures"]:
            L.append(f"- {f}")
    L.append("")
    return "\n".join(L)


# ---------------------------------------------------------------------------------------- plot


def plot(doc: dict[str, Any], raw: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    loads = [r for r in doc["workloads"]]
    n = len(loads) + (1 if doc.get("cycle") else 0)
    cols = 3
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(15, 3.6 * rows), squeeze=False)
    colors = {"caldera": "tab:blue", "go": "tab:orange", "asgi": "tab:cyan"}
    labels = {"caldera": "caldera", "go": "go", "asgi": "caldera app, no HTTP"}
    for ax, r in zip(axes.flat, loads, strict=False):
        for who in ("caldera", "asgi", "go"):
            lat = raw.get(f"{who}/{r['workload']}")
            if lat:
                ys = sorted(x / 1e3 for x in lat)
                ax.plot(
                    ys,
                    [(i + 1) / len(ys) for i in range(len(ys))],
                    label=labels[who],
                    color=colors[who],
                    linestyle=":" if who == "asgi" else "-",
                )
        fl = r.get("floor")
        if fl:
            ax.axvline(
                fl["p50_ms"], color="tab:green", linestyle="--", label=f"floor p50 ({fl['best']})"
            )
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"{r['workload']} ({_size(r['body_bytes'])})", fontsize=10)
        ax.set_xlabel("latency, ms (log)")
        ax.set_ylabel("CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    if doc.get("cycle"):
        ax = axes.flat[len(loads)]
        cy = doc["cycle"]
        names: list[str] = []
        for who in ("caldera", "go"):
            c = cy.get(who) or {}
            names = names or list((c.get("steps") or {}).keys())
        x = range(len(names))
        w = 0.4
        for k, who in enumerate(("caldera", "go")):
            steps = (cy.get(who) or {}).get("steps") or {}
            ax.bar(
                [i + (k - 0.5) * w for i in x],
                [steps.get(nm, {}).get("ms_per_cycle", 0) for nm in names],
                w,
                label=who,
                color=colors[who],
            )
        ax.axhline(100, color="red", linestyle=":", label="10% of 1 s period")
        ax.set_xticks(list(x), names, rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ms per cycle (log)")
        ax.set_title("replayed cycle, time per step", fontsize=10)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(
        f"Caldera vs Go extender vs in-process floor — {doc['mode']}, {doc['generated']}",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def results_section(doc: dict[str, Any]) -> str:
    """bench/README's latest-results block (between its results markers) for a run's document
    (bench/results/latest.json); ``python -m bench report`` renders it from that file."""
    body = markdown(doc).split("\n", 1)[1]  # drop the H1
    body = body.replace("\n## ", "\n### ")
    return (
        f"_Generated by `python -m bench run` ({doc['mode']}) on {doc['generated']}; "
        f"plot: [results/latency.png](results/latency.png), raw: [results/latest.json](results/latest.json)._\n"
        f"{body}"
    )


def workloads_paragraph(doc: dict[str, Any]) -> str:
    """bench/README's list of the workloads a run measured, their bodies and concurrency, and
    the replayed cycle (``python -m bench report`` renders it from bench/results/latest.json)."""
    rows = [
        f"- {w['workload']}: {w['description']}, {_size(w['body_bytes'])},"
        f" {w['concurrency']} in flight"
        for w in doc["workloads"]
    ]
    cycle = textwrap.fill(
        f"- the replayed cycle: {doc['cycle']['description']}",
        100,
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(
        [f'Workloads ({doc["mode"]} mode, the run of "Latest results" below):', "", *rows, cycle]
    )
