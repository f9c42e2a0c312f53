"""bench/cluster.py's side of the cluster-scale benchmark: the plan it hands TestScale, the
figures it reads back, the decision comparison (bench/cluster_decisions.py) and the targets it
reports. (The run itself is
``python -m bench cluster --smoke`` in .ci/run.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from bench import cluster
from bench import cluster_decisions as decisions


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    cluster.add_arguments(p)
    return p.parse_args(list(argv))


def run(scheduler: str, **over: Any) -> dict[str, Any]:
    """One run as TestScale writes it (tests/e2e/scale_test.go scaleRun's JSON)."""
    base: dict[str, Any] = {
        "nodes": 100, "pods": 1000, "group": "job", "scheduler": scheduler, "bound": 900,
        "completed": True, "bindSeconds": 4.5, "podsPerSecond": 200.0, "cycles": 10,
        "cycleMs": [100.0] * 10, "cycleP50Ms": 100.0, "cycleP99Ms": 180.0, "cycleMaxMs": 180.0,
        "idleCycleP50Ms": 90.0, "idleCycleP99Ms": 120.0,
        "overruns": 0, "extenderOpenMs": 60.0, "extenderOpenCount": 10,
        "allocateActionMs": 20.0, "schedulerPeakRssMiB": 300.0, "serverPeakRssMiB": 120.0,
        "serverCpuSeconds": 1.5, "calderaVerbSeconds": {"onSessionOpen": 0.15, "jobEnqueueable": 0.05},
        "calderaVerbCalls": {"onSessionOpen": 10.0}, "boundPerQueue": {"default": 900},
        "boundJobs": [f"scale-{i % 10}/job-{i:05d}" for i in range(90)], "snapshotBytes": 2**21,
    }  # fmt: skip
    base.update(over)
    return base


@pytest.mark.parametrize(
    ("argv", "sizes", "groups", "out"),
    [
        pytest.param((), [(100, 1000), (500, 5000), (1000, 10000)], ["job", "node", "evict"],
                     "cluster.json", id="full"),
        pytest.param(("--smoke",), [(20, 200)], ["job", "node", "evict"], "cluster-smoke.json",
                     id="smoke"),
        pytest.param(("--sizes", "50x500", "--groups", "node"), [(50, 500)], ["node"],
                     "cluster.json", id="chosen"),
    ],
)  # fmt: skip
def test_the_plan(
    argv: tuple[str, ...], sizes: list[tuple[int, int]], groups: list[str], out: str
) -> None:
    plan = cluster.plan_of(parse(*argv))
    assert [(s["nodes"], s["pods"]) for s in plan["sizes"]] == sizes
    assert plan["groups"] == groups
    assert plan["schedulers"] == [
        "intree", "caldera", "caldera-cluster", "neutral", "neutral-cluster"
    ]  # fmt: skip
    assert Path(plan["out"]).name == out
    assert plan["timeboxSeconds"] == (120.0 if "--smoke" in argv else 600.0)
    assert plan["idleCycles"] == (10 if "--smoke" in argv else 20)
    smallest = [{"nodes": min(sizes)[0], "pods": min(sizes)[1]}]
    assert plan["groupSizes"] == {"node": smallest, "evict": smallest}


@pytest.mark.parametrize(
    ("argv", "capture"),
    [
        pytest.param((), None, id="no capture"),
        pytest.param(("--capture", "bodies"), "bodies", id="capture, made absolute"),
    ],
)
def test_the_plan_names_the_capture_directory(
    argv: tuple[str, ...], capture: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TestScale runs in tests/e2e: the directory its neutral server writes to is absolute."""
    monkeypatch.chdir(tmp_path)
    plan = cluster.plan_of(parse("--sizes", "100x1000", *argv))
    assert plan.get("capture") == (str(tmp_path / capture) if capture else None)


@pytest.mark.parametrize("text", ["100", "100x", "x1000", "100x1005", "ax10", "100x1000,5"])
def test_a_size_is_nodes_x_pods_in_jobs_of_ten(text: str) -> None:
    with pytest.raises(SystemExit):
        parse("--sizes", text)


@pytest.mark.parametrize("text", ["evicts", "job,bogus", ""])
def test_unknown_groups_are_refused(text: str) -> None:
    with pytest.raises(SystemExit):
        parse("--groups", text)


def test_summary_figures() -> None:
    row = cluster.summarize(run("caldera"))
    assert row["size"] == "100 / 1000"
    assert row["caldera_ms_per_cycle"] == 20.0  # (0.15 + 0.05) s over 10 cycles
    assert row["caldera_open_ms"] == 15.0  # 0.15 s over 10 onSessionOpen calls
    assert row["snapshot_MiB"] == 2.0
    assert row["cycle_p50_ms"] == 100.0 and row["cycle_p99_ms"] == 180.0


def test_decisions_identical_and_different() -> None:
    assert decisions.compare_decisions([run("intree"), run("caldera"), run("neutral")]) == []
    fewer = run("caldera", bound=890, boundPerQueue={"default": 890})
    fewer["boundJobs"] = fewer["boundJobs"][:-1]
    differences = decisions.compare_decisions([run("intree"), fewer])
    assert len(differences) == 2
    assert "pods per queue" in differences[0]
    assert "0 jobs bound only through Caldera, 1 only in-tree" in differences[1]
    # The neutral server answers nothing: its decisions are not Caldera's and are not compared.
    assert decisions.compare_decisions([run("intree"), run("neutral", boundJobs=[])]) == []


def test_cluster_mode_is_compared_with_in_tree_like_the_snapshot_mode() -> None:
    """Caldera in cluster mode (sessionState: cluster, issue 36) is a hosted run of its own:
    its decisions must equal in-tree's, and a difference names the mode."""
    assert decisions.compare_decisions([run("intree"), run("caldera-cluster")]) == []
    fewer = run("caldera-cluster", boundPerQueue={"default": 890})
    [line] = decisions.compare_decisions([run("intree"), run("caldera"), fewer])
    assert "pods per queue {'default': 890} through Caldera in cluster mode" in line
    evict = {"group": "evict", "bound": 100, "preemptors": 100, "evicted": 100}
    [line] = decisions.compare_decisions(
        [run("intree", **evict), run("caldera-cluster", **{**evict, "protectedEvicted": 2})]
    )
    assert "caldera-cluster: 2 pods evicted that a PodDisruptionBudget protects" in line


def test_cluster_modes_target_is_its_idle_cycle_against_in_tree_from_1000_nodes() -> None:
    def rows(nodes: int) -> list[dict[str, Any]]:
        size = {"nodes": nodes, "pods": 10 * nodes}
        return [
            cluster.summarize(run("intree", idleCycleP50Ms=600.0, **size)),
            cluster.summarize(run("caldera", idleCycleP50Ms=2400.0, **size)),
            cluster.summarize(run("caldera-cluster", idleCycleP50Ms=690.0, **size)),
        ]

    [_, line] = cluster.ratios(rows(1000))
    assert line == (
        "1000 / 10000, job, cluster mode: idle cycle p50 1.15x in-tree (target <= 1.3),"
        " 0.29x the snapshot mode's"
    )
    [_, line] = cluster.ratios(rows(100))
    assert "1.15x in-tree," in line and "target" not in line
    cells = cluster.table(rows(100)).splitlines()[-1].split(" | ")
    # no snapshot, no onSessionOpen in cluster mode (and no evictions in the job group);
    # Caldera's time per cycle is shown
    assert cells[2] == "caldera-cluster" and cells.count("—") == 4


def test_cluster_mode_beside_the_neutral_server_on_its_conf() -> None:
    """neutral-cluster: the neutral server behind cluster mode's conf (no snapshot) is cluster
    mode's floor: the ratio line says how far cluster mode is from it, and how far the floor
    itself is from in-tree; its row has no snapshot, no onSessionOpen and no Caldera."""
    size = {"nodes": 1000, "pods": 10000}
    rows = [
        cluster.summarize(run("intree", idleCycleP50Ms=200.0, **size)),
        cluster.summarize(run("caldera-cluster", idleCycleP50Ms=400.0, **size)),
        cluster.summarize(
            run("neutral-cluster", idleCycleP50Ms=380.0, calderaVerbSeconds=None, snapshotBytes=0,
                **size)
        ),
    ]  # fmt: skip
    [line] = cluster.ratios(rows)
    assert line == (
        "1000 / 10000, job, cluster mode: idle cycle p50 2.00x in-tree (target <= 1.3),"
        " 1.05x the neutral server's on cluster mode's conf (1.90x in-tree: the protocol's"
        " floor without a snapshot)"
    )
    cells = cluster.table(rows).splitlines()[-1].split(" | ")
    assert cells[2] == "neutral-cluster" and cells.count("—") == 5


def test_evict_decisions_compare_counts_and_never_a_protected_victim() -> None:
    def evict(scheduler: str, **over: Any) -> dict[str, Any]:
        return run(
            scheduler, **{"group": "evict", "bound": 100, "preemptors": 100, "evicted": 100, **over}
        )

    assert decisions.compare_decisions([evict("intree"), evict("caldera")]) == []
    # which pods were evicted is Volcano's random choice among equals: not compared
    assert decisions.compare_decisions([evict("intree"), evict("caldera", boundJobs=[])]) == []
    differences = decisions.compare_decisions(
        [evict("intree"), evict("caldera", evicted=103, protectedEvicted=3)]
    )
    assert "3 pods evicted that a PodDisruptionBudget protects" in differences[0]
    assert "evicted 103 through Caldera, 100 in-tree" in differences[1]
    protected_in_tree = decisions.compare_decisions([evict("intree", protectedEvicted=1)])
    assert protected_in_tree and "intree" in protected_in_tree[0]
    assert decisions.compare_decisions([evict("neutral", protectedEvicted=27)]) == []
    row = cluster.summarize(evict("caldera", protectedEvicted=2))
    assert "100 of 100 preemptors" in cluster.table([row])
    assert "| 100 (2) |" in cluster.table([row])


def test_targets_and_table() -> None:
    rows = [
        cluster.summarize(run("intree", cycleP50Ms=80.0)),
        cluster.summarize(run("caldera", cycleP50Ms=105.0)),
        cluster.summarize(run("neutral", cycleP50Ms=100.0)),
    ]
    [line] = cluster.ratios(rows)
    assert "cycle p50 1.05x the neutral server's (target <= 1.1)" in line
    assert "1.31x in-tree" in line
    assert "Caldera's onSessionOpen 0.25 of the extender's OnSessionOpen" in line
    text = cluster.table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + 3
    intree = lines[2].split(" | ")
    assert intree[2] == "intree" and "—" in intree  # no extender figures in-tree
    timed_out = cluster.table([cluster.summarize(run("caldera", completed=False))])
    assert "900 (time box)" in timed_out


def test_the_readme_block_is_replaced_not_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# bench\n\n{cluster.BEGIN}\nold\n{cluster.END}\n\ntail\n")
    monkeypatch.setattr(cluster, "README", readme)
    cluster.write_readme("new table")
    cluster.write_readme("newer table")
    text = readme.read_text()
    assert text.count(cluster.BEGIN) == 1
    assert "newer table" in text and "old" not in text and "new table\n" not in text
    assert text.endswith("tail\n")


def test_the_commands_bench_readme_shows_parse() -> None:
    """bench/README's `bench cluster` lines use options that exist (the smoke one runs in CI)."""
    import shlex

    lines = [
        line.split("#")[0]
        for line in cluster.README.read_text().splitlines()
        if "python -m bench cluster" in line and line.startswith("uv run")
    ]
    assert len(lines) >= 3
    for line in lines:
        argv = shlex.split(line)
        plan = cluster.plan_of(parse(*argv[argv.index("cluster") + 1 :]))
        assert plan["sizes"], line


def test_the_largest_size_inside_the_period() -> None:
    rows = [
        cluster.summarize(run("caldera", nodes=n, pods=10 * n, idleCycleP50Ms=ms))
        for n, ms in ((100, 180.0), (500, 1065.0), (1000, 2494.0))
    ] + [cluster.summarize(run("intree", nodes=1000, pods=10000, idleCycleP50Ms=604.0))]
    lines = cluster.inside_period(rows)
    assert (
        "job, caldera: up to 100 / 1000 (measured: 100 / 1000, 500 / 5000, 1000 / 10000)" in lines
    )
    assert "job, intree: up to 1000 / 10000 (measured: 1000 / 10000)" in lines
    slow = [cluster.summarize(run("neutral", idleCycleP50Ms=1500.0))]
    assert cluster.inside_period(slow) == [
        "job, neutral: none of the sizes measured (measured: 100 / 1000)"
    ]


def test_report_renders_the_published_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"{cluster.BEGIN}\n{cluster.END}\n")
    monkeypatch.setattr(cluster, "README", readme)
    monkeypatch.setattr(cluster, "RESULTS", tmp_path)
    plotted: list[tuple[int, Path]] = []
    # matplotlib is in the bench group only (python -m bench cluster draws with it)
    monkeypatch.setattr(cluster, "plot", lambda rows, path: plotted.append((len(rows), path)))
    published = cluster.REPO / "bench" / "results" / "cluster.json"
    assert cluster.main(parse("--report", "--out", str(published))) == 0
    text = readme.read_text()
    assert "| 1000 / 10000 | job | caldera |" in text and "results/cluster.png" in text
    runs = json.loads(published.read_text())["runs"]
    cases = {(r["nodes"], r["pods"], r["group"], r["scheduler"]) for r in runs}
    assert len(cases) < len(runs)  # the published run is repeated (--repeat 3)
    assert plotted == [(len(cases), tmp_path / "cluster.png")]  # one row a case, not a run
    assert "Largest size whose idle cycle p50" in text
    # the decision line, between the markers `python -m bench report --check` holds it by
    line = decisions.decisions_block(json.loads(published.read_text()))
    assert f"{decisions.DECISIONS_BEGIN}\n{line}\n{decisions.DECISIONS_END}\n{cluster.END}" in text


def evict_run(scheduler: str, **over: Any) -> dict[str, Any]:
    """An evict group run; the neutral server's evicts protected pods, as its control must."""
    protected = {"protectedEvicted": 5} if scheduler in decisions.NEUTRAL else {}
    return run(
        scheduler,
        **{"nodes": 20, "pods": 200, "group": "evict", "bound": 20, "preemptors": 20,
           "evicted": 20, **protected, **over},
    )  # fmt: skip


CLEAN = [evict_run("intree"), evict_run("caldera")]
TAIL = [evict_run("intree", bound=19, evicted=19), evict_run("caldera")]


@pytest.mark.parametrize(
    ("reruns", "exit_code", "said"),
    [
        pytest.param([CLEAN, CLEAN], 0, "rerun 1 decided identically, rerun 2 decided identically",
                     id="volcano's-tail-not-repeated-twice"),
        pytest.param([CLEAN, TAIL], 1, "rerun 1 decided identically, rerun 2 differed again",
                     id="one-clean-rerun-forgives-nothing"),
        pytest.param([TAIL], 1, "rerun 1 differed again", id="repeated-at-once-no-second-rerun"),
        pytest.param([[evict_run("intree")], CLEAN], 1,
                     "rerun 1 did not measure it, rerun 2 decided identically",
                     id="rerun-incomplete"),
        pytest.param([[evict_run("intree"), evict_run("caldera", protectedEvicted=1)]], 1,
                     "rerun 1 differed again", id="protection-violated-in-a-rerun"),
    ],
)  # fmt: skip
def test_a_decision_difference_counts_unless_two_reruns_are_clean(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reruns: list[list[dict[str, Any]]],
    exit_code: int,
    said: str,
) -> None:
    """In-tree Volcano once left its last preemptor pending (19 of 20 bound) where every other
    run bound all 20: the differing case is run again, and it is forgiven only when two reruns
    both decide identically (issue 37: one clean rerun forgave a bug that shows half the time
    three times in four)."""
    first = [
        run("intree"), run("caldera"), run("neutral"),
        evict_run("intree", bound=19, evicted=19), evict_run("caldera"), evict_run("neutral"),
    ]  # fmt: skip
    plans: list[dict[str, Any]] = []

    def scale_test(plan: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        plans.append(plan)
        return 0, first if len(plans) == 1 else reruns[len(plans) - 2]

    monkeypatch.setattr(cluster, "run_scale_test", scale_test)
    out = tmp_path / "cluster-smoke.json"
    assert cluster.main(parse("--smoke", "--out", str(out))) == exit_code
    assert len(plans) == 1 + len(reruns)
    again = plans[1]
    assert again["sizes"] == [{"nodes": 20, "pods": 200}] and again["groups"] == ["evict"]
    assert again["schedulers"] == ["intree", "caldera"]
    assert again["groupSizes"] == {"evict": [{"nodes": 20, "pods": 200}]}
    assert [Path(p["out"]).name for p in plans[1:]] == [
        "cluster-smoke-rerun.json", "cluster-smoke-rerun2.json"
    ][: len(reruns)]  # fmt: skip
    printed = capsys.readouterr().out
    assert "first runs differed (20 nodes, evict: bound 20 through Caldera, 19 in-tree; " in printed
    assert said in printed
    assert ("DECISIONS DIFFER" in printed) == bool(exit_code)
    document = json.loads(out.read_text())
    assert [r["cases"] for r in document["reruns"]] == [[[20, 200, "evict"]]] * len(reruns)
    assert [r["runs"] for r in document["reruns"]] == reruns  # every run is kept
    assert bool(document["decision_differences"]) == bool(exit_code)
    # --report reaches the same verdict from the document alone
    capsys.readouterr()
    assert cluster.main(parse("--smoke", "--report", "--out", str(out))) == 0
    assert said in capsys.readouterr().out


def test_a_protection_violation_is_never_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in issue 37: protectedEvicted=3 through Caldera, a clean rerun, differences []."""
    first = [evict_run("intree"), evict_run("caldera", protectedEvicted=3), evict_run("neutral")]
    plans: list[dict[str, Any]] = []

    def scale_test(plan: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        plans.append(plan)
        return 0, first if len(plans) == 1 else CLEAN

    monkeypatch.setattr(cluster, "run_scale_test", scale_test)
    out = tmp_path / "cluster-smoke.json"
    assert cluster.main(parse("--smoke", "--out", str(out))) == 1
    assert len(plans) == 1
    document = json.loads(out.read_text())
    assert document["decision_differences"] == [
        "20 nodes, evict, caldera: 3 pods evicted that a PodDisruptionBudget protects"
    ]


def test_identical_decisions_run_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans: list[dict[str, Any]] = []
    runs = [evict_run("intree"), evict_run("caldera"), evict_run("neutral", protectedEvicted=7)]
    monkeypatch.setattr(cluster, "run_scale_test", lambda plan: (plans.append(plan), (0, runs))[1])
    assert cluster.main(parse("--smoke", "--out", str(tmp_path / "c.json"))) == 0
    assert len(plans) == 1


# --- the node group's placement facts, the mutant smoke, the decision line ---------------------

PLACED = {"podsOutsideNodeGroups": 0, "spreadWithinNodeGroup": 0, "affinityJobsSplit": 0}
RANDOM = {"podsOutsideNodeGroups": 147, "spreadWithinNodeGroup": 9, "affinityJobsSplit": 10}


def node_run(
    scheduler: str, placement: dict[str, int] | None = None, **over: Any
) -> dict[str, Any]:
    placed = {**(RANDOM if scheduler == "neutral" else PLACED), **(placement or {})}
    return run(
        scheduler,
        **{"nodes": 20, "pods": 200, "group": "node", "bound": 200, "placement": placed, **over},
    )


def unplaced(node_run: dict[str, Any]) -> dict[str, Any]:
    """A node group run as TestScale wrote it before the placement facts."""
    return {key: value for key, value in node_run.items() if key != "placement"}


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        pytest.param([node_run("intree"), node_run("caldera"), node_run("neutral")], [],
                     id="caldera-equals-in-tree-neutral-differs"),
        pytest.param([node_run("intree"), node_run("caldera", {"podsOutsideNodeGroups": 52})],
                     ["20 nodes, node: pods outside their queue's node groups (nodegroup) 52"
                      " through Caldera, 0 in-tree"], id="nodegroup-broken"),
        pytest.param([node_run("intree"), node_run("caldera", {"spreadWithinNodeGroup": 4})],
                     ["(resource-strategy-fit) 4 through Caldera, 0 in-tree"],
                     id="resource-strategy-fit-broken"),
        pytest.param([node_run("intree"), node_run("caldera", {"affinityJobsSplit": 3})],
                     ["task-topology affinity jobs split over nodes (task-topology) 3 through"
                      " Caldera, 0 in-tree"], id="task-topology-broken"),
        pytest.param([node_run("intree"), node_run("caldera"),
                      node_run("neutral", {"affinityJobsSplit": 0})],
                     ["split over nodes (task-topology) 0 in-tree and through the neutral server"
                      " alike: no control"], id="no-control"),
        pytest.param([unplaced(node_run("intree")), node_run("caldera"),
                      unplaced(node_run("neutral"))], [],
                     id="a-run-before-the-facts-compares-none"),
    ],
)  # fmt: skip
def test_placement_facts(runs: list[dict[str, Any]], expected: list[str]) -> None:
    differences = decisions.compare_decisions(runs)
    assert len(differences) == len(expected), differences
    for line, words in zip(differences, expected, strict=True):
        assert words in line


def fake_scale_test(
    monkeypatch: pytest.MonkeyPatch, results: list[list[dict[str, Any]]], code: int = 0
) -> list[dict[str, Any]]:
    """TestScale replaced: each call answers the next list of runs; the plans it got."""
    plans: list[dict[str, Any]] = []

    def scale_test(plan: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        plans.append(plan)
        return code, results[min(len(plans), len(results)) - 1]

    monkeypatch.setattr(cluster, "run_scale_test", scale_test)
    return plans


def test_a_fact_without_its_control_is_never_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = [node_run("intree"), node_run("caldera"), node_run("neutral", PLACED)]
    plans = fake_scale_test(monkeypatch, [same])
    out = tmp_path / "c.json"
    assert cluster.main(parse("--smoke", "--groups", "node", "--out", str(out))) == 1
    assert len(plans) == 1
    assert len(json.loads(out.read_text())["decision_differences"]) == 3


@pytest.mark.parametrize(
    ("argv", "groups", "mutants", "out"),
    [
        (("--mutant", "nodegroup"), ["node"], ["nodegroup"], "cluster-smoke-mutant-nodegroup.json"),
        (("--mutant", "task-topology", "--groups", "job"), ["node"], ["task-topology"],
         "cluster-smoke-mutant-task-topology.json"),
        (("--mutant", "pdb"), ["evict"], ["pdb"], "cluster-smoke-mutant-pdb.json"),
        (("--mutant", "pdb,nodegroup,task-topology"), ["node", "evict"],
         ["pdb", "nodegroup", "task-topology"], "cluster-smoke-mutants.json"),
        (("--mutant", "nodegroup,resource-strategy-fit,nodegroup"), ["node"],
         ["nodegroup", "resource-strategy-fit"], "cluster-smoke-mutants.json"),
    ],
)  # fmt: skip
def test_the_mutant_plan_runs_the_groups_hosting_the_plugins(
    argv: tuple[str, ...], groups: list[str], mutants: list[str], out: str
) -> None:
    plan = cluster.plan_of(parse("--smoke", *argv))
    assert plan["groups"] == groups
    assert plan["schedulers"] == ["intree", "caldera"]
    assert plan["mutants"] == mutants
    assert Path(plan["out"]).name == out
    assert plan["sizes"] == [{"nodes": 20, "pods": 200}]
    assert "mutants" not in cluster.plan_of(parse("--smoke"))


@pytest.mark.parametrize(
    "argv",
    [("--mutant", "nodegroup"), ("--smoke", "--mutant", "gang"),
     ("--smoke", "--mutant", "nodegroup,gang"), ("--smoke", "--mutant", ",")],
)  # fmt: skip
def test_a_mutant_needs_the_smoke_and_a_hosted_plugin(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit):
        cluster.plan_of(parse(*argv))


def mutant_run(mutant: str, placement: dict[str, int] | None = None, **over: Any) -> dict[str, Any]:
    """A run of Caldera serving its configuration without ``mutant`` (TestScale's JSON)."""
    if mutant == "pdb":
        return evict_run("caldera", mutant=mutant, **over)
    return node_run("caldera", placement, mutant=mutant, **over)


OUTSIDE = {"podsOutsideNodeGroups": 61}
SPREAD = {"spreadWithinNodeGroup": 5}
SPLIT = {"affinityJobsSplit": 2}
EVERY = ["nodegroup", "resource-strategy-fit", "task-topology", "pdb"]
ALL_CAUGHT = [
    node_run("intree"), mutant_run("nodegroup", OUTSIDE),
    mutant_run("resource-strategy-fit", SPREAD), mutant_run("task-topology", SPLIT),
    evict_run("intree"), mutant_run("pdb", protectedEvicted=4),
]  # fmt: skip


def swapped(runs: list[dict[str, Any]], mutant: str, run: dict[str, Any]) -> list[dict[str, Any]]:
    return [run if r.get("mutant") == mutant else r for r in runs]


MUTANT_CASES = [
    pytest.param(["nodegroup"], [node_run("intree"), mutant_run("nodegroup", OUTSIDE)], 0, [],
                 ["nodegroup) is caught: 20 nodes, node: pods outside their queue's node groups"],
                 id="one-caught-on-its-own-fact"),
    pytest.param(EVERY, ALL_CAUGHT, 0, [],
                 ["nodegroup) is caught: 20 nodes, node: pods outside",
                  "resource-strategy-fit) is caught: 20 nodes, node: largest difference",
                  "task-topology) is caught: 20 nodes, node: task-topology affinity jobs split",
                  "pdb) is caught: 20 nodes, evict, caldera: 4 pods evicted that a"
                  " PodDisruptionBudget protects", "4 of 4 mutants caught"],
                 id="every-mutant-caught-each-against-the-one-in-tree-run-of-its-group"),
    pytest.param(EVERY, swapped(ALL_CAUGHT, "task-topology", mutant_run("task-topology")), 0,
                 ["task-topology"],
                 ["task-topology) is NOT caught: the node group's smoke did not fail on"
                  " 'task-topology affinity jobs split over nodes'", "3 of 4 mutants caught"],
                 id="one-not-caught-fails-the-smoke"),
    pytest.param(["nodegroup"], [node_run("intree"), mutant_run("nodegroup", SPLIT)], 0,
                 ["nodegroup"],
                 ["did not fail on \"pods outside their queue's node groups\""],
                 id="another-plugins-fact-only"),
    pytest.param(EVERY, swapped(ALL_CAUGHT, "pdb",
                                mutant_run("pdb", protectedEvicted=4, error="vc-scheduler exited")),
                 0, ["pdb"], ["pdb) is NOT caught: the evict group's smoke erred: vc-scheduler exited"],
                 id="a-run-erred"),
    pytest.param(EVERY, [r for r in ALL_CAUGHT if r.get("mutant") != "resource-strategy-fit"], 0,
                 ["resource-strategy-fit"],
                 ["resource-strategy-fit) is NOT caught: not run: the node group's smoke has no"
                  " run of Caldera without resource-strategy-fit"],
                 id="a-mutant-not-run"),
    pytest.param(["pdb"], [evict_run("intree", protectedEvicted=2), mutant_run("pdb")], 0,
                 ["pdb"], ["pdb) is NOT caught: the evict group's smoke did not fail on"],
                 id="in-tree's-own-violation-is-not-the-mutant's"),
    pytest.param(["pdb"], [mutant_run("pdb", protectedEvicted=4)], 0, ["pdb"],
                 ["not run: the evict group's smoke has no run in-tree"], id="no-in-tree-run"),
    pytest.param(EVERY, ALL_CAUGHT, 1, EVERY, ["erred: TestScale exited 1", "0 of 4 mutants"],
                 id="the-test-failed"),
]  # fmt: skip


@pytest.mark.parametrize(("mutants", "runs", "code", "missed", "said"), MUTANT_CASES)
def test_the_mutant_smoke_succeeds_only_when_each_is_caught_on_its_plugins_own_fact(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mutants: list[str],
    runs: list[dict[str, Any]],
    code: int,
    missed: list[str],
    said: list[str],
) -> None:
    """One TestScale run: per group one in-tree run shared by the mutants of the group, then a
    run per mutant; no rerun (a mutant's difference is what the run is for)."""
    plans = fake_scale_test(monkeypatch, [runs], code)
    out = tmp_path / "mutants.json"
    argv = ("--smoke", "--mutant", ",".join(mutants), "--out", str(out))
    assert cluster.main(parse(*argv)) == (1 if missed else 0)
    assert len(plans) == 1 and plans[0]["mutants"] == mutants
    captured = capsys.readouterr()
    for words in said:
        assert words in captured.out + captured.err
    for mutant in missed:  # a mutant not caught is said on stderr
        assert f"(Caldera without {mutant}) is NOT caught" in captured.err
    document = json.loads(out.read_text())
    assert [m for m, v in document["mutants"].items() if not v["caught"]] == missed
    assert document["runs"] == runs and document["testExitCode"] == code
    # --report reaches the same verdicts from the document alone
    assert cluster.main(parse("--smoke", "--report", *argv[1:])) == 0
    again = capsys.readouterr()
    for words in said:
        assert words in again.out + again.err


def test_a_mutant_run_is_named_in_the_table() -> None:
    row = cluster.summarize(mutant_run("task-topology", SPLIT))
    assert row["scheduler"] == "caldera without task-topology"
    assert "| caldera without task-topology |" in cluster.table([row])


def test_the_decision_line_says_what_was_compared() -> None:
    runs = [
        node_run("intree"), node_run("caldera"), node_run("neutral"),
        evict_run("intree"), evict_run("caldera"), evict_run("neutral", protectedEvicted=7),
    ]  # fmt: skip
    document = {"runs": runs}
    text = decisions.decisions_block(document)
    assert text.startswith("Decisions: identical to in-tree in everything compared. Compared: ")
    assert (
        "node (20 / 200): jobs bound, pods per queue, placement: pods outside their queue's node"
        " groups (nodegroup) in-tree 0, Caldera 0, neutral 147, " in text
    )
    assert "(task-topology) in-tree 0, Caldera 0, neutral 10" in text
    assert "evict (20 / 200): preemptors bound, pods evicted, no PDB-protected pod" in text
    assert "(through the neutral server: 7)" in text
    assert "decision_differences" not in document  # the document itself is left as it was
    runs[1] = node_run("caldera", OUTSIDE)
    text = decisions.decisions_block({"runs": runs})
    assert text.startswith(
        "Decisions: differ from in-tree: 20 nodes, node: pods outside their queue's node groups"
        " (nodegroup) 61 through Caldera, 0 in-tree."
    )
    assert "(nodegroup) in-tree 0, Caldera 61, neutral 147" in text


def test_the_readme_decision_line_is_generated_from_the_committed_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m bench report --check` holds bench/README's decision line to cluster.json."""
    from bench import readme

    [section] = [s for s in readme.SECTIONS if s.name == "cluster-decisions"]
    assert section.sources == ("cluster.json",)
    text = readme.README.read_text()
    assert readme.current(text, section) == decisions.decisions_block(
        json.loads((cluster.RESULTS / "cluster.json").read_text())
    )
    # the line sits inside the block `bench cluster` writes, which carries its markers
    inside = text.partition(cluster.BEGIN)[2].partition(cluster.END)[0]
    assert cluster.DECISIONS_BEGIN in inside and cluster.DECISIONS_END in inside
    copy = tmp_path / "README.md"
    copy.write_text(
        text.replace("identical to in-tree in everything", "identical to in-tree in all")
    )
    assert readme.stale(readme=copy) == ["cluster-decisions"]


def test_a_missing_caldera_stops_the_run_before_any_cluster_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: a venv without its caldera script made every Caldera run of a full plan fail at
    its start, one size after another; the run now stops at once and says why."""
    monkeypatch.setenv("CALDERA_BIN", str(tmp_path / "no-such-caldera"))
    with pytest.raises(SystemExit, match=r"no caldera at .*no-such-caldera"):
        cluster.run_scale_test(cluster.plan_of(parse("--smoke", "--out", str(tmp_path / "o.json"))))


# --- repeated runs of the plan (--repeat) ---------------------------------------------------------


def test_the_plan_runs_once_unless_repeated() -> None:
    assert cluster.plan_of(parse())["repeat"] == 1
    assert cluster.plan_of(parse("--repeat", "3"))["repeat"] == 3
    with pytest.raises(SystemExit, match="at least 1"):
        cluster.plan_of(parse("--repeat", "0"))
    # A mutant smoke used to take --repeat and run once without a word.
    with pytest.raises(SystemExit, match="--mutant runs once"):
        cluster.plan_of(parse("--smoke", "--mutant", "pdb", "--repeat", "2"))


def test_repeated_runs_are_one_row_of_medians_with_the_targets_range() -> None:
    runs = [
        run("neutral", round=1, idleCycleP50Ms=172.0, cycleP50Ms=175.0, bound=1000),
        run("neutral", round=2, idleCycleP50Ms=122.0, cycleP50Ms=125.0, bound=1000),
        run("neutral", round=3, idleCycleP50Ms=151.0, cycleP50Ms=150.0, bound=999),
        run("intree", round=1),
    ]
    neutral, intree = cluster.rows_of(runs)
    assert neutral["idle_p50_ms"] == 151.0 and neutral["idle_p50_ms_range"] == [122.0, 172.0]
    assert neutral["cycle_p50_ms"] == 150.0 and neutral["cycle_p50_ms_range"] == [125.0, 175.0]
    assert neutral["bound"] == 1000 and isinstance(neutral["bound"], int)  # a count stays one
    assert neutral["repeats"] == 3
    assert "repeats" not in intree and "idle_p50_ms_range" not in intree  # one run: as it was
    cells = cluster.table([neutral]).splitlines()[2]
    assert "| 150.0 (125.0–175.0) |" in cells and "| 151.0 (122.0–172.0) |" in cells


def test_a_repeated_row_is_complete_only_when_every_run_was_and_keeps_every_error() -> None:
    [row] = cluster.rows_of(
        [run("caldera", round=1), run("caldera", round=2, completed=False, error="timed out")]
    )
    assert row["completed"] is False and row["error"] == "timed out"


def test_every_round_is_judged_against_its_own_in_tree_run() -> None:
    fewer = run("caldera", round=1, boundPerQueue={"default": 890})
    runs = [run("intree", round=1), fewer, run("intree", round=2), run("caldera", round=2)]
    # Round 1 differs though round 2, run after it, decided identically.
    [line] = decisions.compare_decisions(runs)
    assert "pods per queue {'default': 890} through Caldera" in line
    # The same difference in two rounds is one line, not two.
    again = [*runs, run("intree", round=3), run("caldera", round=3, boundPerQueue={"default": 890})]
    assert decisions.compare_decisions(again) == [line]
    # Round 2's in-tree run is not held against round 1's Caldera.
    assert decisions.compare_decisions(
        [run("intree", round=1), run("caldera", round=1),
         run("intree", round=2, boundPerQueue={"default": 890})]
    ) == []  # fmt: skip


def test_a_repeated_plan_runs_testscale_once_a_round_each_writing_a_file_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[str] = []

    def fake(plan: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        seen.append(Path(plan["out"]).name)
        return (1 if len(seen) == 2 else 0), [run("intree"), run("caldera")]

    monkeypatch.setattr(cluster, "run_scale_test", fake)
    plan = cluster.plan_of(parse("--repeat", "3", "--out", str(tmp_path / "c.json")))
    code, runs = cluster.run_repeated(plan)
    assert seen == ["c-round1.json", "c-round2.json", "c-round3.json"]
    assert code == 1  # a failing round fails the whole
    assert [r["round"] for r in runs] == [1, 1, 2, 2, 3, 3]
    assert cluster.rerun_plan(plan, [(100, 1000, "job")], ["caldera"])["repeat"] == 1


def test_a_neutral_server_that_did_not_hold_what_in_tree_held_is_no_control() -> None:
    """In the job group the neutral server rejects the held namespace's jobs (neutralHeld): a
    neutral run that bound otherwise than in-tree held something else, and no rerun (in-tree
    and Caldera only) could show the control again."""
    held = {"neutralHeld": "scale-job-neutral-9", "neutralRejected": 30}
    assert decisions.compare_decisions([run("intree"), run("neutral", **held)]) == []
    [line] = decisions.compare_decisions([run("intree"), run("neutral", bound=1000, **held)])
    assert "holding scale-job-neutral-9 bound 1000 pods, in-tree 900" in line
    assert decisions.protection_violations([line]) == [line]  # never forgiven by a rerun
    # A run from before the neutral server held anything carries no neutralHeld: not judged.
    assert decisions.compare_decisions([run("intree"), run("neutral", bound=1000)]) == []
    # On cluster mode's conf too, and never as a protection violation of its own
    [line] = decisions.compare_decisions(
        [run("intree"), run("neutral-cluster", bound=1000, **held)]
    )
    assert "the neutral server (cluster mode's conf) holding scale-job-neutral-9 bound 1000" in line
    evict = {"group": "evict", "bound": 100, "preemptors": 100, "evicted": 100}
    assert (
        decisions.compare_decisions(
            [run("intree", **evict), run("neutral-cluster", **{**evict, "protectedEvicted": 9})]
        )
        == []
    )


@pytest.mark.parametrize("neutral", sorted(decisions.NEUTRAL))
def test_the_evict_groups_neutral_control_must_evict_a_protected_pod(
    neutral: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As each placement fact must differ from the neutral server's, the neutral server (which
    grants every evictee) must evict a PDB-protected pod: if it evicts none, in-tree's and
    Caldera's evicting none proves nothing about the protection (the committed run's round 2
    evicted 1). Like a placement fact without its control, it stands at once: no rerun."""
    assert decisions.compare_decisions([evict_run("intree"), evict_run(neutral)]) == []
    spared = [evict_run("intree"), evict_run("caldera"), evict_run(neutral, protectedEvicted=0)]
    [line] = decisions.compare_decisions(spared)
    assert line.startswith("20 nodes, evict: the neutral server")
    assert "evicted 20 pods, none of them PDB-protected: no control" in line
    assert decisions.protection_violations([line]) == [line]  # never forgiven by a rerun
    # one protected pod is enough (the committed run's round 2)
    assert (
        decisions.compare_decisions([evict_run("intree"), evict_run(neutral, protectedEvicted=1)])
        == []
    )
    # the run fails, and nothing is run again
    plans = fake_scale_test(monkeypatch, [spared])
    out = tmp_path / "c.json"
    assert cluster.main(parse("--smoke", "--groups", "evict", "--out", str(out))) == 1
    assert len(plans) == 1
    assert json.loads(out.read_text())["decision_differences"] == [line]
    # the other groups' neutral runs evict nothing, and are not held to it
    assert decisions.compare_decisions([run("intree"), run(neutral)]) == []


def short_rounds() -> dict[str, Any]:
    """Three rounds of the evict case: in-tree one preemptor short in rounds 2 and 3, Caldera
    in round 3, each evicting as many pods as it bound; two clean reruns."""
    runs = []
    for number in (1, 2, 3):
        intree = 19 if number > 1 else 20
        hosted = 19 if number == 3 else 20
        runs += [
            evict_run("intree", bound=intree, evicted=intree, round=number),
            evict_run("caldera", bound=hosted, evicted=hosted, round=number),
            evict_run("caldera-cluster", round=number),
            evict_run("neutral", protectedEvicted=number, round=number),
        ]
    clean = [evict_run("intree"), evict_run("caldera"), evict_run("caldera-cluster")]
    schedulers = ["intree", "caldera", "caldera-cluster"]
    rerun = {"cases": [[20, 200, "evict"]], "schedulers": schedulers, "runs": clean}
    return {"runs": runs, "reruns": [rerun, rerun]}


def test_the_headline_says_which_rounds_differed_and_why() -> None:
    """bench/README's "identical to in-tree" stood on reruns in two of three rounds: the line
    says so, from the document alone."""
    text = decisions.decisions_block(short_rounds())
    assert text.startswith(
        "Decisions: identical to in-tree in everything compared, after reruns: the first runs"
        " of 2 of 3 rounds of the plan differed (round 2: 20 / 200 evict, preemptors bound"
        " in-tree 19, Caldera 20, cluster mode 20 of 20; round 3: 20 / 200 evict, preemptors"
        " bound in-tree 19, Caldera 19, cluster mode 20 of 20); Volcano left a preemptor pending"
        " (in-tree in rounds 2 and 3, Caldera in round 3), each such run having evicted exactly"
        " as many pods as it bound: no freed room left unused; in-tree among them, so not a difference"
        " Caldera's answers made; 2 reruns, in-tree and through Caldera in either mode, decided"
        " identically. Compared: "
    )
    assert "(through the neutral server: 1 in round 1, 2 in round 2, 3 in round 3)" in text
    # One round, nothing differing: the line says nothing of reruns.
    [first, *_] = decisions.rounds(short_rounds()["runs"])
    assert decisions.decisions_block({"runs": first}).startswith(
        "Decisions: identical to in-tree in everything compared. Compared: "
    )
    # A single run whose first runs differed, forgiven by two reruns, names no round.
    single = {
        **short_rounds(),
        "runs": [
            {k: v for k, v in r.items() if k != "round"}
            for r in decisions.rounds(short_rounds()["runs"])[2]
        ],
    }
    assert decisions.decisions_block(single).startswith(
        "Decisions: identical to in-tree in everything compared, after reruns: the first runs"
        " differed (20 / 200 evict, preemptors bound in-tree 19, Caldera 19, cluster mode 20 of"
        " 20); Volcano left a preemptor pending (in-tree, Caldera), each such run"
    )
    # A short run that evicted more than it bound is not said to have left no freed room unused.
    document = short_rounds()
    document["runs"][4]["evicted"] = 20
    assert "no freed room left unused" not in decisions.decisions_block(document)


def test_the_headline_says_what_a_short_run_left_behind() -> None:
    """TestScale records, for an evict run, the preemptors left pending (with the node each was
    nominated to) and the pods left terminating: whether Volcano or the fake kubelet kept the
    preemptor waiting. The committed run predates them: the line says nothing of them there."""
    document = short_rounds()
    document["runs"][4].update(
        pendingPreemptors=["scale-evict-intree-3/high-00019-0 nominated to scale-0007"],
        terminating=[],
        fillNotRunning=120,
    )
    document["runs"][9].update(
        pendingPreemptors=["scale-evict-caldera-4/high-00004-0 nominated to none"],
        terminating=["scale-evict-caldera-2/job-00012-3 on scale-0011"],
    )
    text = decisions.decisions_block(document)
    assert (
        "(round 2: in-tree left scale-evict-intree-3/high-00019-0 nominated to scale-0007"
        " pending, 0 pods terminating, 120 fill pods not Running when the preemptors came;"
        " round 3: Caldera left scale-evict-caldera-4/high-00004-0 nominated to none pending,"
        " 1 pod terminating (scale-evict-caldera-2/job-00012-3 on scale-0011), 0 fill pods not"
        " Running when the preemptors came)" in text
    )
    assert "terminating" not in decisions.decisions_block(short_rounds())


def test_the_committed_headline_counts_the_rounds_that_differed() -> None:
    document = json.loads((cluster.RESULTS / "cluster.json").read_text())
    differing = decisions.differing_rounds(document["runs"])
    text = decisions.decisions_block(document)
    assert (
        f"the first runs of {len(differing)} of {len(decisions.rounds(document['runs']))} rounds"
        in text
    )
