"""The bench report's pure logic (bench/report.py): which rows the marshal target covers, the
extender's share of a call, the cycle's summed estimates, and the targets it marks."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import readme, report, run

KIB = 1024


def row(name: str, verb: str, body: int, conc: int = 1, **kw: Any) -> dict[str, Any]:
    return {"workload": name, "verb": verb, "body_bytes": body, "concurrency": conc, **kw}


def test_marshal_target_covers_one_in_flight_rows_over_100_kib_once_per_body() -> None:
    rows = [
        row("predicate-c1", "predicate", 241 * KIB),
        row("predicate-c16", "predicate", 241 * KIB, conc=16),
        row("preemptable-c1", "preemptable", 100 * KIB),  # not over 100 KiB
        row("reclaimable-c1", "reclaimable", 226 * KIB),
        row("allocate-c1", "allocate", 6 * KIB),
        row("onSessionOpen-10n", "onSessionOpen", 4300 * KIB),
        row("onSessionOpen-100n", "onSessionOpen", 76800 * KIB),
    ]
    got = [r["workload"] for r in report.marshal_target_rows(rows)]
    assert got == ["predicate-c1", "reclaimable-c1", "onSessionOpen-10n", "onSessionOpen-100n"]


SHARES = [
    ("extender as slow as the marshal", 2.0, 2.0, 0.5),
    ("extender a quarter of the cost", 1.0, 3.0, 0.25),
    ("no marshal measured", 1.0, None, None),
    ("nothing at all", 0.0, 0.0, None),
]


@pytest.mark.parametrize(("name", "ext", "mar", "want"), SHARES, ids=[s[0] for s in SHARES])
def test_share(name: str, ext: float, mar: float | None, want: float | None) -> None:
    assert report.share(ext, mar) == want


def test_cycle_estimate_scales_the_nearest_body_of_each_verb(tmp_path: Path) -> None:
    task, node = tmp_path / "task.json", tmp_path / "node.json"
    task.write_bytes(b"t" * 1000)
    node.write_bytes(b"n" * 3000)
    alloc = tmp_path / "alloc.json"
    alloc.write_bytes(b"a" * 500)
    steps = [
        {"name": "predicate", "calls": [
            {"path": "/predicate", "parts": ["={", str(task), "=,", str(node), "=}"]}] * 2},
        {"name": "allocate", "calls": [{"path": "/allocate", "body": str(alloc)}]},
    ]  # fmt: skip
    suite = SimpleNamespace(cycle=SimpleNamespace(steps=steps))
    rows = [
        row("predicate-c1", "predicate", 8000, marshal={"p50_ms": 2.0}),
        row("predicate-big", "predicate", 80000, marshal={"p50_ms": 100.0}),
        row("predicate-c16", "predicate", 4003, conc=16, marshal={"p50_ms": 999.0}),
        row("allocate-c1", "allocate", 1000, marshal={"p50_ms": 0.5}),
    ]
    got = report._cycle_estimate(suite, rows, "marshal")
    assert got == pytest.approx({"predicate": 2 * 2.0 * 4003 / 8000, "allocate": 0.25})
    # a verb of the cycle without a measurement: no estimate rather than a partial sum
    assert report._cycle_estimate(suite, rows[:3], "marshal") == {}


def doc_with(cal_p50: float, marshal_p50: float, body: int) -> dict[str, Any]:
    r = row("jobReady-c1", "jobReady", body, caldera={"p50_ms": cal_p50},
            marshal={"p50_ms": marshal_p50}, caldera_over_floor=None, floor=None,
            caldera_over_go_throughput=None)  # fmt: skip
    return {"workloads": [r], "cycle": None}


@pytest.mark.parametrize(
    ("name", "cal", "mar", "met"),
    [
        ("caldera faster than the marshal", 0.5, 2.0, True),
        ("caldera slower than the marshal", 3.0, 2.0, False),
    ],
)
def test_the_marshal_target_is_met_only_below_the_marshal_time(
    name: str, cal: float, mar: float, met: bool
) -> None:
    targets = report.targets(doc_with(cal, mar, 410 * KIB))
    (t,) = [t for t in targets if "marshal" in t["target"]]
    assert t["met"] is met
    assert t["value"] == pytest.approx(cal / mar)


def test_small_bodies_carry_no_marshal_target() -> None:
    assert not [t for t in report.targets(doc_with(1.0, 0.1, 6 * KIB)) if "marshal" in t["target"]]


def test_cycle_target_is_caldera_total_over_the_floor_sum() -> None:
    doc = {"workloads": [], "cycle": {"caldera": {"total_ms_median": 1100.0},
                                      "floor_estimate_ms": 1000.0}}  # fmt: skip
    (t,) = [t for t in report.targets(doc) if "floor sum" in t["target"]]
    assert t["met"] is True and t["value"] == pytest.approx(1.1)
    doc["cycle"]["caldera"]["total_ms_median"] = 1300.0
    (t,) = [t for t in report.targets(doc) if "floor sum" in t["target"]]
    assert t["met"] is False


BENCH = Path(report.__file__).resolve().parent


def test_published_results_are_what_their_json_renders() -> None:
    """results/latest.md and the README's generated section (its "Targets" table included: every
    target of the run, met or not, with the run's commit) come from results/latest.json alone."""
    doc = json.loads((BENCH / "results" / "latest.json").read_text())
    assert doc["mode"] == "full"
    assert (BENCH / "results" / "latest.md").read_text() == report.markdown(doc)
    text = (BENCH / "README.md").read_text()
    (results,) = [s for s in readme.SECTIONS if s.name == "results"]
    assert readme.current(text, results) == report.results_section(doc).strip("\n")
    assert f"commit {doc['machine']['commit']}" in text


def test_one_comparison_for_every_goal() -> None:
    assert report.is_met(0.99, 1.0, "lower") and not report.is_met(1.0, 1.0, "lower")
    assert report.is_met(2.0, 2.0, "higher") and not report.is_met(1.99, 2.0, "higher")
    assert report.is_met(None, 1.0, "lower") is None
    assert report.goal_text("lower", 1.2, "×") == "< 1.2×"
    assert report.goal_text("higher", 2, " x") == "≥ 2 x"


def test_only_a_full_run_writes_the_published_results() -> None:
    assert run.result_stem("full") == "latest"
    assert {run.result_stem("quick"), run.result_stem("smoke")} == {"quick", "smoke"}
