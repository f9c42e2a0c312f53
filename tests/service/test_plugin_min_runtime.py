"""min-runtime through the real server: a Volcano-shaped snapshot with a three-level queue tree
(``root`` → research → research-vision → two leaves, and root → prod → prod-web), the start
time from the KAI annotation or from the pods' PodScheduled conditions, and /preemptable and
/reclaimable called as Volcano's preempt (same queue) and reclaim (other queues) actions call
them. The server's own clock is used, with minutes of margin counted from when each session's
snapshot is built."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import (
    TASK_PENDING,
    config,
    evict,
    job,
    open_session,
    rfc3339,
    scheduled_condition,
    task,
)

NS = "research"
LAST_START = "kai.scheduler/last-start-timestamp"
PLUGIN = """\
name: min-runtime
arguments:
  defaultPreemptMinRuntime: 2m
  defaultReclaimMinRuntime: 1d
  reclaimResolveMethod: lca
"""


def queue_info(name: str, parent: str = "", **annotations: str) -> dict[str, Any]:
    """A QueueInfo as Volcano 1.14+ marshals it (``metadata``/``spec``/``status``)."""
    spec: dict[str, Any] = {"weight": 1, "guarantee": {}}
    if parent:
        spec["parent"] = parent
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = {k.replace("_", "-"): v for k, v in annotations.items()}
    return {"UID": name, "Name": name, "Weight": 1, "Weights": "", "Hierarchy": "",
            "Queue": {"metadata": meta, "spec": spec, "status": {"state": "Open"}}}  # fmt: skip


QUEUES = [
    queue_info("root"),
    queue_info("research", "root", preempt_min_runtime="5m", reclaim_min_runtime="10m"),
    queue_info("research-vision", "research"),
    queue_info("vision-a", "research-vision", preempt_min_runtime="0s"),
    queue_info("vision-b", "research-vision", reclaim_min_runtime="1h"),
    queue_info("prod", "root"),
    queue_info("prod-web", "prod"),
]


def running(name: str, group: str, scheduled_ago: timedelta | None = None) -> dict[str, Any]:
    conditions = None
    if scheduled_ago is not None:
        conditions = [scheduled_condition(datetime.now(UTC) - scheduled_ago)]
    return task(NS, name, group, labels={"volcano.sh/preemptable": "true"}, conditions=conditions)


def pending(name: str, group: str) -> dict[str, Any]:
    return task(NS, name, group, status=TASK_PENDING, phase="Pending")


def vjob(
    name: str,
    queue: str,
    tasks: list[dict[str, Any]],
    *,
    min_member: int,
    started_ago: timedelta | None = None,
) -> dict[str, Any]:
    body = job(NS, name)
    body["Queue"] = queue
    body["MinAvailable"] = min_member
    body["Tasks"] = {t["UID"]: t for t in tasks}
    body["PodGroup"]["spec"].update(minMember=min_member, queue=queue)
    body["PodGroup"]["status"]["phase"] = (
        "Running" if tasks[0]["Status"] != TASK_PENDING else "Inqueue"
    )
    if started_ago is not None:
        stamp = rfc3339(datetime.now(UTC) - started_ago)
        body["PodGroup"]["metadata"]["annotations"] = {LAST_START: stamp}
    return body


# Gang of two in vision-b, started 20 minutes ago (the KAI annotation).
TRAIN = [running(f"train-{i}", "train") for i in range(2)]
NEW_A = pending("new-a-0", "new-a")
NEW_B = pending("new-b-0", "new-b")
NEW_WEB = pending("new-web-0", "new-web")


@dataclass(frozen=True)
class Cluster:
    eval: list[dict[str, Any]]
    serve: list[dict[str, Any]]
    jobs: list[dict[str, Any]]


def cluster() -> Cluster:
    """The snapshot's start times, from the clock now: called right before a session opens, so
    the minutes of margin hold however long the suite ran before this test (built at import,
    serve's 2 minutes became more than research's 5m under a loaded whole-suite run)."""
    # One pod in vision-a, scheduled a minute ago (no annotation: from PodScheduled).
    eval_ = [running("eval-0", "eval", timedelta(minutes=1))]
    # Elastic in vision-b: minMember 1 of 3, scheduled two minutes ago.
    serve = [running(f"serve-{i}", "serve", timedelta(minutes=2)) for i in range(3)]
    jobs = [
        vjob("train", "vision-b", TRAIN, min_member=2, started_ago=timedelta(minutes=20)),
        vjob("eval", "vision-a", eval_, min_member=1),
        vjob("serve", "vision-b", serve, min_member=1),
        vjob("new-a", "vision-a", [NEW_A], min_member=1),
        vjob("new-b", "vision-b", [NEW_B], min_member=1),
        vjob("new-web", "prod-web", [NEW_WEB], min_member=1),
    ]
    return Cluster(eval_, serve, jobs)


async def test_min_runtime_preemptable_and_reclaimable(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config(PLUGIN, version="1.15"))
    now = cluster()
    # No session yet: not consulted, the extender abstains.
    assert await evict(server, "preemptable", NEW_A, now.eval) == {"status": 0, "victims": []}
    await open_session(server, now.jobs, QUEUES)
    eval_, serve = now.eval, now.serve

    # preempt in vision-a: its own 0s stops inheritance (research's 5m is not used).
    assert await evict(server, "preemptable", NEW_A, eval_) == {"status": 1, "victims": eval_}

    # preempt in vision-b: vision-b and research-vision set nothing, research's 5m applies.
    # The gang ran 20 minutes: free. The elastic job ran 2 minutes: protected, so it keeps
    # its minMember (1 of 3 running): two of the three go.
    answer = await evict(server, "preemptable", NEW_B, [*TRAIN, *serve])
    assert answer == {"status": 1, "victims": [*TRAIN, serve[0], serve[1]]}

    # reclaim from prod-web (another top-level tree): the LCA is root, one step down is
    # research: 10m. The gang ran 20 minutes: free. The elastic job is protected and already
    # gave two victims this session: serve-0 again, never serve-2.
    answer = await evict(server, "reclaimable", NEW_WEB, [*TRAIN, serve[2], serve[0]])
    assert answer == {"status": 1, "victims": [*TRAIN, serve[0]]}

    # reclaim from vision-a (a sibling leaf): the LCA is research-vision, one step down is
    # vision-b: 1h. The gang ran 20 minutes: protected, so nothing may go (Permit, empty).
    assert await evict(server, "reclaimable", NEW_A, TRAIN) == {"status": 1, "victims": []}

    # A task whose job is not in the session passes; the evictees come back byte for byte.
    stray = running("stray-0", "deleted-group")
    answer = await evict(server, "reclaimable", NEW_A, [stray, *TRAIN])
    assert answer == {"status": 1, "victims": [stray]}

    # A new session starts a new budget: serve gives two again.
    later = cluster()
    await open_session(server, later.jobs, QUEUES)
    answer = await evict(server, "reclaimable", NEW_WEB, later.serve)
    assert answer == {"status": 1, "victims": later.serve[:2]}


def legacy_queue(name: str, parent: str = "", **annotations: str) -> dict[str, Any]:
    """A QueueInfo as Volcano 1.13 and earlier marshal it (flattened metadata, ``Spec``)."""
    body: dict[str, Any] = {"name": name, "uid": f"uid-{name}",
                            "Spec": {"Weight": 1, "parent": parent}, "Status": {"State": "Open"}}  # fmt: skip
    if annotations:
        body["annotations"] = {k.replace("_", "-"): v for k, v in annotations.items()}
    return {"UID": name, "Name": name, "Weight": 1, "Queue": body}


async def test_min_runtime_reads_legacy_queue_and_podgroup_shapes(
    caldera_server: StartCaldera,
) -> None:
    server = await caldera_server(config(PLUGIN, version="1.13"))
    queues = [
        legacy_queue("root"),
        legacy_queue("team", "root", reclaim_min_runtime="5m"),
        legacy_queue("team-a", "team"),
        legacy_queue("team-b", "team", preempt_min_runtime="1h"),
    ]
    gang = [running("gang-0", "gang")]
    gang_job = vjob("gang", "team-b", gang, min_member=1)
    stamp = rfc3339(datetime.now(UTC) - timedelta(minutes=10))
    gang_job["PodGroup"] = {"name": "gang", "namespace": NS, "annotations": {LAST_START: stamp},
                            "Spec": {"MinMember": 1, "Queue": "team-b"},
                            "Status": {"Phase": "Running"}, "Version": "v1beta1"}  # fmt: skip
    reclaimer = pending("r-0", "r")
    await open_session(server, [gang_job, vjob("r", "team-a", [reclaimer], min_member=1)], queues)
    # LCA team, one step down team-b (no reclaim value), then team's 5m, not the 1d default:
    # 10 minutes are enough.
    assert await evict(server, "reclaimable", reclaimer, gang) == {"status": 1, "victims": gang}
    # preempt: team-b's own 1h, not the 2m default: 10 minutes are not enough.
    assert await evict(server, "preemptable", reclaimer, gang) == {"status": 1, "victims": []}
