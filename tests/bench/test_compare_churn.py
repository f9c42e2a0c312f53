"""bench/compare_churn.py: the README section on compare mode under churn, and its command."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from bench import compare_churn
from bench.__main__ import main


def _document(**kinds: dict[str, float]) -> dict[str, Any]:
    return {
        "workload": {
            "nodes": 3,
            "waves": 40,
            "podsPerJob": 4,
            "waveEverySeconds": 0.5,
            "runSeconds": 2,
            "keepSeconds": 1,
        },
        "seconds": 24.0,
        "pods": 160,
        "sessions": {"compared": 20, "busy": 1},
        "sessionsWithDifferences": 2,
        "kinds": kinds,
        "measured": {"commit": "abc1234", "cpus": 2, "loadBefore": 3.0, "loadAfter": 3.5},
    }


def test_the_section_gives_each_kind_per_session_in_flight_and_why() -> None:
    text = compare_churn.readme_text(
        _document(
            **{
                "task.extra": {"differences": 2, "inFlight": 2, "sessions": 2},
                "job.TotalRequest": {"differences": 6, "inFlight": 6, "sessions": 2},
            }
        )
    )
    assert "Sessions compared: 20 (1 busy); with a difference: 2 (10 %)" in text
    assert "differences: 8 (0.40 per session), in flight: 8." in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1].startswith("| job.TotalRequest | 6 | 0.30 | 2 | 6 | its job's tasks")
    assert rows[2].startswith("| task.extra | 2 | 0.10 | 2 | 2 | a pod created after")


def test_a_kind_without_an_explanation_says_so() -> None:
    text = compare_churn.readme_text(
        _document(**{"job.Budget": {"differences": 1, "inFlight": 0, "sessions": 1}})
    )
    assert "| job.Budget | 1 | 0.05 | 1 | 0 | not explained yet |" in text


def test_every_kind_in_the_committed_results_is_explained_and_in_flight() -> None:
    document = json.loads(compare_churn.OUT.read_text())
    assert document["sessions"]["compared"] >= 5
    for kind, figures in document["kinds"].items():
        assert kind in compare_churn.WHY, kind
        assert figures["inFlight"] == figures["differences"], kind


def test_the_command_bench_readme_shows_runs_the_e2e_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = [
        line.split("#")[0]
        for line in compare_churn.README_PATH.read_text().splitlines()
        if line.startswith("uv run python -m bench compare-churn")
    ]
    assert lines
    for line in lines:
        argv = shlex.split(line)[argv_start(line) :]
        assert main([*argv, "--dry-run"]) == 0
        printed = capsys.readouterr().out
        assert "tests/e2e/run.sh -run ^TestE2E$/^compare-churn$" in printed
    suite = (compare_churn.REPO / "tests" / "e2e" / "e2e_test.go").read_text()
    assert 't.Run("compare-churn",' in suite


def argv_start(line: str) -> int:
    """Where ``python -m bench``'s own arguments start in ``uv run python -m bench ...``."""
    return shlex.split(line).index("bench") + 1
