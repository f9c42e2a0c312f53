"""bench/explain.py: the decision record's memory and per-call cost are measured and written."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import explain


def test_the_measurement_runs_and_writes_its_figures(tmp_path: Path) -> None:
    p = argparse.ArgumentParser()
    explain.add_arguments(p)
    out = tmp_path / "explain.json"
    assert explain.main(p.parse_args(["--jobs", "20", "--nodes", "10", "--out", str(out)])) == 0
    document = json.loads(out.read_text())
    memory = document["memory"]
    # a job: its verdicts' entry, its task's and one per node the task was checked against;
    # the one preemptor of 20 jobs: 10 evictees named and 3 x 10 vetoes kept, 2 a job
    assert memory["entries_per_job"] == 12.0 + 2.0
    assert 0 < memory["bytes_per_entry"] < 2000
    evictions = document["evictions"]
    # its own entry and three plugins' 15 vetoes each, and the names new to the session (at
    # most one per evictee asked about)
    assert 1 + 3 * 15 < evictions["entries_per_preemptor"] <= 1 + 3 * 15 + 30
    assert 0 < evictions["bytes_per_entry"] < 1000
    for side in ("without", "with"):
        assert set(document["time_per_call"][side]) == {
            "jobEnqueueable_us", "predicate_us", "preemptable_us",
        }  # fmt: skip


def test_the_commands_bench_readme_shows_run(tmp_path: Path) -> None:
    """bench/README's `bench explain` lines, as written (the results go to a scratch file)."""
    import shlex

    lines = [
        line.split("#")[0]
        for line in (Path(explain.__file__).parent / "README.md").read_text().splitlines()
        if line.startswith("uv run python -m bench explain")
    ]
    assert len(lines) == 2
    for number, line in enumerate(lines):
        p = argparse.ArgumentParser()
        explain.add_arguments(p)
        words = shlex.split(line)
        argv = words[words.index("explain") + 1 :]
        out = tmp_path / f"{number}.json"
        assert explain.main(p.parse_args([*argv, "--out", str(out)])) == 0
        assert json.loads(out.read_text())["memory"]["MiB_per_1000_jobs"] > 0
