"""app/shadow_worker.py: where the shadow's process runs, measured in a child process of its own
(the test process keeps its CPUs and priority)."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import Connection

import pytest

from app import shadow_worker


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
