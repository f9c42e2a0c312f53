"""bench cluster's sixth scheduler, ``caldera-names`` (issue 51 item 3): Caldera in cluster mode
on the patched Volcano of protocol/volcano-identifiers (tests/e2e/scale_identifiers_test.go).
Its rows are the other schedulers' rows, it counts as snapshotless, its decisions are compared
with in-tree's like the other hosted schedulers', and ``ratios`` gives it a line of its own
against the proposal's targets. Its floor, the seventh, ``neutral-names`` (the neutral server
behind the same patched Volcano and identifiers conf), is a neutral server like the others:
caldera-names' line says how far it is from it, and the floor has a line of its own. Every
scheduler is one row of bench/cluster_schedulers.py, the same names as scale_test.go's
scaleSchedulers."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from bench import cluster, cluster_schedulers
from bench import cluster_decisions as decisions
from tests.bench.test_cluster import parse, run


def row(scheduler: str, nodes: int, group: str = "job", **over: Any) -> dict[str, Any]:
    return cluster.summarize(run(scheduler, nodes=nodes, pods=10 * nodes, group=group, **over))


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param(
            [row("intree", 1000, idleCycleP50Ms=600.0),
             row("caldera-cluster", 1000, idleCycleP50Ms=700.0),
             row("caldera-names", 1000, idleCycleP50Ms=690.0)],
            ["1000 / 10000, job, identifiers: idle cycle p50 1.15x in-tree (target <= 1.2),"
             " 0.99x cluster mode's"],
            id="job at 1,000 nodes: the idle target, beside cluster mode",
        ),
        pytest.param(
            [row("intree", 100, idleCycleP50Ms=100.0),
             row("caldera-names", 100, idleCycleP50Ms=150.0)],
            ["100 / 1000, job, identifiers: idle cycle p50 1.50x in-tree"],
            id="job at 100 nodes: below the target's size, no cluster mode run",
        ),
        pytest.param(
            [row("intree", 500, "node", idleCycleP50Ms=200.0, bindSeconds=10.0),
             row("caldera-cluster", 500, "node", idleCycleP50Ms=300.0, bindSeconds=40.0),
             row("caldera-names", 500, "node", idleCycleP50Ms=250.0, bindSeconds=15.0)],
            ["500 / 5000, node, identifiers: idle cycle p50 1.25x in-tree, 0.83x cluster mode's;"
             " time to bind 1.50x in-tree (target <= 2), 0.38x cluster mode's"],
            id="node at 500 nodes: the bind target",
        ),
        pytest.param(
            [row("intree", 100, "node", idleCycleP50Ms=100.0, bindSeconds=4.0),
             row("caldera-names", 100, "node", idleCycleP50Ms=100.0, bindSeconds=12.0)],
            ["100 / 1000, node, identifiers: idle cycle p50 1.00x in-tree;"
             " time to bind 3.00x in-tree"],
            id="node at 100 nodes: both ratios, no target",
        ),
        pytest.param(
            [row("intree", 1000, "node", idleCycleP50Ms=0.0, bindSeconds=20.0),
             row("caldera-names", 1000, "node", bindSeconds=30.0)],
            ["1000 / 10000, node, identifiers: time to bind 1.50x in-tree (target <= 2)"],
            id="no in-tree idle cycle measured: the bind ratio alone",
        ),
        pytest.param(
            [row("caldera-cluster", 1000), row("caldera-names", 1000)], [],
            id="no in-tree run: no line",
        ),
        pytest.param(
            [row("intree", 500, "evict", bindSeconds=5.0),
             row("caldera-names", 500, "evict", idleCycleP50Ms=180.0, bindSeconds=50.0)],
            ["500 / 5000, evict, identifiers: idle cycle p50 2.00x in-tree"],
            id="evict group: the idle cycle only (the bind target is the node group's)",
        ),
    ],
)  # fmt: skip
def test_the_identifiers_line(rows: list[dict[str, Any]], expected: list[str]) -> None:
    lines = [line for line in cluster.ratios(rows) if ", identifiers:" in line]
    assert lines == expected


def test_the_cluster_mode_line_is_unchanged_beside_it() -> None:
    """caldera-names adds a line; cluster mode's stays as it was (compared with the snapshot
    mode's and the neutral server's, not with the identifiers run)."""
    rows = [
        row("intree", 1000, idleCycleP50Ms=600.0),
        row("caldera-cluster", 1000, idleCycleP50Ms=690.0),
    ]
    assert cluster.ratios([*rows, row("caldera-names", 1000)])[:1] == cluster.ratios(rows)


@pytest.mark.parametrize(
    ("argv", "schedulers"),
    [
        pytest.param((), ["intree", "caldera", "caldera-cluster", "neutral", "neutral-cluster"],
                     id="not in the default plan"),
        pytest.param(("--schedulers", "intree,caldera-cluster,caldera-names"),
                     ["intree", "caldera-cluster", "caldera-names"], id="when named"),
        pytest.param(("--smoke", "--schedulers", "caldera-names"), ["caldera-names"],
                     id="in a smoke"),
        pytest.param(("--schedulers", "neutral-names,caldera-names"),
                     ["neutral-names", "caldera-names"], id="its floor, when named"),
    ],
)  # fmt: skip
def test_the_plan_runs_it_only_when_named(argv: tuple[str, ...], schedulers: list[str]) -> None:
    assert cluster.plan_of(parse(*argv))["schedulers"] == schedulers


@pytest.mark.parametrize(
    ("intree", "names", "expected"),
    [
        pytest.param(run("intree"), run("caldera-names"), [], id="identical"),
        pytest.param(run("intree"), run("caldera-names", boundPerQueue={"default": 890}),
                     ["100 nodes, job: pods per queue {'default': 890} through Caldera with"
                      " identifiers (patched Volcano), {'default': 900} in-tree"],
                     id="pods per queue"),
        pytest.param(run("intree"), run("caldera-names", boundJobs=[]),
                     ["100 nodes, job: 0 jobs bound only through Caldera with identifiers"
                      " (patched Volcano), 90 only in-tree"], id="jobs bound"),
        pytest.param(run("intree", group="evict", preemptors=10, evicted=10),
                     run("caldera-names", group="evict", preemptors=10, evicted=10,
                         protectedEvicted=1),
                     ["100 nodes, evict, caldera-names: 1 pods evicted that a"
                      " PodDisruptionBudget protects"], id="a protected pod evicted"),
    ],
)  # fmt: skip
def test_its_decisions_are_compared_with_in_trees(
    intree: dict[str, Any], names: dict[str, Any], expected: list[str]
) -> None:
    differences = decisions.compare_decisions([intree, names])
    assert len(differences) == len(expected), differences
    for line, words in zip(differences, expected, strict=True):
        assert line.startswith(words)


def test_its_row_is_a_snapshotless_hosted_row() -> None:
    """No snapshot and no snapshot-timed onSessionOpen (the roster is not one); Caldera's time
    per cycle and its RSS are shown, as for cluster mode."""
    [_, _, line] = cluster.table([row("intree", 100), row("caldera-names", 100)]).splitlines()[1:]
    cells = line.strip("| ").split(" | ")
    by_column = dict(zip((key for key, _ in cluster.COLUMNS), cells, strict=True))
    assert by_column["scheduler"] == "caldera-names"
    for key in ("extender_open_ms", "caldera_open_ms", "snapshot_MiB", "evicted"):
        assert by_column[key] == "—", key
    assert by_column["caldera_ms_per_cycle"] == "20.0"
    assert by_column["server_rss_MiB"] == "120.0"


def test_the_readme_names_the_full_measurement() -> None:
    """bench/README's command for issue 51's measurement: the job group at the three sizes, the
    node group at 100 and 500 nodes, in-tree beside both cluster modes, written beside (not
    over) bench/results/cluster.json."""
    [line] = [
        line.split("  #")[0]
        for line in cluster.README.read_text().splitlines()
        if line.startswith("uv run")
        and "python -m bench cluster" in line
        and "caldera-names" in line
        and "/cluster-names.json" in line
    ]
    argv = shlex.split(line)
    plan = cluster.plan_of(parse(*argv[argv.index("cluster") + 1 :]))
    assert plan["schedulers"] == ["intree", "caldera-cluster", "caldera-names"]
    assert plan["groups"] == ["job", "node"]
    assert [(s["nodes"], s["pods"]) for s in plan["sizes"]] == list(cluster.FULL_SIZES)
    assert plan["groupSizes"]["node"] == [
        {"nodes": 100, "pods": 1000},
        {"nodes": 500, "pods": 5000},
    ]
    assert not plan["out"].endswith("/cluster.json") and "/bench/results/" in plan["out"]


# --- neutral-names: the identifiers protocol's floor --------------------------------------------


def test_every_scheduler_is_one_row_and_the_go_harness_knows_the_same_ones() -> None:
    """One row per scheduler (bench/cluster_schedulers.py) makes the lists: the names, the
    default plan, the snapshotless ones, the floors; TestScale's scaleSchedulers has the same
    names, so that no scheduler the plan may name is unknown to the harness."""
    names = [row.name for row in cluster_schedulers.ROWS]
    assert list(cluster.SCHEDULERS) == names
    assert cluster.SCHEDULERS[-1] == "neutral-names"
    scale_test = (cluster.REPO / "tests" / "e2e" / "scale_test.go").read_text()
    block = scale_test.split("var scaleSchedulers = map[string]scaleScheduler{", 1)[1]
    go_names = re.findall(r'^\t"([a-z-]+)":', block.split("\n}", 1)[0], re.MULTILINE)
    assert sorted(go_names) == sorted(names)
    assert "neutral-names" not in cluster.DEFAULT_SCHEDULERS
    assert "neutral-names" in cluster.SNAPSHOTLESS
    assert cluster.FLOOR == {
        "caldera": "neutral", "caldera-cluster": "neutral-cluster",
        "caldera-names": "neutral-names",
    }  # fmt: skip
    styles = [repr(row.style) for row in cluster_schedulers.ROWS]
    assert len(set(styles)) == len(styles)  # each its own line in the plot


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param(
            [row("intree", 500, "node", idleCycleP50Ms=200.0, bindSeconds=10.0),
             row("neutral-names", 500, "node", idleCycleP50Ms=220.0, bindSeconds=16.0),
             row("caldera-names", 500, "node", idleCycleP50Ms=250.0, bindSeconds=24.0)],
            ["500 / 5000, node, identifiers' floor (neutral-names): idle cycle p50 1.10x in-tree;"
             " time to bind 1.60x in-tree (caldera-names' target <= 2)",
             "500 / 5000, node, identifiers: idle cycle p50 1.25x in-tree, 1.14x the floor's;"
             " time to bind 2.40x in-tree (target <= 2), 1.50x the floor's"],
            id="node at 500 nodes: the floor under the bind target, Caldera over it",
        ),
        pytest.param(
            [row("intree", 1000, idleCycleP50Ms=600.0),
             row("neutral-names", 1000, idleCycleP50Ms=660.0)],
            ["1000 / 10000, job, identifiers' floor (neutral-names): idle cycle p50 1.10x"
             " in-tree (caldera-names' target <= 1.2)"],
            id="the floor alone, job at 1,000 nodes: the idle target",
        ),
        pytest.param(
            [row("intree", 20, "node", idleCycleP50Ms=50.0, bindSeconds=2.0),
             row("neutral-names", 20, "node", idleCycleP50Ms=60.0, bindSeconds=3.0)],
            ["20 / 200, node, identifiers' floor (neutral-names): idle cycle p50 1.20x in-tree;"
             " time to bind 1.50x in-tree"],
            id="below the targets' sizes: ratios, no target",
        ),
        pytest.param([row("caldera-names", 500, "node"), row("neutral-names", 500, "node")], [],
                     id="no in-tree run: no line"),
    ],
)  # fmt: skip
def test_the_floor_line_and_caldera_names_against_its_floor(
    rows: list[dict[str, Any]], expected: list[str]
) -> None:
    lines = [line for line in cluster.ratios(rows) if "identifiers" in line]
    assert lines == expected


def test_the_floors_row_is_a_snapshotless_neutral_row() -> None:
    """No snapshot, no onSessionOpen time (the roster), no Caldera."""
    floor = row("neutral-names", 100, calderaVerbSeconds=None, snapshotBytes=0)
    [_, _, line] = cluster.table([row("intree", 100), floor]).splitlines()[1:]
    cells = line.strip("| ").split(" | ")
    by_column = dict(zip((key for key, _ in cluster.COLUMNS), cells, strict=True))
    assert by_column["scheduler"] == "neutral-names"
    for key in ("extender_open_ms", "caldera_open_ms", "snapshot_MiB", "caldera_ms_per_cycle"):
        assert by_column[key] == "—", key


def test_the_floors_decisions_are_a_control_not_compared() -> None:
    """Its decisions are not Caldera's (it answers nothing); like the other neutral servers it
    must hold what in-tree holds (the held namespace's jobs, found by their job UID)."""
    assert decisions.compare_decisions([run("intree"), run("neutral-names", boundJobs=[])]) == []
    held = {"neutralHeld": "scale-job-neutral-names-9", "neutralRejected": 30}
    assert decisions.compare_decisions([run("intree"), run("neutral-names", **held)]) == []
    [line] = decisions.compare_decisions([run("intree"), run("neutral-names", bound=1000, **held)])
    assert line.startswith(
        "100 nodes, job: the neutral server (identifiers, patched Volcano) holding"
        " scale-job-neutral-names-9 bound 1000 pods, in-tree 900"
    )
    assert decisions.protection_violations([line]) == [line]


def test_a_rerun_runs_the_hosted_schedulers_not_the_floor() -> None:
    """Decisions that differ are run again in-tree and through Caldera in the modes measured:
    never the neutral servers, whose runs judge no decision of Caldera's."""
    plan = cluster.plan_of(parse("--schedulers", "intree,neutral-names,caldera-names"))
    again = cluster.rerun_plan(plan, [(100, 1000, "node")], ["caldera-names"])
    assert again["schedulers"] == ["intree", "caldera-names"]
