"""bench/offloop.py: the hand-off price of running hooks off the event loop."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from bench import offloop

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_bench_readme_shows_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    [line] = [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if line.startswith("uv run python -m bench.offloop")
    ]
    argv = shlex.split(line)[5:]
    argv[argv.index("--out") + 1] = str(tmp_path / "offloop.json")
    assert offloop.main([*argv, "--calls", "50"]) == 0
    figures = json.loads((tmp_path / "offloop.json").read_text())
    assert figures["calls"] == 50 and figures["handed_over_us"] > figures["in_place_us"]
    out = capsys.readouterr().out
    match = re.search(r"in place ([\d.]+) µs, handed to a worker thread ([\d.]+) µs", out)
    assert match, out
    assert float(match[2]) > float(match[1])  # a hand-off is never free
