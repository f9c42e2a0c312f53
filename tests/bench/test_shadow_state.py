"""bench/shadow_state.py: the cost of handing a cluster-mode session's state to the shadow."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bench import shadow_state
from bench.cluster_state import CHANGED_PODS

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_bench_readme_shows_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """bench/README's `bench.shadow_state` line as written, at a fiftieth of the size; the
    figures must be present and ordered as the deltas' sizes say."""
    [line] = [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if line.startswith("uv run python -m bench.shadow_state")
    ]
    words = shlex.split(line)
    argv = words[words.index("bench.shadow_state") + 1 :]
    argv[argv.index("--pods") + 1] = "200"
    argv[argv.index("--nodes") + 1] = "20"
    argv[argv.index("--out") + 1] = str(tmp_path / "shadow-state.json")
    assert shadow_state.main([*argv, "--repeats", "2"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "shadow-state.json").read_text()) == figures
    assert figures["pods"] == 200 and figures["nodes"] == 20
    whole = figures["whole"]
    assert 0 < whole["encode_ms"]["min"] <= whole["encode_ms"]["median"]
    assert 0 < whole["entry_encode_ms"]["median"] <= whole["entry_encode_ms"]["p99"]
    calls = whole["calls_during_whole_encode_ms"]
    assert list(calls) == ["no_encode", "encode_never_stops", "encode_stops_in_session"]
    for way in calls.values():
        assert 0 < way["p50"] <= way["p99"] <= way["max"]
    sizes = [figures[f"changed_{n}_pods"]["bytes_median"] for n in CHANGED_PODS]
    entries = [figures[f"changed_{n}_pods"]["entries_median"] for n in CHANGED_PODS]
    assert entries[0] == 0 and entries == sorted(entries) and entries[-1] > 0
    assert sizes == sorted(sizes) and sizes[-1] < whole["bytes"]
