"""cdp: ``pkg/scheduler/plugins/cdp/cdp_test.go`` (Test_CooldownTimePlugin_podPreemptStableTime,
TestPreemptableFn) plus the edge cases of plugins-part1.md §7. The clock is injected."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import answer_of
from plugins.api.release import Release
from plugins.cdp import IN_COOLDOWN, CdpPlugin, in_cooldown, pod_cooldown_time
from schemas.api import TaskInfo
from schemas.k8s import ObjectMeta, Pod, PodCondition, PodSpec, PodStatus

NOW = datetime(2026, 8, 1, 12, 0, 0, tzinfo=UTC)
SECOND = 1_000_000_000
COOLDOWN = "volcano.sh/cooldown-time"
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
ALL_VERSIONS = [(1, minor) for minor in range(6, 17)]


def scheduled(at: datetime, status: str = "True") -> PodCondition:
    return PodCondition(type="PodScheduled", status=status, lastTransitionTime=at)


def make_pod(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduled_at: datetime | None = None,
    phase: str | None = None,
    conditions: list[PodCondition] | None = None,
) -> Pod:
    """Upstream ``makePod``: Running with one PodScheduled=True condition when ``scheduled_at``
    is given, else Pending without conditions; ``phase``/``conditions`` override that."""
    annotations = {**(annotations or {}), "scheduling.k8s.io/group-name": "test-group"}
    if conditions is None:
        conditions = [scheduled(scheduled_at)] if scheduled_at is not None else []
    if phase is None:
        phase = "Running" if scheduled_at is not None else "Pending"
    return Pod(
        metadata=ObjectMeta(
            name="test-pod", namespace="default", labels=labels, annotations=annotations
        ),
        spec=PodSpec(),
        status=PodStatus(phase=phase, conditions=conditions),
    )


def make_task(name: str, pod: Pod | None) -> TaskInfo:
    return TaskInfo(UID=name, Name=name, Namespace="default", Job="default/test-group", Pod=pod)


def make_plugin(version: tuple[int, int] = (1, 16), now: datetime = NOW) -> CdpPlugin:
    plugin = CdpPlugin(Arguments({}, plugin="cdp"))
    plugin.on_session_open(Session(release=Release.of(version), now=lambda: now))
    return plugin


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def uids(tasks: Sequence[TaskInfo]) -> list[str]:
    return [t.UID for t in tasks]


# --- Test_CooldownTimePlugin_podPreemptStableTime ---------------------------------------------


@pytest.mark.parametrize(
    ("pod", "want_value", "want_enabled"),
    [
        (make_pod({}, {COOLDOWN: "600s"}, ago(100)), 600 * SECOND, True),
        (make_pod({}, {COOLDOWN: "600abcde"}, ago(100)), 0, False),
        # edge cases
        (make_pod({COOLDOWN: "600abcde"}, {COOLDOWN: "600s"}, ago(100)), 0, False),
        (make_pod({COOLDOWN: "10m"}, {COOLDOWN: "bad"}, ago(100)), 600 * SECOND, True),
        (make_pod({}, {COOLDOWN: "600"}, ago(100)), 0, False),
        (make_pod({}, {COOLDOWN: ""}, ago(100)), 0, False),
        (make_pod({}, {COOLDOWN: "0s"}, ago(100)), 0, True),
        (make_pod({}, {COOLDOWN: "0"}, ago(100)), 0, True),
        (make_pod({}, {COOLDOWN: "-10s"}, ago(100)), -10 * SECOND, True),
        (make_pod({}, {COOLDOWN: "1.5m"}, ago(100)), 90 * SECOND, True),
        (make_pod({}, {}, ago(100)), 0, False),
        (make_pod(None, None, ago(100)), 0, False),
        (None, 0, False),
    ],
    ids=[
        "normal",
        "not-enabled",
        "label wins even if invalid",
        "label wins over an invalid annotation",
        "unitless 600 is disabled",
        "empty value is disabled",
        "zero is enabled",
        "bare zero is enabled",
        "negative is enabled",
        "fraction",
        "no key",
        "no labels",
        "no pod",
    ],
)
def test_pod_cooldown_time(pod: Pod | None, want_value: int, want_enabled: bool) -> None:
    assert pod_cooldown_time(pod) == (want_value, want_enabled)


# --- TestPreemptableFn -----------------------------------------------------------------------


def test_preemptable_fn() -> None:
    task1 = make_task("task1", make_pod(PREEMPTABLE, {COOLDOWN: "600s"}, ago(100)))  # protected
    task2 = make_task("task2", make_pod(PREEMPTABLE, {COOLDOWN: "600abcde"}, ago(100)))  # invalid
    task3 = make_task("task3", make_pod(PREEMPTABLE, {COOLDOWN: "600s"}, ago(800)))  # expired
    preemptees = [task1, task2, task3]
    victims, vote = answer_of(make_plugin().preemptable(TaskInfo(), preemptees))
    assert vote == Vote.PERMIT
    assert uids(victims) == ["task2", "task3"]
    assert victims[0] is task2 and victims[1] is task3
    assert make_plugin().preemptable(TaskInfo(), preemptees).vetoes == {"task1": IN_COOLDOWN}


# --- the cooldown window ------------------------------------------------------------------------

US = timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("pod", "protected"),
    [
        (make_pod({}, {COOLDOWN: "600s"}, NOW - timedelta(seconds=600) + US), True),
        (make_pod({}, {COOLDOWN: "600s"}, NOW - timedelta(seconds=600)), False),
        (make_pod({}, {COOLDOWN: "600s"}, NOW - timedelta(seconds=600) - US), False),
        (make_pod({}, {COOLDOWN: "0s"}, ago(100)), False),
        (make_pod({}, {COOLDOWN: "0s"}, NOW), False),
        (make_pod({}, {COOLDOWN: "0s"}, NOW + US), True),
        (make_pod({}, {COOLDOWN: "-10s"}, NOW + timedelta(seconds=60)), True),
        (make_pod({}, {COOLDOWN: "-10s"}, NOW + timedelta(seconds=10)), False),
        (make_pod({}, {COOLDOWN: "-10s"}, ago(1)), False),
        (make_pod({}, {COOLDOWN: "600"}, ago(1)), False),
        (make_pod({COOLDOWN: "x"}, {COOLDOWN: "1h"}, ago(1)), False),
        (make_pod({}, {COOLDOWN: "1h"}, ago(1), phase="Pending"), False),
        (make_pod({}, {COOLDOWN: "1h"}, ago(1), phase="Succeeded"), False),
        (make_pod({}, {COOLDOWN: "1h"}, ago(1), phase="Failed"), False),
        (make_pod({}, {COOLDOWN: "1h"}, ago(1), phase=""), False),
        (make_pod({}, {COOLDOWN: "1h"}, None, phase="Running"), False),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[scheduled(ago(800)), scheduled(ago(10))]),
            False,
        ),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[scheduled(ago(10)), scheduled(ago(800))]),
            True,
        ),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[scheduled(ago(10), status="False"), scheduled(ago(800))]),
            False,
        ),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[scheduled(ago(800), status="False"), scheduled(ago(10))]),
            True,
        ),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[PodCondition(type="Ready", status="True",
                                              lastTransitionTime=ago(10)),
                                 scheduled(ago(800))]),
            False,
        ),
        (
            make_pod({}, {COOLDOWN: "600s"}, phase="Running",
                     conditions=[PodCondition(type="PodScheduled", status="True")]),
            False,
        ),
        (make_pod({}, {COOLDOWN: "2540400h"}, datetime(1, 1, 1, tzinfo=UTC)), False),
    ],
    ids=[
        "one microsecond inside the cooldown",
        "exactly at the end is not protected",
        "one microsecond after the end",
        "zero duration, scheduled in the past",
        "zero duration, scheduled now",
        "zero duration, scheduled in the future",
        "negative duration, transition far in the future",
        "negative duration, transition at the boundary",
        "negative duration, transition in the past",
        "unitless 600 is disabled",
        "invalid label wins over a valid annotation",
        "Pending pods are victims",
        "Succeeded pods are victims",
        "Failed pods are victims",
        "pods without a phase are victims",
        "Running without a PodScheduled condition",
        "only the first PodScheduled=True counts (old first)",
        "only the first PodScheduled=True counts (recent first)",
        "PodScheduled=False is skipped, then the old True counts",
        "PodScheduled=False is skipped, then the recent True counts",
        "other condition types are ignored",
        "a null lastTransitionTime is Go's zero time",
        "zero time plus 290 years is long past",
    ],
)  # fmt: skip
def test_in_cooldown(pod: Pod, protected: bool) -> None:
    assert in_cooldown(pod, NOW) is protected
    task = make_task("t", pod)
    victims, vote = answer_of(make_plugin().preemptable(TaskInfo(), [task]))
    assert vote == Vote.PERMIT
    assert uids(victims) == ([] if protected else ["t"])


# --- hooks and versions ---------------------------------------------------------------------


def test_all_protected_is_an_empty_list_with_permit() -> None:
    tasks = [make_task(f"t{i}", make_pod({}, {COOLDOWN: "1h"}, ago(i))) for i in range(3)]
    assert answer_of(make_plugin().preemptable(TaskInfo(), tasks)) == ([], Vote.PERMIT)
    assert answer_of(make_plugin().reclaimable(TaskInfo(), tasks)) == ([], Vote.PERMIT)
    assert answer_of(make_plugin().preemptable(TaskInfo(), [])) == ([], Vote.PERMIT)


def test_task_without_pod_is_a_victim() -> None:
    task = make_task("t", None)
    assert uids(answer_of(make_plugin().preemptable(TaskInfo(), [task]))[0]) == ["t"]


def test_follows_the_injected_clock() -> None:
    pod = make_pod({}, {COOLDOWN: "10m"}, NOW)
    task = make_task("t", pod)
    clock = [NOW]
    plugin = CdpPlugin(Arguments({}))
    plugin.on_session_open(Session(now=lambda: clock[0]))
    answers = []
    for minutes in (0, 9, 10, 11):
        clock[0] = NOW + timedelta(minutes=minutes)
        answers.append(uids(answer_of(plugin.preemptable(TaskInfo(), [task]))[0]))
    assert answers == [[], [], ["t"], ["t"]]


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=[f"v{a}.{b}" for a, b in ALL_VERSIONS])
def test_reclaimable_only_from_v1_12(version: tuple[int, int]) -> None:
    protected = make_task("protected", make_pod({}, {COOLDOWN: "1h"}, ago(10)))
    expired = make_task("expired", make_pod({}, {COOLDOWN: "1h"}, ago(7200)))
    plugin = make_plugin(version)
    # Preemptable is registered at every release that has cdp (v1.7+; v1.6 hosts the v1.7 one).
    assert "preemptable" in plugin.hooks()
    assert uids(answer_of(plugin.preemptable(TaskInfo(), [protected, expired]))[0]) == ["expired"]
    victims, vote = answer_of(plugin.reclaimable(TaskInfo(), [protected, expired]))
    if version >= (1, 12):
        assert "reclaimable" in plugin.hooks()
        assert (uids(victims), vote) == (["expired"], Vote.PERMIT)
    else:
        assert "reclaimable" not in plugin.hooks()
        assert vote == Vote.ABSTAIN


def test_registered_hooks() -> None:
    assert make_plugin().hooks() == frozenset({"preemptable", "reclaimable"})
    assert not CdpPlugin.needs_snapshot
    assert CdpPlugin.in_tree_only == ()
