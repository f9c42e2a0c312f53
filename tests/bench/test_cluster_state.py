"""bench/cluster_state.py: the store's memory and the derivation's cost are measured."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bench import cluster_state

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_bench_readme_shows_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """bench/README's `bench.cluster_state` line as written, at a fiftieth of the size to be
    quick; the figures must be present and plausible."""
    [line] = [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if line.startswith("uv run python -m bench.cluster_state")
    ]
    words = shlex.split(line)
    argv = words[words.index("bench.cluster_state") + 1 :]
    argv[argv.index("--pods") + 1] = "200"
    argv[argv.index("--nodes") + 1] = "20"
    argv[argv.index("--out") + 1] = str(tmp_path / "cluster-state.json")
    assert cluster_state.main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "cluster-state.json").read_text()) == figures
    assert figures["cpus"] and len(figures["load_average_before_after"]) == 2
    assert figures["pods"] == 200 and figures["nodes"] == 20
    # The kept views hold every field a plugin may read (issue 36, item 4: the compound ones as
    # their JSON, the rest decoded), less managedFields: about three times the API's JSON
    # (Python objects are not compact), bounded at four.
    pod_json_mib = figures["api_json_kib_per_pod"] * 1000 / 1024
    node_json_mib = figures["api_json_kib_per_node"] * 1000 / 1024
    assert 0.1 < figures["store_mib_per_1000_pods"] < 4 * pod_json_mib
    assert 0.1 < figures["store_mib_per_1000_nodes"] < 4 * node_json_mib
    assert 0 < figures["freeze_and_derive_ms_min"] <= figures["freeze_and_derive_ms_median"]
    assert figures["derived_jobs"] == 21
    # The incremental derivation: a first session builds everything; later ones only what the
    # changed pods touch (each pod: its task, its node, its job).
    incremental = figures["incremental"]
    assert 0 < incremental["first_session_ms"]["min"] <= incremental["first_session_ms"]["median"]
    for changed in cluster_state.CHANGED_PODS:
        rebuilt = incremental[f"changed_{changed}_pods_rebuilt"]
        assert rebuilt["tasks"] == changed
        assert rebuilt["nodes"] <= changed and rebuilt["jobs"] <= changed
        figures_ms = incremental[f"changed_{changed}_pods_ms"]
        assert 0 <= figures_ms["min"] <= figures_ms["median"]
    # Relists: only the pods at a new version are decoded and rebuilt (at most, when two of
    # the spread indexes meet, fewer); an unchanged relist rebuilds nothing.
    relist = figures["relist"]
    empty = relist["list_into_empty_store_ms"]
    assert 0 < empty["min"] <= empty["median"]
    for changed in cluster_state.RELIST_CHANGED:
        case = relist[f"relist_{changed}_changed"]
        assert case["rebuilt"]["tasks"] == min(changed, 200)
        assert case["rebuilt"]["nodes"] <= changed and case["rebuilt"]["jobs"] <= changed
        for figures_ms in (case["replace_ms"], case["session_ms"]):
            assert 0 <= figures_ms["min"] <= figures_ms["median"]
