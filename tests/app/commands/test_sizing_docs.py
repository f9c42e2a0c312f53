"""The memory figures of the operator guide, the shipped manifests' comments and the README are
the sizing model's (app/commands/sizing.py) on the committed measurements
(app/commands/measured.py, itself checked against bench/results by tests/bench/test_measured.py):
issue 50 item 5, one source, no memory figure in prose that no test checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from app.cluster_state.modes import SessionStateMode
from app.commands import measured, sizing
from app.commands.cli import main
from app.config import DEFAULT_MAX_SNAPSHOT_BYTES
from tests.bench.test_quoted_figures import written_as

ROOT = Path(__file__).resolve().parents[3]
GUIDE = "docs/operator-guide.md"
SIDECAR = "deploy/kubernetes/sidecar/scheduler-sidecar.yaml"
CONFIG = "deploy/kubernetes/base/caldera-config.yaml"
COMPOSE = "deploy/caldera.yaml"
README = "README.md"
MiB = 2**20


def text(document: str) -> str:
    """The document, a YAML file's comments joined into running prose."""
    raw = (ROOT / document).read_text()
    return re.sub(r"\n#\s*", " ", raw) if document.endswith(".yaml") else raw


def sidecar_memory() -> dict[str, int]:
    """The shipped sidecar's memory request and limit, in bytes."""
    units = {"Mi": MiB, "Gi": 1024 * MiB}
    for document in yaml.safe_load_all((ROOT / SIDECAR).read_text()):
        containers = document["spec"]["template"]["spec"]["initContainers"]
        [caldera] = [c for c in containers if c["name"] == "caldera"]
        resources = caldera["resources"]
        return {
            kind: int(resources[kind]["memory"][:-2]) * units[resources[kind]["memory"][-2:]]
            for kind in ("requests", "limits")
        }
    raise AssertionError("no sidecar")


def up_to(mode: SessionStateMode, memory_bytes: float) -> int:
    """The most nodes (a multiple of 10, 10 pods a node) whose estimated peak in ``mode`` fits
    ``memory_bytes``."""
    nodes = 0
    while (
        sizing.memory(
            sizing.Cluster(nodes + 10, (nodes + 10) * 10), mode, DEFAULT_MAX_SNAPSHOT_BYTES
        ).peak_bytes
        <= memory_bytes
    ):
        nodes += 10
    return nodes


def cluster_run(nodes: int) -> measured.ClusterRun:
    [run] = [r for r in measured.CLUSTER_RUNS if r.nodes == nodes]
    return run


def store_run(nodes: int, pods: int) -> measured.StoreRun:
    [run] = [r for r in measured.STORE_RUNS if (r.nodes, r.pods) == (nodes, pods)]
    return run


def cluster_estimate(nodes: int, pods: int) -> float:
    return sizing.cluster_peak_bytes(sizing.Cluster(nodes, pods)) / MiB


def state_size(nodes: int, pods: int, key: str) -> float:
    doc = json.loads((ROOT / "bench" / "results" / "cluster-state.json").read_text())
    [size] = [s for s in doc["sizes"] if (s["nodes"], s["pods"]) == (nodes, pods)]
    value: float = size[key]
    return value


def hot_path_body_mib(workload: str) -> float:
    doc = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    [row] = [r for r in doc["workloads"] if r["workload"] == workload]
    return float(row["body_bytes"] / MiB)


def plain_snapshot_mib(nodes: int, pods: int) -> float:
    """The snapshot ``caldera volcano-config --nodes N --pods P`` estimates (the cluster run's)."""
    return sizing.Cluster(nodes, pods).body_bytes("onSessionOpen") / MiB


def shadow_limit() -> float:
    """The limit with a shadow at the shipped settings (sizing.memory_limit_bytes)."""
    from app.shadow.service import DEFAULT_MAX_QUEUED_BYTES

    return sizing.memory_limit_bytes(DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_QUEUED_BYTES)


def request() -> float:
    return sidecar_memory()["requests"]


FIGURES: list[tuple[str, str, str, Callable[[], float]]] = [
    # §2: which mode, and what the shipped sidecar holds
    ("snapshot share (§2)", GUIDE, r"takes at most (\d+)%\s+of `--schedule-period`", lambda: sizing.SNAPSHOT_SHARE * 100),
    ("shipped request", GUIDE, r"asks (\d+)Mi, which", lambda: request() / MiB),
    ("snapshot mode in the request", GUIDE, r"holds snapshot mode's estimated peak up to about ([\d,]+) nodes", lambda: up_to(SessionStateMode.SNAPSHOT, request())),
    ("snapshot mode in the request, pods", GUIDE, r"holds snapshot mode's estimated peak up to about [\d,]+ nodes /\s+([\d,]+) pods", lambda: 10 * up_to(SessionStateMode.SNAPSHOT, request())),
    ("cluster mode in the request", GUIDE, r"cluster mode's up to about ([\d,]+) nodes", lambda: up_to(SessionStateMode.CLUSTER, request())),
    ("cluster mode in the request, pods", GUIDE, r"cluster mode's up to about [\d,]+ nodes /\s+([\d,]+) pods", lambda: 10 * up_to(SessionStateMode.CLUSTER, request())),
    ("shipped limit", GUIDE, r"limits it to (\d+)Gi", lambda: sidecar_memory()["limits"] / 1024 / MiB),
    ("cluster limit factor", GUIDE, r"its limit is ([\d.]+) × that", lambda: sizing.CLUSTER_LIMIT_FACTOR),
    # §9: when to move, and cluster mode's memory
    ("snapshot mode's size (§9)", GUIDE, r"\| up to about ([\d,]+) nodes / [\d,]+ pods \(10 pods a node", sizing.snapshot_mode_up_to),
    ("snapshot mode's size, pods (§9)", GUIDE, r"\| up to about [\d,]+ nodes / ([\d,]+) pods \(10 pods a node", lambda: 10 * sizing.snapshot_mode_up_to()),
    ("snapshot share (§9)", GUIDE, r"takes at most (\d+)% of the period", lambda: sizing.SNAPSHOT_SHARE * 100),
    ("store per 1,000 pods", GUIDE, r"the store keeps about\s+([\d.]+) MiB per 1,000 pods", lambda: state_size(1000, 10000, "store_mib_per_1000_pods")),
    ("store per 1,000 nodes", GUIDE, r"MiB per 1,000 pods and ([\d.]+) MiB per 1,000 nodes \(", lambda: state_size(1000, 10000, "store_mib_per_1000_nodes")),
    ("store at 1,000 nodes", GUIDE, r"\(([\d,]+) MiB at 1,000 /\s+10,000, against", lambda: state_size(1000, 10000, "store_mib")),
    ("snapshot at 1,000 nodes (§9)", GUIDE, r"against a (\d+) MiB snapshot each cycle", lambda: cluster_run(1000).snapshot_bytes / MiB),
    ("cluster peak at 1,000 nodes (§9)", GUIDE, r"the process peaks at about\s+(\d+) MiB there", lambda: cluster_estimate(1000, 10000)),
    ("cluster peak at issue 5819's size (§9)", GUIDE, r"there and ([\d,]+) MiB at 5,000 nodes / 150,000 pods", lambda: cluster_estimate(5000, 150000)),
    # the sidecar's comments
    ("snapshot peak at 100 nodes", SIDECAR, r"the cluster run measured (\d+) MiB at 100 nodes / 1,000 pods", lambda: cluster_run(100).snapshot_peak_rss_mib),
    ("snapshot peak at 500 nodes", SIDECAR, r"(\d+) MiB at 500 / 5,000 and", lambda: cluster_run(500).snapshot_peak_rss_mib),
    ("snapshot peak at 1,000 nodes", SIDECAR, r"and (\d+) MiB at 1,000 / 10,000 \(a", lambda: cluster_run(1000).snapshot_peak_rss_mib),
    ("snapshot at 1,000 nodes (sidecar)", SIDECAR, r"\(a ([\d.]+) MiB snapshot\)", lambda: cluster_run(1000).snapshot_bytes / MiB),
    ("request (sidecar)", SIDECAR, r"Request (\d+)Mi holds that", lambda: request() / MiB),
    ("snapshot mode in the request (sidecar)", SIDECAR, r"holds that up to about ([\d,]+) nodes at 10 pods a node", lambda: up_to(SessionStateMode.SNAPSHOT, request())),
    ("limit (sidecar)", SIDECAR, r"Limit (\d+)Gi: 60 MiB", lambda: sidecar_memory()["limits"] / 1024 / MiB),
    ("cluster peak at 1,000 nodes (sidecar)", SIDECAR, r"about (\d+) MiB at 1,000 / 10,000 and", lambda: cluster_estimate(1000, 10000)),
    ("cluster peak at issue 5819's size (sidecar)", SIDECAR, r"and ([\d,]+) MiB at 5,000 / 150,000", lambda: cluster_estimate(5000, 150000)),
    # a shadow configuration: a second process and the bodies held for it
    ("shadow limit (guide)", GUIDE, r"that bound, ([\d.]+) GiB at the shipped settings", lambda: shadow_limit() / 1024 / MiB),
    ("shadow limit raised to (guide)", GUIDE, r"GiB at the shipped settings, so raise the limit to (\d+)Gi", lambda: shadow_limit() / 1024 / MiB),
    ("shadow limit (guide §4)", GUIDE, r"while a shadow runs \((\d+)Gi at the shipped", lambda: shadow_limit() / 1024 / MiB),
    ("shadow limit (sidecar)", SIDECAR, r"limit (\d+)Gi while it runs", lambda: shadow_limit() / 1024 / MiB),
    # the configuration's comment
    ("heavy snapshot at 100 nodes", CONFIG, r"about (\d+) MiB for 100 nodes and 2,000 pods", lambda: hot_path_body_mib("onSessionOpen-100n")),
    ("plain snapshot at 100 nodes (config)", CONFIG, r"([\d.]+) MiB with the cluster run's plain ones \(what `caldera volcano-config --nodes 100 --pods 2000` estimates", lambda: plain_snapshot_mib(100, 2000)),
    ("heavy snapshot at 100 nodes (compose)", COMPOSE, r"heavy objects \((\d+) MiB; the plain", lambda: hot_path_body_mib("onSessionOpen-100n")),
    ("plain snapshot at 100 nodes (compose)", COMPOSE, r"the plain ones of a real scheduler make ([\d.]+) MiB", lambda: plain_snapshot_mib(100, 2000)),
    # the README's maxSnapshotBytes row (issue 47: it said 75 MiB where volcano-config says 30.9)
    ("plain snapshot at 100 nodes (README)", README, r"about ([\d.]+) MiB for 100 nodes and 2,000 pods of the plain objects measured on a real scheduler \(what `caldera volcano-config --nodes 100 --pods 2000`", lambda: plain_snapshot_mib(100, 2000)),
    ("heavy snapshot at 100 nodes (README)", README, r"estimates\), (\d+) MiB with the hot-path benchmark's heavier ones", lambda: hot_path_body_mib("onSessionOpen-100n")),
    ("snapshot at 1,000 nodes (config)", CONFIG, r"([\d.]+) MiB for 1,000 nodes and 10,000 pods in the cluster run", lambda: cluster_run(1000).snapshot_bytes / MiB),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "document", "pattern", "value"),
    [pytest.param(*figure, id=figure[0]) for figure in FIGURES],
)
def test_a_memory_figure_is_the_sizing_model_s(
    name: str, document: str, pattern: str, value: Callable[[], float]
) -> None:
    found = re.search(pattern, text(document))
    assert found, f"{document}: {name} ({pattern}) not found"
    assert written_as(found[1], value()), (name, found[1], value())


def test_a_figure_that_moves_fails() -> None:
    """The checks are not vacuous: another request is another 'up to'."""
    assert up_to(SessionStateMode.SNAPSHOT, 2 * request()) > up_to(
        SessionStateMode.SNAPSHOT, request()
    )
    assert not written_as("300", cluster_estimate(1000, 10000) * 1.25)


def block(document: str, name: str) -> str:
    found = re.search(
        rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", (ROOT / document).read_text(), re.S
    )
    assert found, f"{document} lost its {name} block"
    return found[1].strip()


def test_the_guide_s_memory_table_is_the_tool_s() -> None:
    """docs/operator-guide.md §2's table at the default maxSnapshotBytes (``python -m
    bench.measured`` rewrites it)."""
    assert block(GUIDE, "sizing-memory") == sizing.memory_table(DEFAULT_MAX_SNAPSHOT_BYTES)


def test_the_guide_s_example_is_what_the_tool_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's ``volcano-config --nodes 1000 --pods 10000``: cluster mode and its memory,
    each line as printed (tests/shipped runs it from the wheel too)."""
    found = re.search(
        r"```sh\ncaldera volcano-config --nodes 1000 --pods 10000\n```\n\n<!-- prints -->\n```text\n(.*?)```",
        (ROOT / GUIDE).read_text(),
        re.S,
    )
    assert found, "the guide lost its sizing example"
    documented = found[1].splitlines()
    assert main(["volcano-config", "--nodes", "1000", "--pods", "10000"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert documented == [line for line in printed if line.startswith(("# mode: ", "# memory "))]
    assert documented[0].startswith("# mode: cluster: ")


def test_the_readme_names_the_modes_and_when() -> None:
    readme = (ROOT / "README.md").read_text()
    intro = readme[: readme.index("## The two commands")]
    for mode in SessionStateMode:
        assert f"`{mode}`" in intro, mode
    assert "caldera volcano-config --nodes N --pods P" in intro
    assert "operator guide's §2 and §9" in intro


def test_the_hot_path_table_s_limits_hold_their_snapshot_limits() -> None:
    """§2's table of the hot-path runs pairs a ``maxSnapshotBytes`` with a memory limit: each
    limit holds 60 MiB + 1.5 x its snapshot limit (the default's is the shipped 1Gi)."""
    guide = (ROOT / GUIDE).read_text()
    pairs = re.findall(r"(\d+) MiB\)? / (\d+)([MG])i", guide)
    default = re.findall(r"default(?: \(512 MiB\))? / (\d+)Gi", guide)
    assert len(pairs) >= 2 and default
    for snapshot, limit, unit in pairs:
        size = int(limit) * (1024 * MiB if unit == "G" else MiB)
        assert sizing.memory_limit_bytes(int(snapshot) * MiB) <= size, (snapshot, limit)
    for limit in default:
        assert sizing.memory_limit_bytes(DEFAULT_MAX_SNAPSHOT_BYTES) <= int(limit) * 1024 * MiB
