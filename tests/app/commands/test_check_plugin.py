"""``caldera check-plugin``: a plugin that raises, answers a wrong type, returns a victim it was
not given, scores NaN, runs over its budget or fails to build or open is reported and exits 1;
a well-behaved plugin exits 0; a name or configuration it cannot check exits 2."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from app.commands.check_plugin import check, entry_of
from app.commands.cli import main
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Background, EvictResult, FitError, Plugin, Session, Vote
from plugins.api.reasons import Explained, Reason
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo


class WellBehaved(Plugin):
    """Every hook, answering within its contract (and reading what the bodies carry)."""

    name = "test-check-good"

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = len(ssn.jobs)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        labels = (node.Node.metadata.labels if node.Node else None) or {}
        return FitError("maintenance") if labels.get("maintenance") == "true" else None

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        return float(len(node.Tasks or {}))

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return [t for t in preemptees if t.Priority < preemptor.Priority], Vote.PERMIT

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> EvictResult | Explained[EvictResult]:
        return Explained(([], Vote.ABSTAIN), Reason("spared", "nothing reclaimed"))

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return Vote.PERMIT if job.Queue else Vote.ABSTAIN

    def job_enqueued(self, job: JobInfo) -> None:
        self.jobs += 1

    def overused(self, queue: QueueInfo) -> bool:
        return queue.Weight > 100

    def job_ready(self, job: JobInfo) -> bool:
        return job.MinAvailable <= len(job.Tasks or {}) or True

    def allocate(self, task: TaskInfo) -> str | None:
        return None

    def deallocate(self, task: TaskInfo) -> str | None:
        return None


class RaisesInPredicate(Plugin):
    name = "test-check-raises"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError(node.Node.metadata.labels["zone"])  # type: ignore[union-attr,index]


class ReadyAsString(Plugin):
    name = "test-check-ready-string"

    def job_ready(self, job: JobInfo) -> bool:
        return "no"  # type: ignore[return-value]


class EnqueueableFive(Plugin):
    name = "test-check-vote-int"

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return 5  # type: ignore[return-value]


class ScoreNone(Plugin):
    name = "test-check-score-none"

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        return None  # type: ignore[return-value]


class ScoreNaN(Plugin):
    name = "test-check-score-nan"

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {node.Name: math.nan for node in nodes}


class BareVictims(Plugin):
    name = "test-check-bare-list"

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return list(preemptees)  # type: ignore[return-value]


class ForeignVictim(Plugin):
    name = "test-check-foreign-victim"

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return [reclaimer], Vote.PERMIT


class Slow(Plugin):
    name = "test-check-slow"

    def overused(self, queue: QueueInfo) -> bool:
        time.sleep(0.003)
        return False


class RenamesItsTask(Plugin):
    """Issue 47 item 9: a hook writing to its input went unnoticed, and the decision record
    filed the answer under the changed name."""

    name = "test-check-mutates-task"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        task.Name = f"{task.Name}-seen"
        return None


class SortsTheEvictees(Plugin):
    name = "test-check-mutates-list"

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        assert isinstance(preemptees, list)
        preemptees.reverse()  # in place: the list Volcano's body gave every voter
        return [], Vote.ABSTAIN


class BrokenConstructor(Plugin):
    name = "test-check-constructor"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        raise ValueError("no licence key")

    def overused(self, queue: QueueInfo) -> bool:
        return False


class BrokenSessionOpen(Plugin):
    name = "test-check-session-open"

    def on_session_open(self, ssn: Session) -> None:
        raise KeyError("team-a")

    def overused(self, queue: QueueInfo) -> bool:
        return False


DOUBLES: tuple[type[Plugin], ...] = (
    WellBehaved, RaisesInPredicate, ReadyAsString, EnqueueableFive, ScoreNone, ScoreNaN,
    BareVictims, ForeignVictim, Slow, BrokenConstructor, BrokenSessionOpen, RenamesItsTask,
    SortsTheEvictees,
)  # fmt: skip


@pytest.fixture(autouse=True)
def doubles() -> Iterator[None]:
    for cls in DOUBLES:
        registry.register(cls)
    yield
    for cls in DOUBLES:
        registry._registry.pop(cls.name, None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check-plugin", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_well_behaved_plugin_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, WellBehaved.name)
    assert code == 0, out
    assert out.splitlines()[-1] == "no problems"
    # WellBehaved scores node by node: its hook is node_score, the name its author wrote
    for hook in ("predicate", "node_score", "preemptable", "reclaimable", "job_enqueueable",
                 "job_enqueued", "overused", "job_ready", "allocate", "deallocate"):  # fmt: skip
        assert f"  {hook} " in out, hook
    assert "node_order" not in out


@pytest.mark.parametrize(
    ("plugin", "expected"),
    [
        pytest.param(RaisesInPredicate, "predicate: raised KeyError: 'zone'", id="raises"),
        pytest.param(
            ReadyAsString, "job_ready: returned 'no' (str); expected bool", id="job_ready str"
        ),
        pytest.param(
            EnqueueableFive, "job_enqueueable: returned 5 (int); expected Vote", id="vote int"
        ),
        pytest.param(
            ScoreNone,
            "node_score: returned None (NoneType) from node_score for node 'node1'; expected float",
            id="score None",
        ),
        pytest.param(ScoreNaN, "node_order: scored ", id="score NaN"),
        pytest.param(
            RenamesItsTask,
            "predicate: changed its argument 1 (TaskInfo) at Name: a hook must not modify its"
            " inputs",
            id="mutates its task",
        ),
        pytest.param(
            SortsTheEvictees,
            "preemptable: changed its argument 2 (list of TaskInfo) at [0]",
            id="mutates the evictees",
        ),
        pytest.param(BareVictims, "preemptable: returned [", id="bare list"),
        pytest.param(
            ForeignVictim,
            "reclaimable: returned a victim that is not one of the evictees given",
            id="foreign victim",
        ),
        pytest.param(
            BrokenConstructor, "__init__: raised ValueError: no licence key", id="constructor"
        ),
        pytest.param(
            BrokenSessionOpen, "on_session_open: raised KeyError: 'team-a'", id="session open"
        ),
    ],
)
def test_a_misbehaving_plugin_is_reported_and_exits_1(
    capsys: pytest.CaptureFixture[str], plugin: type[Plugin], expected: str
) -> None:
    code, out, _ = run(capsys, plugin.name)
    assert code == 1, out
    assert f"  {expected}" in out, out
    assert "    first on " in out


def test_a_problem_names_the_input_that_showed_it(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, RaisesInPredicate.name)
    # The captured node carries no zone label: the first input is Volcano's own body.
    assert "first on captured: Volcano 1.14 predicate body" in out, out


def test_a_hook_over_its_entrys_time_budget_is_a_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text(f"tiers: [{{plugins: [{{name: {Slow.name}, timeBudget: 1ms}}]}}]\n")
    code, out, _ = run(capsys, Slow.name, "--config", str(path))
    assert code == 1, out
    assert "(budget 1 ms)  1 over budget" in out
    assert re.search(
        r"  overused: p99 \d+\.\d ms over the budget of 1 ms\n    first on 800 calls", out
    )
    config, entry = entry_of(Slow.name, None)  # the default budget, 100 ms
    report = check(entry, config)
    assert report.clean and report.budget_seconds == 0.1


def test_the_configuration_gives_the_arguments(tmp_path: Path) -> None:
    class Threshold(Plugin):
        name = "test-check-threshold"

        def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
            super().__init__(arguments, background)
            self.limit = arguments.get_int("limit", 0)

        def overused(self, queue: QueueInfo) -> bool:
            return 1 // self.limit > 0  # the default 0 raises

    registry.register(Threshold)
    try:
        path = tmp_path / "caldera.yaml"
        path.write_text(
            "tiers:\n- plugins:\n  - name: priority\n"
            "- plugins:\n  - name: test-check-threshold\n    arguments: {limit: 2}\n"
        )
        config, entry = entry_of(Threshold.name, str(path))
        assert (entry.tier, entry.index, entry.arguments.get_int("limit", 0)) == (1, 0, 2)
        assert check(entry, config).clean
        alone, without_arguments = entry_of(Threshold.name, None)
        [problem] = check(without_arguments, alone).problems.values()
        assert problem.message == "raised ZeroDivisionError: integer division or modulo by zero"
    finally:
        registry._registry.pop(Threshold.name, None)


@pytest.mark.parametrize(
    ("argv", "config", "message"),
    [
        pytest.param(
            ["not-installed"], None,
            "unknown plugin 'not-installed' (known plugins: ", id="unknown plugin",
        ),
        pytest.param(
            [WellBehaved.name, "--config"], "tiers: [{plugins: [{name: priority}]}]\n",
            "tiers: no entry names 'test-check-good' (it names: priority)", id="not configured",
        ),
        pytest.param(
            [WellBehaved.name, "--config"], "tiers: [{plugins: [{name: nope}]}]\n",
            "unknown plugin 'nope'", id="invalid configuration",
        ),
    ],
)  # fmt: skip
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    config: str | None,
    message: str,
) -> None:
    if config is not None:
        path = tmp_path / "caldera.yaml"
        path.write_text(config)
        argv = [*argv, str(path)]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err


def test_no_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check-plugin"])
    assert exit_.value.code == 2
    assert "the following arguments are required: name" in capsys.readouterr().err


def test_an_unknown_plugin_says_plugins_are_discovered_at_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, err = run(capsys, "installed-later")
    assert "plugins are discovered when caldera starts: restart it after installing one" in err


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in registry.names()
        if not name.startswith("test-")
        and (cls := registry.get(name)) is not None
        # pdb's data source is a cluster (or a file it must be given): checked with one below
        and cls.create_background.__func__ is Plugin.create_background.__func__  # type: ignore[attr-defined]
    ],
)
def test_every_built_in_plugin_passes(name: str) -> None:
    """No false alarm on the plugins Caldera ships: captured and generated inputs alike."""
    config, entry = entry_of(name, None)
    report = check(entry, config)
    assert report.clean, [vars(problem) for problem in report.problems.values()]


def test_pdb_with_its_budgets_from_a_file_passes(tmp_path: Path) -> None:
    budgets = tmp_path / "pdbs.yaml"
    budgets.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- metadata: {name: keep-one, namespace: default}\n"
        "  spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}\n"
        "  status: {disruptionsAllowed: 0}\n"
    )
    path = tmp_path / "caldera.yaml"
    path.write_text(
        "tiers: [{plugins: [{name: pdb, arguments: {source: file, file: " + str(budgets) + "}}]}]\n"
    )
    config, entry = entry_of("pdb", str(path))
    report = check(entry, config)
    assert report.clean and not report.notes, (report.problems, report.notes)


BROKEN_MODULE = "raise RuntimeError('no licence key in this environment')\n"


@pytest.mark.parametrize(
    ("name", "module", "target", "expected"),
    [
        pytest.param(
            "a package whose module raises on import", BROKEN_MODULE, "broken_plugin:Broken",
            "plugin 'broken' is installed but failed to load: importing broken_plugin:Broken"
            " raised RuntimeError: no licence key in this environment",
            id="raises on import",
        ),
        pytest.param(
            "an entry point naming something that is not a plugin", "Broken = 42\n",
            "broken_plugin:Broken",
            "plugin 'broken' is installed but failed to load: broken_plugin:Broken is not a"
            " Plugin subclass",
            id="not a plugin",
        ),
    ],
)  # fmt: skip
def test_a_plugin_that_fails_to_load_is_said_so_not_to_install_it(
    tmp_path: Path, name: str, module: str, target: str, expected: str
) -> None:
    """Issue 47 item 9: the hint after a broken plugin package said to install one."""
    site = tmp_path / "site"
    info = site / "caldera_broken-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: caldera-broken\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[caldera.plugins]\nbroken = {target}\n")
    (site / "broken_plugin.py").write_text(module)
    config = tmp_path / "caldera.yaml"
    config.write_text("tiers: [{plugins: [{name: broken}]}]\n")
    root = Path(__file__).resolve().parents[3]
    for argv in (["check-config", str(config)], ["check-plugin", "broken"]):
        result = subprocess.run(
            [sys.executable, "-c", "import sys; from app.commands.cli import main; sys.exit(main())", *argv],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": f"{site}:{root}"},
        )  # fmt: skip
        assert result.returncode == 2, (name, argv, result.stderr)
        assert expected in result.stderr, (name, argv, result.stderr)
        assert "restart it after installing one" not in result.stderr, (name, argv)
        assert "Traceback" not in result.stderr, (name, argv, result.stderr)
