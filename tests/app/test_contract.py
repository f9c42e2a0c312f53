"""The plugin contract (app/contract.py): each hook's answer against its declared type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import pytest

from app.contract import COMPILED, DECLARED, EXPECTED, check_answer, compile_form
from app.errors import PluginFailure
from plugins.api.arguments import Arguments
from plugins.api.base import FitError, Plugin, Vote
from plugins.api.extension_points import BY_HOOK, EXTENSION_POINTS
from plugins.api.reasons import Explained, Reason
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo
from tests.app.doubles import framework, task

EVICTEE = task("a")
WHY = Reason("why", "because")

CONFORMING = [
    ("predicate-fits", "predicate", None),
    ("predicate-fails", "predicate", FitError("full")),
    ("node_order-floats", "node_order", {"n1": 1.5, "n2": 0.0}),
    ("node_order-ints", "node_order", {"n1": 3}),
    ("node_order-empty", "node_order", {}),
    ("node_order-read-only-mapping", "node_order", MappingProxyType({"n1": 2.0})),
    ("preemptable-list", "preemptable", ([EVICTEE], Vote.PERMIT)),
    ("preemptable-tuple-abstain", "preemptable", ((), Vote.ABSTAIN)),
    ("preemptable-explained", "preemptable", Explained(([], Vote.PERMIT), None, {"a": WHY})),
    ("reclaimable-list", "reclaimable", ([EVICTEE], Vote.PERMIT)),
    ("job_enqueueable-vote", "job_enqueueable", Vote.REJECT),
    ("job_enqueueable-explained", "job_enqueueable", Explained(Vote.REJECT, WHY)),
    ("job_enqueued-none", "job_enqueued", None),
    ("overused-false", "overused", False),
    ("overused-explained", "overused", Explained(True, WHY)),
    ("job_ready-true", "job_ready", True),
    ("job_ready-explained", "job_ready", Explained(False, WHY)),
    ("allocate-none", "allocate", None),
    ("allocate-message", "allocate", "no room"),
    ("deallocate-empty", "deallocate", ""),
    ("on_session_close-none", "on_session_close", None),
]

WRONG = [
    # (case, hook, value, the whole problem report)
    ("job_ready-string", "job_ready", "no", "returned 'no' (str); expected bool | Explained[bool]"),
    ("job_ready-int", "job_ready", 1, "returned 1 (int); expected bool | Explained[bool]"),
    (
        "job_ready-explained-string",
        "job_ready",
        Explained("no"),
        "returned Explained whose answer is 'no' (str); expected bool | Explained[bool]",
    ),
    (
        "job_enqueueable-int",
        "job_enqueueable",
        5,
        "returned 5 (int); expected Vote | Explained[Vote]",
    ),
    (
        "job_enqueueable-none",
        "job_enqueueable",
        None,
        "returned None (NoneType); expected Vote | Explained[Vote]",
    ),
    (
        "overused-none",
        "overused",
        None,
        "returned None (NoneType); expected bool | Explained[bool]",
    ),
    ("predicate-false", "predicate", False, "returned False (bool); expected FitError | None"),
    ("predicate-string", "predicate", "full", "returned 'full' (str); expected FitError | None"),
    (
        "node_order-none-score",
        "node_order",
        {"n1": None},
        "returned a mapping whose value for 'n1' is None (NoneType); expected Mapping[str, float]",
    ),
    (
        "node_order-bool-score",
        "node_order",
        {"n1": True},
        "returned a mapping whose value for 'n1' is True (bool); expected Mapping[str, float]",
    ),
    (
        "node_order-int-key",
        "node_order",
        {1: 1.0},
        "returned a mapping whose key 1 (int); expected Mapping[str, float]",
    ),
    (
        "node_order-list",
        "node_order",
        [1.0],
        "returned [1.0] (list); expected Mapping[str, float]",
    ),
    (
        "preemptable-bare-list",
        "preemptable",
        [EVICTEE],
        "returned [TaskInfo(",
    ),
    (
        "preemptable-int-vote",
        "preemptable",
        ([EVICTEE], 1),
        "returned a tuple whose item 1 is 1 (int); expected",
    ),
    (
        "reclaimable-uid-not-task",
        "reclaimable",
        (["a"], Vote.PERMIT),
        "returned a tuple whose item 0 is a sequence whose item 0 is 'a' (str); expected",
    ),
    (
        "reclaimable-string-victims",
        "reclaimable",
        ("a", Vote.PERMIT),
        "returned a tuple whose item 0 is 'a' (str); expected",
    ),
    ("job_enqueued-value", "job_enqueued", True, "returned True (bool); expected None"),
    ("allocate-int", "allocate", 3, "returned 3 (int); expected str | None"),
    ("deallocate-false", "deallocate", False, "returned False (bool); expected str | None"),
]


@pytest.mark.parametrize(
    ("hook", "value"), [c[1:] for c in CONFORMING], ids=[c[0] for c in CONFORMING]
)
def test_conforming_answer_passes(hook: str, value: object) -> None:
    assert check_answer(hook, value) is None


@pytest.mark.parametrize(
    ("hook", "value", "report"), [c[1:] for c in WRONG], ids=[c[0] for c in WRONG]
)
def test_wrong_answer_is_named(hook: str, value: object, report: str) -> None:
    problem = check_answer(hook, value)
    assert problem is not None and problem.startswith(report)
    assert problem.endswith(f"expected {EXPECTED[hook]}")


def test_a_long_answer_is_shortened() -> None:
    problem = check_answer("job_ready", "x" * 10_000)
    assert problem is not None and len(problem) < 120


def test_every_row_of_the_extension_point_table_has_a_check() -> None:
    """Derived from the table and Plugin's annotations, not a parallel list."""
    assert set(COMPILED) == set(DECLARED) == {point.hook for point in EXTENSION_POINTS}


def test_an_annotation_it_cannot_check_is_refused() -> None:
    with pytest.raises(TypeError, match="no contract check"):
        compile_form(frozenset[int])


class ReturnsGiven(Plugin):
    """Every hook answers ``value``, whatever it is (``type: ignore``: that is the point)."""

    name = "returns-given"

    def __init__(self, value: object) -> None:
        super().__init__(Arguments())
        self.value = value

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return self.value  # type: ignore[return-value]

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return self.value  # type: ignore[return-value]

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> object:  # type: ignore[override]
        return self.value

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> object:  # type: ignore[override]
        return self.value

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return self.value  # type: ignore[return-value]

    def job_enqueued(self, job: JobInfo) -> None:
        return self.value  # type: ignore[return-value]

    def overused(self, queue: QueueInfo) -> bool:
        return self.value  # type: ignore[return-value]

    def job_ready(self, job: JobInfo) -> bool:
        return self.value  # type: ignore[return-value]

    def allocate(self, task: TaskInfo) -> str | None:
        return self.value  # type: ignore[return-value]

    def deallocate(self, task: TaskInfo) -> str | None:
        return self.value  # type: ignore[return-value]


def ask(hook: str, value: object) -> object:
    """Ask a framework of one ReturnsGiven plugin the verb of ``hook``."""
    point = BY_HOOK[hook]
    fw = framework([("given", ReturnsGiven(value))])
    job = JobInfo(UID="j", Name="j", Namespace="default", Queue="q")
    node = NodeInfo(Name="n1")
    call = {
        "predicate": lambda: fw.first_failure(point, EVICTEE, node),
        "node_order": lambda: fw.score_sum(point, EVICTEE, [node]),
        "preemptable": lambda: fw.victims(point, task("x"), [EVICTEE]),
        "reclaimable": lambda: fw.victims(point, task("x"), [EVICTEE]),
        "job_enqueueable": lambda: fw.vote(point, job),
        "job_enqueued": lambda: fw.notify(point, job),
        "overused": lambda: fw.any_true(point, QueueInfo(Name="q")),
        "job_ready": lambda: fw.all_true(point, job),
        "allocate": lambda: fw.event(point, EVICTEE),
        "deallocate": lambda: fw.event(point, EVICTEE),
    }[hook]
    return call()


FRAMEWORK_WRONG = [c for c in WRONG if c[1] != "on_session_close"]


@pytest.mark.parametrize(
    ("hook", "value", "report"),
    [c[1:] for c in FRAMEWORK_WRONG],
    ids=[c[0] for c in FRAMEWORK_WRONG],
)
def test_the_framework_never_coerces_a_wrong_type(hook: str, value: object, report: str) -> None:
    """The plugin's failure, attributed (plugin, verb, what it returned), not an answer."""
    with pytest.raises(PluginFailure) as caught:
        ask(hook, value)
    failure = caught.value
    assert (failure.plugin, failure.verb, failure.kind) == (
        "given",
        BY_HOOK[hook].verb,
        "wrong_type",
    )
    assert str(failure).startswith(
        f"plugin given failed in {BY_HOOK[hook].verb}: (wrong_type) {report}"
    )


@pytest.mark.parametrize(
    ("hook", "value"),
    [c[1:] for c in CONFORMING if c[1] != "on_session_close"],
    ids=[c[0] for c in CONFORMING if c[1] != "on_session_close"],
)
def test_the_framework_takes_a_conforming_answer(hook: str, value: object) -> None:
    ask(hook, value)  # raises PluginFailure otherwise
