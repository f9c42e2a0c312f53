"""bench/cluster_state.py: the store's memory and the derivation's cost are measured."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from bench import cluster_state

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_bench_readme_shows_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """bench/README's `bench.cluster_state` line as written, with ``--smoke`` (two small sizes,
    one repeat) to be quick; the figures must be present and plausible at each size."""
    [line] = [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if line.startswith("uv run python -m bench.cluster_state")
    ]
    words = shlex.split(line)
    argv = words[words.index("bench.cluster_state") + 1 :]
    argv[argv.index("--out") + 1] = str(tmp_path / "cluster-state.json")
    assert cluster_state.main([*argv, "--smoke"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "cluster-state.json").read_text()) == figures
    assert figures["cpus"] and len(figures["load_average_before_after"]) == 2
    sizes = figures["sizes"]
    assert [(s["nodes"], s["pods"]) for s in sizes] == list(cluster_state.SMOKE_SIZES)
    for size in sizes:
        check_size(size)
    # Growth: each later size against the first, the ratio of pods and nodes beside.
    [(name, grown)] = figures["growth"].items()
    (nodes, pods) = cluster_state.SMOKE_SIZES[1]
    assert name == f"{nodes}/{pods}"
    assert grown["pods"] == 3 and grown["nodes"] == 2
    assert grown["store_mib"] == round(sizes[1]["store_mib"] / sizes[0]["store_mib"], 2)
    assert grown["store_mib"] > 1.5  # more objects, more memory


def check_size(figures: dict[str, Any]) -> None:
    pods = figures["pods"]
    # The kept views hold every field a plugin may read (issue 36, item 4: the compound ones as
    # their JSON, the rest decoded), less managedFields: about three times the API's JSON
    # (Python objects are not compact), bounded at four.
    pod_json_mib = figures["api_json_kib_per_pod"] * 1000 / 1024
    node_json_mib = figures["api_json_kib_per_node"] * 1000 / 1024
    assert 0.1 < figures["store_mib_per_1000_pods"] < 4 * pod_json_mib
    assert 0.1 < figures["store_mib_per_1000_nodes"] < 4 * node_json_mib
    assert 0 < figures["freeze_and_derive_ms_min"] <= figures["freeze_and_derive_ms_median"]
    assert figures["derived_jobs"] == pods // 10 + 1
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
        assert case["rebuilt"]["tasks"] == min(changed, pods)
        assert case["rebuilt"]["nodes"] <= changed and case["rebuilt"]["jobs"] <= changed
        for figures_ms in (case["replace_ms"], case["session_ms"]):
            assert 0 <= figures_ms["min"] <= figures_ms["median"]
    # The process cluster mode would be: a fresh interpreter with the server imported, then
    # the store, the sessions and a relist on top; its peak is at least what it held last.
    rss = figures["rss"]
    assert 20 < rss["idle_mib"] < rss["after_first_session_mib"] <= rss["peak_mib"]
    assert rss["after_relist_mib"] <= rss["peak_mib"]
