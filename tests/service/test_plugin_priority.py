"""priority through the real server: /preemptable keeps lower-priority work as victims (job
priority across jobs, task priority inside a job); it registers no reclaimable and needs the
onSessionOpen snapshot."""

from __future__ import annotations

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, evict, job, open_session, task

JOBS = [job("ns1", "pg1", priority=100), job("ns2", "pg2", priority=1000)]
PREEMPTOR = task("ns2", "preemptor1", "pg2", status=TASK_PENDING, phase="Pending")
PREEMPTEE1 = task("ns1", "preemptee1", "pg1", labels={"volcano.sh/preemptable": "true"})
PREEMPTEE2 = task("ns1", "preemptee2", "pg1", priority=1000,
                  labels={"volcano.sh/preemptable": "true"})  # fmt: skip


async def test_priority_preemptable(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config("name: priority"))
    # Before any session the plugin is not consulted: the extender abstains.
    assert await evict(server, "preemptable", PREEMPTOR, [PREEMPTEE1]) == {
        "status": 0,
        "victims": [],
    }
    await open_session(server, JOBS)
    # TestPreempt "enable preempt low priority": both preemptees are in a lower-priority job.
    answer = await evict(server, "preemptable", PREEMPTOR, [PREEMPTEE1, PREEMPTEE2])
    assert answer == {"status": 1, "victims": [PREEMPTEE1, PREEMPTEE2]}
    # Inside one job the task priority decides; an orphan (its job is not in the session) is
    # skipped, as Volcano v1.15+ does.
    orphan = task("ns1", "orphan", "deleted-pg")
    same_job_high = task("ns2", "sibling-high", "pg2", priority=5)
    same_job_low = task("ns2", "sibling-low", "pg2", priority=0)
    answer = await evict(server, "preemptable", PREEMPTOR,
                         [orphan, same_job_high, same_job_low, PREEMPTEE2])  # fmt: skip
    assert answer == {"status": 1, "victims": [same_job_low, PREEMPTEE2]}
    # Nothing lower: an empty list with Permit (the tier is blocked).
    low_preemptor = task("ns1", "low", "pg1", priority=1, status=TASK_PENDING, phase="Pending")
    answer = await evict(server, "preemptable", low_preemptor, [task("ns2", "x", "pg2")])
    assert answer == {"status": 1, "victims": []}
    # A preemptor whose job is not in the session evicts nothing.
    stray = task("ns3", "stray", "gone", status=TASK_PENDING, phase="Pending")
    assert await evict(server, "preemptable", stray, [PREEMPTEE1]) == {"status": 1, "victims": []}
    # No ReclaimableFn: reclaim is not gated by priority.
    assert await evict(server, "reclaimable", PREEMPTOR, [PREEMPTEE1]) == {
        "status": 0,
        "victims": [],
    }


async def test_priority_preemptable_disabled(caldera_server: StartCaldera) -> None:
    # TestPreempt "disable preempt low priority": with enablePreemptable false Volcano never
    # consults the plugin, so there are no victims.
    server = await caldera_server(config("name: priority\nenablePreemptable: false"))
    await open_session(server, JOBS)
    assert await evict(server, "preemptable", PREEMPTOR, [PREEMPTEE1, PREEMPTEE2]) == {
        "status": 0,
        "victims": [],
    }
