"""priority: the plugin-level parts of ``pkg/scheduler/plugins/priority/priority_test.go``
(TestPreempt's preemptees, TestUnifiedEvictableFn_GangReclaimPermitsAll's candidates through the
legacy hooks) plus the edge cases of plugins-part1.md §3.

TestPreempt runs Volcano's allocate and preempt actions (which victims get evicted, what gets
pipelined); that part belongs to the Go conformance suite. Here we check what the preemptable
hook answers for that test's objects.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import answer_of
from plugins.api.release import Release
from plugins.priority import PriorityPlugin
from schemas.api import JobInfo, PodGroup, TaskInfo, TaskStatus

ALL_VERSIONS = [(1, minor) for minor in range(6, 17)]


def make_job(namespace: str, name: str, priority: int, uid: str | None = None) -> JobInfo:
    return JobInfo(
        UID=uid if uid is not None else f"{namespace}/{name}",
        Name=name,
        Namespace=namespace,
        Queue="q1",
        Priority=priority,
        PodGroup=PodGroup(),
    )


def make_task(
    namespace: str,
    name: str,
    group: str,
    priority: int = 1,
    status: TaskStatus = TaskStatus.Running,
) -> TaskInfo:
    # Pods built without spec.priority get task priority 1 (NewTaskInfo's default).
    return TaskInfo(
        UID=f"uid-{namespace}-{name}",
        Job=f"{namespace}/{group}",
        Name=name,
        Namespace=namespace,
        Priority=priority,
        Status=int(status),
    )


def make_plugin(jobs: Sequence[JobInfo], version: tuple[int, int] = (1, 16)) -> PriorityPlugin:
    plugin = PriorityPlugin(Arguments({}, plugin="priority"))
    plugin.on_session_open(
        Session(
            jobs={f"{j.Namespace}/{j.Name}": j for j in jobs},
            has_snapshot=True,
            release=Release.of(version),
        )
    )
    return plugin


def names(tasks: Sequence[TaskInfo]) -> list[str]:
    return [t.Name for t in tasks]


# --- TestPreempt (plugin-level part) ----------------------------------------------------------
# PriorityClasses low-priority=100 and high-priority=1000 resolve into JobInfo.Priority:
# pg1 (ns1, low-priority) and pg2 (ns2, high-priority). preemptor1 is pg2's pending task.


@pytest.mark.parametrize(
    ("preemptees", "expected"),
    [
        (
            [
                make_task("ns1", "preemptee1", "pg1"),
                make_task("ns1", "preemptee2", "pg1", priority=1000),
            ],
            ["preemptee1", "preemptee2"],
        ),
        (
            [make_task("ns1", "preemptee1", "pg1"), make_task("ns1", "preemptee2", "pg1")],
            ["preemptee1", "preemptee2"],
        ),
    ],
    ids=[
        "enable preempt low priority: enablePreemptable:true",
        "disable preempt low priority: enablePreemptable:false",
    ],
)
def test_preempt(preemptees: list[TaskInfo], expected: list[str]) -> None:
    # Case 1: both preemptees pass the cross-job test (job priority 100 < 1000), whatever their
    # task priority; Volcano's victim queue then evicts preemptee1 only (action level).
    # Case 2: the hook would answer the same, but with enablePreemptable false Volcano never
    # consults it (no evictions); that gating is the framework's, tested in tests/app and in the
    # service test, not a property of the plugin.
    plugin = make_plugin([make_job("ns1", "pg1", 100), make_job("ns2", "pg2", 1000)])
    preemptor = make_task("ns2", "preemptor1", "pg2", status=TaskStatus.Pending)
    victims, vote = answer_of(plugin.preemptable(preemptor, preemptees))
    assert vote == Vote.PERMIT
    assert names(victims) == expected
    assert all(any(v is p for p in preemptees) for v in victims)


# --- TestUnifiedEvictableFn_GangReclaimPermitsAll (through the legacy hooks) -----------------
# UnifiedEvictableFn is in-tree only. Its GangPreempt expectation (only low-task, whose job
# priority 100 is below the evicting job's 500) is what PreemptableFn answers for the same
# candidates; its GangReclaim expectation (all candidates) is what the absence of a
# ReclaimableFn means in legacy reclaim: priority does not gate reclaim.


def test_gang_reclaim_permits_all_candidates_regardless_of_priority() -> None:
    high_task = make_task("ns1", "high-task", "pg-high")
    low_task = make_task("ns2", "low-task", "pg-low")
    reclaimer_job = make_job("ns3", "reclaimer", 500, uid="reclaimer")
    plugin = make_plugin(
        [make_job("ns1", "pg-high", 1000), make_job("ns2", "pg-low", 100), reclaimer_job]
    )
    assert "reclaimable" not in plugin.hooks()
    preemptor = make_task("ns3", "reclaimer-0", "reclaimer", status=TaskStatus.Pending)
    victims, vote = answer_of(plugin.preemptable(preemptor, [high_task, low_task]))
    assert vote == Vote.PERMIT
    assert names(victims) == ["low-task"]


# --- edge cases -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preemptor_priority", "preemptee_priorities", "expected"),
    [
        (10, [1, 10, 11], ["t1"]),
        (10, [9, 3, 100], ["t9", "t3"]),
        (1, [1, 0, -5], ["t0", "t-5"]),
        (10, [10, 20], []),
    ],
    ids=[
        "same job: lower task priority only",
        "same job: order preserved",
        "same job: zero and negative task priorities",
        "same job: nothing lower",
    ],
)
def test_same_job_compares_task_priority(
    preemptor_priority: int, preemptee_priorities: list[int], expected: list[str]
) -> None:
    # The job priority is irrelevant inside one job, even when it is the lowest of the session.
    plugin = make_plugin([make_job("ns", "pg", -100), make_job("ns", "other", 50)])
    preemptor = make_task("ns", "preemptor", "pg", priority=preemptor_priority)
    preemptees = [make_task("ns", f"t{p}", "pg", priority=p) for p in preemptee_priorities]
    victims, vote = answer_of(plugin.preemptable(preemptor, preemptees))
    assert (names(victims), vote) == (expected, Vote.PERMIT)


@pytest.mark.parametrize(
    ("job_priorities", "expected"),
    [
        ({"a": 1, "b": 499, "c": 500, "d": 501}, ["a-0", "b-0"]),
        ({"a": 600}, []),
        ({"a": -1}, ["a-0"]),
    ],
    ids=["cross job: lower job priority only", "cross job: higher job", "cross job: negative"],
)
def test_cross_job_compares_job_priority(
    job_priorities: dict[str, int], expected: list[str]
) -> None:
    jobs = [make_job("ns", name, prio) for name, prio in job_priorities.items()]
    plugin = make_plugin([*jobs, make_job("ns", "preemptor-job", 500)])
    # Task priorities are irrelevant across jobs: the preemptor's task is the lowest possible,
    # each preemptee's task the highest.
    preemptor = make_task("ns", "p", "preemptor-job", priority=-(2**31))
    preemptees = [make_task("ns", f"{name}-0", name, priority=2**31 - 1) for name in job_priorities]
    victims, vote = answer_of(plugin.preemptable(preemptor, preemptees))
    assert (names(victims), vote) == (expected, Vote.PERMIT)


def test_a_spared_preemptee_is_explained_with_both_priorities() -> None:
    plugin = make_plugin([make_job("ns", "a", 500), make_job("ns", "preemptor-job", 500)])
    preemptor = make_task("ns", "p", "preemptor-job", priority=1)
    result = plugin.preemptable(preemptor, [make_task("ns", "a-0", "a")])
    assert [r.message for r in result.vetoes.values()] == [
        "its job priority 500 is not below the preemptor's 500"
    ]
    same_job = plugin.preemptable(preemptor, [make_task("ns", "q", "preemptor-job", priority=3)])
    assert [r.code for r in same_job.vetoes.values()] == ["not-lower-priority"]
    assert "task priority 3" in next(iter(same_job.vetoes.values())).message


def test_jobs_are_compared_by_uid() -> None:
    # Two snapshot entries with the same JobInfo.UID take the same-job (task priority) branch:
    # compared as different jobs, x (job priority 1000 >= 1) would be protected.
    plugin = make_plugin(
        [make_job("ns", "a", 1000, uid="same"), make_job("ns", "b", 1, uid="same")]
    )
    preemptor = make_task("ns", "p", "b", priority=5)
    victims, _ = answer_of(plugin.preemptable(preemptor, [make_task("ns", "x", "a", priority=4)]))
    assert names(victims) == ["x"]


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=[f"v{a}.{b}" for a, b in ALL_VERSIONS])
def test_orphan_victim_is_skipped(version: tuple[int, int]) -> None:
    # v1.15+ skips a preemptee whose job is not in the session; older releases panicked, and
    # Caldera answers the guarded behaviour for every version.
    plugin = make_plugin([make_job("ns", "low", 1), make_job("ns", "high", 100)], version)
    preemptor = make_task("ns", "p", "high")
    preemptees = [
        make_task("ns", "orphan-a", "deleted-pg"),
        make_task("ns", "low-0", "low"),
        make_task("ns", "orphan-b", "deleted-pg"),
    ]
    victims, vote = answer_of(plugin.preemptable(preemptor, preemptees))
    assert (names(victims), vote) == (["low-0"], Vote.PERMIT)
    assert victims[0] is preemptees[1]


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=[f"v{a}.{b}" for a, b in ALL_VERSIONS])
def test_missing_preemptor_job_permits_nothing(version: tuple[int, int]) -> None:
    plugin = make_plugin([make_job("ns", "low", 1)], version)
    preemptor = make_task("ns", "p", "deleted-pg", priority=1_000_000)
    victims, vote = answer_of(
        plugin.preemptable(preemptor, [make_task("ns", "low-0", "low", priority=0)])
    )
    # An empty list with a vote: Volcano abandons the tier (the next tier is still tried).
    assert list(victims) == []
    assert vote == Vote.PERMIT


def test_all_orphans_or_empty_input_still_permit() -> None:
    plugin = make_plugin([make_job("ns", "high", 100)])
    preemptor = make_task("ns", "p", "high")
    assert answer_of(plugin.preemptable(preemptor, [])) == ([], Vote.PERMIT)
    victims, vote = answer_of(plugin.preemptable(preemptor, [make_task("ns", "o", "gone")]))
    assert (list(victims), vote) == ([], Vote.PERMIT)


def test_registered_hooks() -> None:
    plugin = make_plugin([])
    assert plugin.hooks() == frozenset({"preemptable"})
    assert PriorityPlugin.needs_snapshot
    assert set(PriorityPlugin.in_tree_only) == {
        "TaskOrderFn",
        "JobOrderFn",
        "SubJobOrderFn",
        "JobStarvingFn",
        "UnifiedEvictableFn",
    }
