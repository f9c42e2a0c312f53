"""The failure policy (onError) and time budget of each tiers entry (app/plugin_faults.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app import framework as framework_module
from app.config import ConfigError, PluginOption, parse_config
from app.errors import PluginFailure
from app.explain import DecisionRecord
from app.framework import Framework, Slot
from app.metrics import Metrics
from app.plugin_faults import (
    BENCHED_WITHOUT_SESSION,
    DEFAULT_TIME_BUDGET,
    OVERRUNS_BEFORE_POLICY,
    Fault,
    FaultKind,
    OnError,
    PluginFaults,
    parse_duration,
)
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import EvictResult, FitError, Plugin, Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo
from tests.app.doubles import Answers, Evicts, Votes, task

AT = datetime(2026, 11, 27, tzinfo=UTC)
JOB = JobInfo(UID="j", Name="j", Namespace="ns", Queue="q")
NODE = NodeInfo(Name="n1")
ABC = [task("a"), task("b"), task("c")]


class Broken(Plugin):
    """Raises in every hook it implements."""

    name = "broken"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        raise RuntimeError("predicate broke")

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        raise RuntimeError("node_order broke")

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        raise RuntimeError("preemptable broke")

    def job_enqueueable(self, job: JobInfo) -> Vote:
        raise RuntimeError("job_enqueueable broke")

    def overused(self, queue: QueueInfo) -> bool:
        raise RuntimeError("overused broke")

    def job_ready(self, job: JobInfo) -> bool:
        raise RuntimeError("job_ready broke")

    def allocate(self, task: TaskInfo) -> str | None:
        raise RuntimeError("allocate broke")


def build(
    *tiers: Sequence[tuple[str, Plugin, str | None]],
    metrics: Metrics | None = None,
    faults: PluginFaults | None = None,
    budget: float | None = None,
    clock: Callable[[], datetime] = lambda: AT,
    sessionless: bool = False,
) -> Framework:
    """Tiers of (name, plugin, onError); the decision record is on."""
    built = [
        [
            Slot(
                PluginOption(name=name, onError=on_error, timeBudget=budget),
                plugin,
                plugin.hooks(),
            )
            for name, plugin, on_error in tier
        ]
        for tier in tiers
    ]
    log = DecisionRecord().open(1, AT)
    return Framework(
        built,
        Release(1, 16),
        metrics if metrics is not None else Metrics(),
        log,
        clock,
        None,
        faults,
        sessionless=sessionless,
    )


# Each verb with a broken plugin beside a working one: under abstain the working one's answer
# is the answer; under fail the verb fails naming the broken one.
ABSTAIN_CASES: list[tuple[str, Callable[[Framework], Any], Plugin, Any]] = [
    (
        "predicate",
        lambda fw: fw.first_failure(BY_VERB["predicate"], task("t"), NODE),
        Answers(fit=FitError("full")),
        FitError("full"),
    ),
    (
        "prioritize",
        lambda fw: fw.score_sum(BY_VERB["prioritize"], task("t"), [NODE]),
        Answers(scores={"n1": 7.0}),
        {"n1": 7.0},
    ),
    (
        "preemptable",
        lambda fw: [t.UID for t in fw.victims(BY_VERB["preemptable"], task("x"), ABC).victims],
        Evicts(["b"]),
        ["b"],
    ),
    (
        "jobEnqueueable",
        lambda fw: fw.vote(BY_VERB["jobEnqueueable"], JOB),
        Votes(Vote.REJECT),
        Vote.REJECT,
    ),
    (
        "queueOverused",
        lambda fw: fw.any_true(BY_VERB["queueOverused"], QueueInfo(Name="q")),
        Answers(overused_=True),
        True,
    ),
    (
        "jobReady",
        lambda fw: fw.all_true(BY_VERB["jobReady"], JOB),
        Answers(ready=False),
        False,
    ),
    (
        "allocate",
        lambda fw: fw.event(BY_VERB["allocate"], task("t")),
        Answers(error="no room"),
        "no room",
    ),
]


@pytest.mark.parametrize(
    ("verb", "ask", "other", "expected"), ABSTAIN_CASES, ids=[c[0] for c in ABSTAIN_CASES]
)
def test_abstain_drops_only_the_failing_answer(
    verb: str, ask: Callable[[Framework], Any], other: Plugin, expected: Any
) -> None:
    metrics = Metrics()
    fw = build(
        [("broken", Broken(Arguments()), "abstain"), ("other", other, None)], metrics=metrics
    )
    assert ask(fw) == expected
    labels = {"plugin": "broken", "verb": verb, "kind": "raised"}
    assert metrics.registry.get_sample_value("caldera_plugin_errors_total", labels) == 1
    last = fw.faults.describe()["broken"]["last"]
    assert last["consequence"] == "its answer was dropped (onError: abstain)"


@pytest.mark.parametrize(
    ("verb", "ask", "other", "expected"), ABSTAIN_CASES, ids=[c[0] for c in ABSTAIN_CASES]
)
def test_fail_answers_the_verb_with_an_attributed_error(
    verb: str, ask: Callable[[Framework], Any], other: Plugin, expected: Any
) -> None:
    fw = build([("broken", Broken(Arguments()), "fail"), ("other", other, None)])
    with pytest.raises(PluginFailure) as caught:
        ask(fw)
    assert (caught.value.plugin, caught.value.verb, caught.value.kind) == ("broken", verb, "raised")
    assert caught.value.logged


def test_abstaining_protective_plugin_frees_its_pods() -> None:
    """Why pdb and min-runtime fail by default: under the victim intersection an answer
    dropped is no veto, so the other plugins' victims, a protected pod among them, stand."""
    offers_all = Evicts(["a", "b", "c"])
    fw = build([("protective", Broken(Arguments()), "abstain"), ("offers", offers_all, None)])
    victims = fw.victims(BY_VERB["preemptable"], task("x"), ABC).victims
    assert [t.UID for t in victims] == ["a", "b", "c"]
    guarded = build([("protective", Broken(Arguments()), "fail"), ("offers", offers_all, None)])
    with pytest.raises(PluginFailure):
        guarded.victims(BY_VERB["preemptable"], task("x"), ABC)


class Foreign(Plugin):
    """Preemptable: a victim that is not one of the evictees (a copy of the first, or one of
    its own making), beside one that is."""

    name = "foreign"

    def __init__(self, copy: bool) -> None:
        super().__init__(Arguments())
        self.copy = copy

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        first = preemptees[0]
        made = task(first.UID) if self.copy else TaskInfo(UID="z", Name="z", Namespace="elsewhere")
        return [preemptees[1], made], Vote.PERMIT


FOREIGN_CASES = [
    pytest.param(
        True,
        "returned a victim that is not one of the evictees it was given: TaskInfo default/a"
        " UID 'a' (its UID is an evictee's: a copy); expected some of the evictees themselves",
        id="copy",
    ),
    pytest.param(
        False,
        "returned a victim that is not one of the evictees it was given: TaskInfo elsewhere/z"
        " UID 'z'; expected some of the evictees themselves",
        id="made",
    ),
]


@pytest.mark.parametrize(("copy", "detail"), FOREIGN_CASES)
def test_a_foreign_victim_is_its_plugins_fault(copy: bool, detail: str) -> None:
    """Volcano evicts the objects Caldera echoes, and Caldera has the bytes of the evictees
    only: a victim it was not given is named, counted and handled by onError, as a wrong type
    is (not an unattributed 500)."""
    metrics = Metrics()
    fw = build(
        [("foreign", Foreign(copy), "abstain"), ("offers", Evicts(["b", "c"]), None)],
        metrics=metrics,
    )
    victims = fw.victims(BY_VERB["preemptable"], task("x"), ABC).victims
    assert [t.UID for t in victims] == ["b", "c"]  # only the other plugin's answer stands
    labels = {"plugin": "foreign", "verb": "preemptable", "kind": "wrong_type"}
    assert metrics.registry.get_sample_value("caldera_plugin_errors_total", labels) == 1
    last = fw.faults.describe()["foreign"]["last"]
    assert (last["error"], last["consequence"]) == (
        detail,
        "its answer was dropped (onError: abstain)",
    )

    failing = build([("foreign", Foreign(copy), "fail"), ("offers", Evicts(["b"]), None)])
    with pytest.raises(PluginFailure) as caught:
        failing.victims(BY_VERB["preemptable"], task("x"), ABC)
    failure = caught.value
    assert (failure.plugin, failure.verb, failure.kind) == ("foreign", "preemptable", "wrong_type")
    assert str(failure) == f"plugin foreign failed in preemptable: (wrong_type) {detail}"


def test_a_later_answer_filters_by_uid_whatever_its_objects() -> None:
    """Only the answer that starts the victim list is sent back; a later one filters it by
    UID, as Volcano's intersection does, so copies there are no fault."""
    metrics = Metrics()
    fw = build(
        [("offers", Evicts(["a", "b", "c"]), None), ("foreign", Foreign(True), "fail")],
        metrics=metrics,
    )
    victims = fw.victims(BY_VERB["preemptable"], task("x"), ABC).victims
    assert [t.UID for t in victims] == ["a", "b"]
    assert victims[0] is ABC[0]  # the evictee given, not the copy
    assert fw.faults.describe() == {}


def test_the_decision_record_says_the_answer_was_dropped() -> None:
    fw = build([("broken", Broken(Arguments()), "abstain"), ("other", Answers(), None)])
    fw.all_true(BY_VERB["jobReady"], JOB)
    fw.first_failure(BY_VERB["predicate"], task("t", Job="ns/j"), NODE)
    assert fw.log is not None
    assert ("jobReady", "broken") not in fw.log.jobs["ns/j"]  # no verdict: its answer is gone
    record = DecisionRecord()
    record.logs.append(fw.log)
    explained = record.explain_job("ns/j")
    assert explained is not None
    assert explained["summary"][0] == (
        "plugin broken failed in jobReady (raised: RuntimeError: job_ready broke):"
        " its answer was dropped (onError: abstain) (asked about job ns/j)"
    )
    assert explained["faults"][0]["plugin"] == "broken"
    fault = fw.log.tasks["default/t"].faults[("predicate", "broken")]
    assert fault.kind is FaultKind.RAISED and fault.dropped


class Slow(Plugin):
    name = "slow"

    def job_ready(self, job: JobInfo) -> bool:
        return False


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The framework's call clock: each reading advances by the head of ``steps``."""
    steps = [0.0]
    now = [0.0]

    def clock() -> float:
        now[0] += steps[0]
        return now[0]

    monkeypatch.setattr(framework_module, "_clock", clock)
    yield steps


@pytest.mark.parametrize("policy", ["abstain", "fail"])
def test_repeated_overruns_hand_the_plugin_to_its_policy(ticking: list[float], policy: str) -> None:
    ticking[0] = 0.2  # every call takes 0.2 s against a 0.1 s budget
    metrics = Metrics()
    slow = Slow(Arguments())
    fw = build([("slow", slow, policy)], metrics=metrics, budget=0.1)
    ready = BY_VERB["jobReady"]
    for _ in range(OVERRUNS_BEFORE_POLICY - 1):
        assert fw.all_true(ready, JOB) is False  # over budget, still used
    if policy == "abstain":
        assert fw.all_true(ready, JOB) is True  # dropped: nobody objects
        assert fw.all_true(ready, JOB) is True  # not asked for the rest of the session
    else:
        for _ in range(2):
            with pytest.raises(PluginFailure) as caught:
                fw.all_true(ready, JOB)
            assert caught.value.kind == "over_budget"
    labels = {"plugin": "slow", "verb": "jobReady", "kind": "over_budget"}
    assert metrics.registry.get_sample_value("caldera_plugin_errors_total", labels) == 4
    count = metrics.registry.get_sample_value(
        "caldera_plugin_call_duration_seconds_count", {"plugin": "slow", "verb": "jobReady"}
    )
    assert count == OVERRUNS_BEFORE_POLICY  # the fourth call was not made


def test_a_call_within_budget_resets_the_run(ticking: list[float]) -> None:
    fw = build([("slow", Slow(Arguments()), "abstain")], budget=0.1)
    ready = BY_VERB["jobReady"]
    for step in [0.2, 0.2, 0.01, 0.2, 0.2]:
        ticking[0] = step
        assert fw.all_true(ready, JOB) is False


class SlowCloser(Slow):
    """Slow at jobReady (under ``ticking``), and counts the session closes it is told."""

    name = "slow"
    closed = 0

    def on_session_close(self) -> None:
        type(self).closed += 1


class RaisingCloser(Plugin):
    name = "raising"

    def on_session_close(self) -> None:
        raise RuntimeError("close broke")


# Issue 47: with no session to end it, a plugin benched for its budget stayed benched for good
# (every later call a 500 "not asked"). Each case: the framework (sessionless or a session's),
# then seconds after the benching and each step's call time, with whether the plugin is asked.
BENCH_CASES = [
    # (case, sessionless, [(seconds after the benching, call time, asked)])
    ("a session's bench lasts the session", False,
     [(1, 0.01, False), (BENCHED_WITHOUT_SESSION + 60, 0.01, False)]),
    ("without a session, not asked within the window", True,
     [(1, 0.01, False), (BENCHED_WITHOUT_SESSION - 1, 0.01, False)]),
    ("without a session, asked again after it; a fast call ends the probation", True,
     [(BENCHED_WITHOUT_SESSION, 0.01, True), (BENCHED_WITHOUT_SESSION, 0.2, True),
      (BENCHED_WITHOUT_SESSION, 0.2, True), (BENCHED_WITHOUT_SESSION, 0.01, True)]),
    ("without a session, a slow probation call benches it again at once", True,
     [(BENCHED_WITHOUT_SESSION, 0.2, True), (BENCHED_WITHOUT_SESSION + 1, 0.01, False),
      (2 * BENCHED_WITHOUT_SESSION, 0.01, True)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "sessionless", "steps"), BENCH_CASES, ids=[c[0] for c in BENCH_CASES]
)
def test_how_long_an_overrunning_plugin_is_benched(
    ticking: list[float], case: str, sessionless: bool, steps: list[tuple[float, float, bool]]
) -> None:
    now = [AT]
    metrics = Metrics()
    fw = build(
        [("slow", Slow(Arguments()), "fail")], metrics=metrics, budget=0.1,
        clock=lambda: now[0], sessionless=sessionless,
    )  # fmt: skip
    ready = BY_VERB["jobReady"]
    ticking[0] = 0.2
    for _ in range(OVERRUNS_BEFORE_POLICY - 1):
        assert fw.all_true(ready, JOB) is False
    with pytest.raises(PluginFailure):
        fw.all_true(ready, JOB)  # the third in a row: benched from here
    benched_at = now[0]
    calls = {"plugin": "slow", "verb": "jobReady"}

    def made() -> float:
        return (
            metrics.registry.get_sample_value("caldera_plugin_call_duration_seconds_count", calls)
            or 0.0
        )

    for seconds, took, asked in steps:
        now[0] = benched_at + timedelta(seconds=seconds)
        ticking[0] = took
        before = made()
        try:
            fw.all_true(ready, JOB)
        except PluginFailure as exc:
            assert exc.kind == "over_budget"
        assert (made() > before) is asked, (case, seconds, took)


def test_a_benched_plugin_is_still_told_its_session_closed(ticking: list[float]) -> None:
    SlowCloser.closed = 0
    metrics = Metrics()
    fw = build(
        [("slow", SlowCloser(Arguments()), "fail"), ("raising", RaisingCloser(Arguments()), "fail")],
        metrics=metrics, budget=0.1,
    )  # fmt: skip
    ticking[0] = 0.2
    ready = BY_VERB["jobReady"]
    for _ in range(OVERRUNS_BEFORE_POLICY - 1):
        fw.all_true(ready, JOB)
    with pytest.raises(PluginFailure):
        fw.all_true(ready, JOB)
    ticking[0] = 0.0
    fw.close()  # neither the bench nor a raising on_session_close fails the close
    assert SlowCloser.closed == 1

    def errors(plugin: str, kind: str) -> float | None:
        labels = {"plugin": plugin, "verb": "onSessionClose", "kind": kind}
        return metrics.registry.get_sample_value("caldera_plugin_errors_total", labels)

    assert errors("slow", "over_budget") is None
    assert errors("raising", "raised") == 1


def test_faults_are_logged_once_then_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    faults = PluginFaults(Metrics(), monotonic=lambda: now[0], log_interval=60)
    fault = Fault("p", "predicate", FaultKind.WRONG_TYPE, "returned 1", OnError.ABSTAIN, True,
                  False, AT)  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="caldera.plugins"):
        for second in range(0, 130, 10):
            now[0] = second
            faults.record(fault)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3  # at 0, at 60 and at 120
    assert "logged once per plugin, verb and kind" in lines[0]
    assert lines[1].endswith("(5 more like it since last logged)")
    assert faults.describe()["p"]["count"] == 13


CONFIG_CASES = [
    ("abstain", {"onError": "abstain"}, None),
    ("fail-and-budget", {"onError": "fail", "timeBudget": "250ms"}, None),
    ("bad-policy", {"onError": "ignore"}, "tiers[0].plugins[0].onError: must be fail or abstain"),
    ("bare-number", {"timeBudget": 5}, 'timeBudget: must be a duration such as "100ms"'),
    ("zero", {"timeBudget": "0s"}, "timeBudget: must be more than zero"),
    ("misspelt", {"onerror": "fail"}, "unknown plugin option (did you mean 'onError'?)"),
]


@pytest.mark.parametrize(
    ("keys", "problem"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES]
)
def test_on_error_and_time_budget_in_the_tiers_entry(
    keys: dict[str, Any], problem: str | None
) -> None:
    data = {"tiers": [{"plugins": [{"name": "priority", **keys}]}]}
    if problem is not None:
        with pytest.raises(ConfigError) as caught:
            parse_config(data, "test.yaml")
        assert problem in str(caught.value)
        return
    option = parse_config(data, "test.yaml").tiers[0].plugins[0]
    assert option.onError == keys.get("onError")
    if "timeBudget" in keys:
        assert option.timeBudget == parse_duration(keys["timeBudget"])


def test_the_default_policy_and_budget() -> None:
    slot = Slot(PluginOption(name="x"), Slow(Arguments()))
    assert (slot.on_error, slot.budget) == (OnError.FAIL, DEFAULT_TIME_BUDGET)


BUILT_IN_POLICY = {
    "cdp": "fail",
    "conformance": "fail",
    "min-runtime": "fail",
    "nodegroup": "fail",
    "overcommit": "fail",
    "pdb": "fail",
    "priority": "fail",
    "resource-strategy-fit": "abstain",
    "resourcequota": "fail",
    "sla": "abstain",
    "task-topology": "abstain",
    "usage": "abstain",
}
"""The table of docs/plugin-author-guide.md, "When a plugin fails"."""


def test_built_in_defaults_are_the_documented_ones() -> None:
    from pathlib import Path

    guide = (Path(__file__).parents[2] / "docs" / "plugin-author-guide.md").read_text()
    for name, policy in BUILT_IN_POLICY.items():
        cls = registry.get(name)
        assert cls is not None and cls.on_error == policy, name
        assert f"| {name} | `{policy}` |" in guide, name


def test_only_the_framework_without_a_session_benches_by_time() -> None:
    """The sessionless framework lives as long as its configuration: it is the one whose
    benching must end by time (issue 47: an extender entry without session verbs)."""
    from app.session import SessionManager
    from schemas.requests import OnSessionOpenRequest

    config = parse_config({"tiers": [{"plugins": [{"name": "priority"}]}]}, "test")
    sessions = SessionManager(config, Metrics())
    assert sessions.without_snapshot.sessionless
    assert not sessions.open(OnSessionOpenRequest()).framework.sessionless


def test_the_guide_says_how_long_a_plugin_is_benched_without_a_session() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugin-author-guide.md").read_text()
    text = " ".join(guide.split())
    assert f"benched for {BENCHED_WITHOUT_SESSION:g} seconds instead" in text
    assert f"another {BENCHED_WITHOUT_SESSION:g} seconds" in text


# Issue 47 item 5: a slow hook holds every verb queued behind it on the one verb listener. A
# prioritize call whose overrun benches its plugin is dropped (or fails) whatever the other
# nodes score, so a plugin scoring node by node is not asked about them.
SECONDS_PER_NODE = 3.0
"""The walk-through's node_score: 3 s a node, against a 100 ms budget."""


class NodeScorer(Plugin):
    """``node_score`` only (the default ``node_order`` asks it per node): each node advances
    the framework's call clock by ``took``, and the nodes asked are kept."""

    name = "scorer"

    def __init__(self, arguments: Arguments, clock: list[float], took: float) -> None:
        super().__init__(arguments)
        self.clock, self.took = clock, took
        self.asked: list[str] = []

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        self.clock[0] += self.took
        self.asked.append(node.Name)
        return 1.0


class BatchScorer(NodeScorer):
    """The same scores from a ``node_order`` of its own: one call the framework cannot split."""

    name = "scorer"

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {node.Name: self.node_score(task, node) for node in nodes}


CUT_CASES = [
    # (case, plugin class, seconds per node, nodes, onError, nodes asked per call, last total)
    ("over budget: the two calls whose answer is used ask every node, the benching one one",
     NodeScorer, SECONDS_PER_NODE, 2, "abstain", [2, 2, 1], {}),
    ("the same over 100 nodes: the benching call takes 3 s, not 300", NodeScorer,
     SECONDS_PER_NODE, 100, "abstain", [100, 100, 1], {}),
    ("under fail the benching call fails after one node", NodeScorer, SECONDS_PER_NODE, 2, "fail",
     [2, 2, 1], None),
    ("a node_order of its own is one call: every node is asked", BatchScorer, SECONDS_PER_NODE,
     2, "abstain", [2, 2, 2], {}),
    ("within budget every node is asked and scored", NodeScorer, 0.001, 2, "abstain", [2, 2, 2],
     {"n0": 1.0, "n1": 1.0}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "cls", "took", "count", "policy", "asked", "last"),
    CUT_CASES,
    ids=[c[0] for c in CUT_CASES],
)
def test_a_prioritize_that_benches_its_plugin_stops_asking_nodes(
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    cls: type[NodeScorer],
    took: float,
    count: int,
    policy: str,
    asked: list[int],
    last: dict[str, float] | None,
) -> None:
    clock = [0.0]
    monkeypatch.setattr(framework_module, "_clock", lambda: clock[0])
    scorer = cls(Arguments(), clock, took)
    faults = PluginFaults(Metrics())
    fw = build([("scorer", scorer, policy)], budget=0.1, faults=faults)
    point, nodes = BY_VERB["prioritize"], [NodeInfo(Name=f"n{i}") for i in range(count)]
    per_call, total = [], None
    for _ in asked:
        before = len(scorer.asked)
        try:
            total = fw.score_sum(point, task("t"), nodes)
        except PluginFailure as exc:
            assert exc.kind == "over_budget"
            total = None
        per_call.append(len(scorer.asked) - before)
    assert (per_call, total) == (asked, last), case
    if asked[-1] < count:
        last_fault = faults.describe()["scorer"]["last"]["error"]
        assert f"stopped after 1 of {count} nodes, the others not asked" in last_fault
