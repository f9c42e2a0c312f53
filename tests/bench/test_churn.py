"""bench/churn.py: the plan it hands TestChurn, what fails a run, and the README section."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from bench import churn
from bench.__main__ import main


def _run(mode: str, **changes: Any) -> dict[str, Any]:
    run: dict[str, Any] = {
        "mode": mode,
        "nodes": 100,
        "pods": 1000,
        "windowSeconds": 1200.0 if mode == "compare" else 300.0,
        "jobsArrived": 1300,
        "podsArrived": 4900,
        "jobsStarted": 1290,
        "unstarted": 10,
        "podsSucceeded": 4600,
        "podsFailed": 240,
        "startP50Seconds": 2.0,
        "startP90Seconds": 8.0,
        "startP99Seconds": 40.0,
        "cycles": 1100,
        "cycleP50Ms": 200.0,
        "cycleP99Ms": 900.0,
        "overruns": 3,
        "livePodsMean": 1010.0,
        "pendingPodsMean": 30.0,
        "schedulerPeakRssMiB": 150.0,
        "calderaPeakRssMiB": 0.0 if mode == "intree" else 120.0,
        "loadAvgBefore": 6.0,
        "loadAvgAfter": 7.5,
        "statusErrors": 0,
        "sessionsWithDifferences": 0,
    }
    if mode == "compare":
        run |= {
            "sessions": {"compared": 1000, "busy": 50},
            "sessionsWithDifferences": 40,
            "differencesPerSession": {"p50": 0, "p99": 12, "max": 30},
            "kinds": {
                "task.Status": {"differences": 30, "inFlight": 30, "sessions": 25},
                "node.Used": {"differences": 90, "inFlight": 90, "sessions": 25},
            },
        }
    return run | changes


def _document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    plan = {**churn.FULL, "nodes": 100, "pods": 1000, "seed": 50}
    plan |= {"modes": list(churn.MODES), "windowSeconds": {"compare": 1200.0}}
    return {
        "sizes": {
            "100x1000": {
                "plan": plan,
                "label": "",
                "measured": {
                    "commit": "abc1234",
                    "commitAtStart": "1234abc",
                    "date": "2026-12-06T16:00Z",
                    "cpus": 2,
                    "loadavg_before": [6.0, 5.0, 4.0],
                    "seconds": 2100.0,
                },
                "runs": runs,
            }
        }
    }


def test_the_section_gives_each_mode_and_each_kind_with_its_cause() -> None:
    text = churn.readme_text(_document([_run("compare"), _run("intree"), _run("cluster")]))
    assert "**100 nodes, 1,000 live pods** (seed 50; started at commit 1234abc, ended" in text
    assert "arriving at 1.11/s (Poisson), running 120–360 s (uniform), 5 % of pods Failed" in text
    assert (
        "| intree | 5 min | 1,300 (4,900) | 1,290 (10 waiting at the end) | 2.0 / 8.0 / 40.0 |"
        in (text)
    )
    assert "Compare mode: 1000 sessions compared (50 busy); with a difference: 40 (4 %);" in text
    assert "differences: 120, 0.12 per compared session (p50 0, p99 12, max 30)" in text
    assert "in flight: 120, not in flight: 0." in text
    rows = [line for line in text.splitlines() if line.startswith(("| node.", "| task."))]
    assert rows[0].startswith("| node.Used | 90 | 0.090 | 25 | 90 | the tasks on the node")
    assert rows[1].startswith("| task.Status | 30 | 0.030 | 25 | 30 | a pod bound")
    assert "Cluster mode against in-tree: cycle p50 1.00×, time to start p50 1.00×" in text


def test_a_mode_not_measured_and_a_kind_without_a_cause_say_so() -> None:
    compare = _run("compare")
    compare["kinds"]["job.Budget"] = {"differences": 1, "inFlight": 0, "sessions": 1}
    text = churn.readme_text(_document([compare]))
    assert "Not measured at this size: intree, cluster." in text
    assert "| job.Budget | 1 | 0.001 | 1 | 0 | not explained yet |" in text
    assert "Cluster mode against in-tree" not in text


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([_run("compare"), _run("intree"), _run("cluster")], []),
        ([_run("compare"), _run("intree")], ["cluster: not measured"]),
        (
            [_run("compare", error="vc-scheduler exited"), _run("intree"), _run("cluster")],
            ["compare: vc-scheduler exited"],
        ),
        (
            [_run("compare"), _run("intree", cycles=0, jobsStarted=0), _run("cluster")],
            ["intree: no cycle measured", "intree: no job started in the window"],
        ),
        (
            [
                _run(
                    "compare",
                    kinds={"task.Pod": {"differences": 5, "inFlight": 2, "sessions": 3}},
                ),
                _run("intree"),
                _run("cluster"),
            ],
            ["compare: 3 difference(s) of kind task.Pod not in flight"],
        ),
    ],
    ids=["clean", "a mode missing", "an error", "nothing measured", "not in flight"],
)
def test_what_fails_a_run(runs: list[dict[str, Any]], expected: list[str]) -> None:
    assert churn.failures(runs, list(churn.MODES)) == expected


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    churn.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_plans() -> None:
    smoke = churn.plan_of(_args("--smoke"))
    assert (smoke["nodes"], smoke["pods"], smoke["seed"]) == (10, 100, churn.SEED)
    assert smoke["windowSeconds"] == {"compare": 20.0, "intree": 5.0, "cluster": 5.0}
    assert smoke["out"].endswith("churn-smoke.runs.json")
    full = churn.plan_of(_args("--size", "500x5000", "--modes", "compare,cluster"))
    assert (full["nodes"], full["pods"], full["modes"]) == (500, 5000, ["compare", "cluster"])
    assert full["windowSeconds"] == {"compare": 1200.0, "cluster": 300.0}
    assert full["minRunSeconds"] == churn.FULL["minRunSeconds"]
    with pytest.raises(SystemExit):
        churn.plan_of(_args("--modes", "snapshot"))


def test_the_command_runs_test_churn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["churn", "--smoke", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "tests/e2e/run.sh -tags scale -run ^TestChurn$ -timeout 0" in printed
    assert json.loads(printed.splitlines()[0])["nodes"] == 10
    source = (churn.REPO / "tests" / "e2e" / "churn_test.go").read_text()
    assert "func TestChurn(t *testing.T)" in source
    assert "CALDERA_CHURN_PLAN" in source


def test_every_kind_in_the_committed_results_is_explained() -> None:
    """Each kind has its cause; a kind found not in flight is one whose bug was fixed
    (``FIXED``), and a run of the smoke or later must find none (``failures``)."""
    if not churn.OUT.exists():
        pytest.skip("no committed churn results yet")
    document = json.loads(churn.OUT.read_text())
    assert document["sizes"]
    for size, entry in document["sizes"].items():
        for run in entry["runs"]:
            if run["mode"] != "compare":
                continue
            assert run["sessions"]["compared"] >= 5, size
            for kind, figures in run["kinds"].items():
                assert kind in churn.WHY, (size, kind)
                if figures["inFlight"] != figures["differences"]:
                    assert kind in churn.FIXED, (size, kind)
