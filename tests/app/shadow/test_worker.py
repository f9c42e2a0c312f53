"""app/shadow/worker.py: where the shadow's process runs, measured in a child process of its own
(the test process keeps its CPUs and priority)."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from app.cluster_state.derive import derive
from app.shadow import worker as shadow_worker
from app.shadow.messages import (
    Failure,
    FullState,
    Loaded,
    Problem,
    SessionBegan,
    Skipped,
    ToParent,
)
from app.shadow.state import DeltaEncoder
from tests.app.cluster_state.objects import cluster
from tests.app.cluster_state.test_compare import matching_objects


def _placed(pinned: set[int], out: Connection) -> None:
    os.sched_setaffinity(0, pinned)
    shadow_worker.lowest_priority()
    out.send((os.sched_getscheduler(0), os.sched_getaffinity(0)))


def placed(pinned: set[int]) -> tuple[int, set[int]]:
    context = multiprocessing.get_context("fork")
    into, out = context.Pipe(duplex=False)
    child = context.Process(target=_placed, args=(pinned, out))
    child.start()
    answer: tuple[int, set[int]] = into.recv()
    child.join(10)
    return answer


CPUS = os.sched_getaffinity(0)


@pytest.mark.skipif(len(CPUS) < 2, reason="one CPU: nowhere else to go")
def test_a_shadow_of_a_pinned_live_process_runs_on_the_other_cpus_at_sched_idle() -> None:
    live = min(CPUS)
    policy, cpus = placed({live})
    assert policy == os.SCHED_IDLE
    assert live not in cpus and cpus <= CPUS


@pytest.mark.skipif(
    set(range(os.cpu_count() or 1)) != CPUS, reason="this test process is pinned itself"
)
def test_a_shadow_of_a_live_process_on_every_cpu_stays_on_them() -> None:
    _, cpus = placed(CPUS)
    assert cpus == CPUS


# --- sessionState cluster: each session opened on the state delta received for it ----------

SHADOW = 'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: overcommit\n'


def cluster_evaluator(tmp_path: Path) -> tuple[shadow_worker.Evaluator, list[ToParent]]:
    path = tmp_path / "shadow.yaml"
    path.write_text(SHADOW)
    reports: list[ToParent] = []
    evaluator = shadow_worker.Evaluator(path, reports.append, cluster=True)
    evaluator.reload()
    assert isinstance(reports[-1], Loaded), reports
    return evaluator, reports


def opened(evaluator: shadow_worker.Evaluator, session: int) -> bool:
    evaluator.handle(session, shadow_worker.OPEN, b"", b"{}")
    assert evaluator.extender is not None
    return evaluator.extender.sessions.framework()[1]


def test_a_cluster_session_opens_on_its_delta_and_never_on_a_stale_base(tmp_path: Path) -> None:
    evaluator, reports = cluster_evaluator(tmp_path)
    encoder = DeltaEncoder()
    state = derive(cluster(**matching_objects())).snapshot

    evaluator.receive_state(encoder.encode(state))
    assert opened(evaluator, 1)
    assert reports[-1] == SessionBegan(1, "")

    # A session whose delta was lost on the way: skipped, and the whole state asked for.
    encoder.encode(state)
    evaluator.receive_state(encoder.encode(state))
    assert reports[-1] == FullState()
    assert not opened(evaluator, 3)
    assert reports[-1] == Skipped(3, shadow_worker.STALE_BASE)

    # A session the live side opened with no state (the watch had not listed): no delta.
    assert not opened(evaluator, 4)
    assert reports[-1] == Skipped(4, shadow_worker.NOT_SYNCED)

    encoder.full_next()
    evaluator.receive_state(encoder.encode(state))
    assert opened(evaluator, 5)
    assert reports[-1] == SessionBegan(5, "")
    assert not [r for r in reports if isinstance(r, Failure | Problem)], reports


def test_a_snapshot_only_plugin_is_refused_with_the_reason_in_cluster_mode(tmp_path: Path) -> None:
    path = tmp_path / "shadow.yaml"
    path.write_text('volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: usage\n')
    reports: list[ToParent] = []
    shadow_worker.Evaluator(path, reports.append, cluster=True).reload()
    [problem] = reports
    assert isinstance(problem, Problem)
    assert (
        "tiers[0].plugins[0].name: plugin 'usage' cannot run with sessionState cluster"
        in problem.message
    )
    # The same file loads where the live configuration posts snapshots.
    reports.clear()
    shadow_worker.Evaluator(path, reports.append).reload()
    assert isinstance(reports[-1], Loaded), reports


def test_a_state_is_never_used_for_a_later_session(tmp_path: Path) -> None:
    """Session 1's state arrives while the shadow file does not load; once it loads, session 2
    (whose live side had no state) is not opened on session 1's."""
    path = tmp_path / "shadow.yaml"
    path.write_text("tiers: [")
    reports: list[ToParent] = []
    evaluator = shadow_worker.Evaluator(path, reports.append, cluster=True)
    evaluator.reload()
    assert isinstance(reports[-1], Problem)
    evaluator.receive_state(DeltaEncoder().encode(derive(cluster(**matching_objects())).snapshot))
    evaluator.handle(1, shadow_worker.OPEN, b"", b"{}")
    path.write_text(SHADOW)
    assert not opened(evaluator, 2)
    assert [type(r) for r in reports[-3:]] == [Loaded, SessionBegan, Skipped]
    assert reports[-1] == Skipped(2, shadow_worker.NOT_SYNCED)


def test_the_shadows_sessions_are_numbered_on_across_its_reloads(tmp_path: Path) -> None:
    """Issue 47 item 8: a reloaded shadow file builds new sessions, numbered on from the ones
    before, as the live process's are."""
    path = tmp_path / "shadow.yaml"
    path.write_text(SHADOW)
    reports: list[ToParent] = []
    evaluator = shadow_worker.Evaluator(path, reports.append)
    evaluator.reload()
    numbers = []
    for session, factor in enumerate(("1.0", "2.25", "1.5"), start=1):
        path.write_text(SHADOW + f"    arguments: {{overcommit-factor: {factor}}}\n")
        evaluator.handle(session, shadow_worker.OPEN, b"{}", b"{}")
        assert evaluator.extender is not None and evaluator.extender.sessions.current is not None
        numbers.append(evaluator.extender.sessions.current.number)
    assert [type(r) for r in reports].count(Loaded) == 4, reports  # each session on a new file
    assert numbers == [1, 2, 3]
