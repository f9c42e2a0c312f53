"""bench/shapes.py: the object sizes bench/README quotes are what bench/workloads.py builds."""

from __future__ import annotations

import json
from pathlib import Path

from bench import shapes
from bench.__main__ import main


def test_the_committed_shapes_are_what_the_workloads_build_today() -> None:
    # The bodies are seeded: a change to bench/workloads.py that changes a size must come with
    # `python -m bench shapes` and `python -m bench report`.
    assert json.loads(shapes.RESULTS.read_text()) == shapes.measure()


def test_the_command_writes_the_measured_sizes(tmp_path: Path) -> None:
    out = tmp_path / "shapes.json"
    assert main(["shapes", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document == shapes.measure()
    # a running pod carries its status and node, a pending one not: the running one is larger
    assert document["pod_KiB"]["running"] > document["pod_KiB"]["pending"] > 0
    assert document["node_images"] == 50
    assert document["jobinfo_copies_of_a_task"] == 4
