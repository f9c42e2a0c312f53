"""``python -m bench.measured``: write ``app/commands/measured.py``, the committed measurements
``caldera volcano-config`` sizes from, out of the results files that hold them, and the
operator guide's memory table (§2) that the sizing model computes from it.

bench/results is not in the wheel, so the installed command cannot read it: the figures are
copied into a module of plain values, and ``tests/bench/test_measured.py`` regenerates it and
fails when the committed one differs, so a new run of either benchmark must be followed by
this command (and the documents the sizing tests check, which then fail until they agree).

- ``bench/results/cluster.json`` (``python -m bench cluster``): per size, with the job plugin
  group, the medians over the rounds of the snapshot Volcano posted, its extender's
  OnSessionOpen, and Caldera's peak RSS in snapshot and in cluster mode.
- ``bench/results/cluster-state.json`` (``python -m bench.cluster_state``): per size, the
  store's memory, the peak RSS of a process in cluster mode, and the first derivation's time.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MODULE = ROOT / "app" / "commands" / "measured.py"
GUIDE = ROOT / "docs" / "operator-guide.md"
GROUP = "job"
"""The plugin group every size of the cluster run measured (node and evict: the smallest only)."""

HEADER_END = "CLUSTER_RUN_COMMIT = "
"""Where the module's written part ends: its docstring and the two row types above this line
are the module's own (edited there), the values from this line on are generated."""


def header() -> str:
    """The module's written part, as committed (everything before :data:`HEADER_END`)."""
    text = MODULE.read_text()
    return text[: text.index(HEADER_END)]


def cluster_runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per size of the cluster run, the medians over its rounds (job plugins)."""
    cases: dict[tuple[int, int], dict[str, list[dict[str, Any]]]] = {}
    for run in doc["runs"]:
        if run["group"] == GROUP:
            size = cases.setdefault((run["nodes"], run["pods"]), {})
            size.setdefault(run["scheduler"], []).append(run)
    rows = []
    for (nodes, pods), by in sorted(cases.items()):
        snapshot, cluster = by["caldera"], by["caldera-cluster"]
        rows.append(
            {
                "nodes": nodes,
                "pods": pods,
                "snapshot_bytes": round(statistics.median(r["snapshotBytes"] for r in snapshot)),
                "extender_open_seconds": round(
                    statistics.median(r["extenderOpenMs"] for r in snapshot) / 1000, 4
                ),
                "snapshot_peak_rss_mib": round(
                    statistics.median(r["serverPeakRssMiB"] for r in snapshot), 1
                ),
                "cluster_peak_rss_mib": round(
                    statistics.median(r["serverPeakRssMiB"] for r in cluster), 1
                ),
            }
        )
    return rows


def store_runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "nodes": size["nodes"],
            "pods": size["pods"],
            "store_mib": size["store_mib"],
            "idle_rss_mib": size["rss"]["idle_mib"],
            "peak_rss_mib": size["rss"]["peak_mib"],
            "first_session_seconds": round(
                size["incremental"]["first_session_ms"]["median"] / 1000, 4
            ),
        }
        for size in doc["sizes"]
    ]


def _rows(name: str, kind: str, rows: list[dict[str, Any]]) -> str:
    lines = [f"{name}: tuple[{kind}, ...] = ("]
    for row in rows:
        lines.append(f"    {kind}(")
        lines += [f"        {key}={value!r}," for key, value in row.items()]
        lines.append("    ),")
    return "\n".join([*lines, ")"])


def render(cluster: dict[str, Any], cluster_state: dict[str, Any]) -> str:
    return (
        header()
        + f"{HEADER_END}{json.dumps(cluster['machine']['commit'])}\n"
        + '"""The commit bench/results/cluster.json was measured at."""\n'
        + _rows("CLUSTER_RUNS", "ClusterRun", cluster_runs(cluster))
        + '\n"""bench/results/cluster.json, smallest size first."""\n'
        + _rows("STORE_RUNS", "StoreRun", store_runs(cluster_state))
        + '\n"""bench/results/cluster-state.json, in its order."""\n'
    )


def generated() -> str:
    def load(name: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((RESULTS / name).read_text())
        return doc

    return render(load("cluster.json"), load("cluster-state.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.measured", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the module differs")
    args = parser.parse_args(argv)
    text = generated()
    if args.check:
        return 0 if MODULE.read_text() == text else 1
    MODULE.write_text(text)
    print(f"wrote {MODULE.relative_to(ROOT)}")
    write_guide_table()
    return 0


def write_guide_table() -> None:
    """docs/operator-guide.md §2's memory table from the module just written (the sizing model
    on it: tests/app/commands/test_sizing_docs.py holds the two equal)."""
    from app.commands import measured, sizing
    from app.config import DEFAULT_MAX_SNAPSHOT_BYTES

    importlib.reload(measured)
    importlib.reload(sizing)
    text = GUIDE.read_text()
    begin, end = "<!-- sizing-memory:begin -->\n", "<!-- sizing-memory:end -->"
    head, found, rest = text.partition(begin)
    _, closed, tail = rest.partition(end)
    if not (found and closed):
        raise SystemExit(f"{GUIDE.relative_to(ROOT)} has no {begin.strip()} ... {end} block")
    table = sizing.memory_table(DEFAULT_MAX_SNAPSHOT_BYTES)
    GUIDE.write_text(f"{head}{begin}{table}\n{end}{tail}")
    print(f"wrote {GUIDE.relative_to(ROOT)}'s memory table")


if __name__ == "__main__":
    raise SystemExit(main())
