"""bench/workloads.py builds Volcano's bodies by hand; they must carry what Volcano really sends.

For every verb captured from a real vc-scheduler (plugins/api/captured/volcano-1.14, -1.15), the body
the benchmark builds for that verb carries every key the capture carries, struct by struct, as
the typed views of ``schemas/`` decode them. A key the benchmark left out would make its
decoding cheaper than Volcano's real bodies and its figures flattering. (The benchmark may carry
more: Go omits empty optional fields, and the captures come from small, quiet clusters.)"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from bench import workloads
from plugins.api.extension_points import BY_VERB
from tests.examples import CAPTURED_BODIES
from tests.schemas.walk import walk

FIXTURES = CAPTURED_BODIES
CAPTURES = sorted(
    path for release in ("volcano-1.14", "volcano-1.15")
    for path in (FIXTURES / release).glob("*.request.json")
    if not path.name.startswith("onSessionClose")  # {}: nothing to compare
)  # fmt: skip
FILE_VERBS = {"allocateFunc": "allocate", "deallocateFunc": "deallocate"}


@cache
def bench_bodies() -> dict[str, bytes]:
    cluster = workloads.make_cluster(4, 40, metrics_time="2026-11-24T00:00:00Z")
    job = cluster.jobs[0]
    tasks = list(job.tasks.values())
    nodes = list(cluster.nodes.values())
    job_body = workloads.job_body(next(iter(cluster.job_bytes.values())))
    return {
        "onSessionOpen": workloads.session_open_body(cluster),
        "predicate": workloads.predicate_body(tasks[0], nodes[0]),
        "prioritize": workloads.prioritize_body(tasks[0], nodes),
        "preemptable": workloads.evict_body(tasks[0], tasks),
        "reclaimable": workloads.evict_body(tasks[0], tasks),
        "jobEnqueueable": job_body,
        "jobReady": job_body,
        "allocate": workloads.task_body(tasks[0]),
        "deallocate": workloads.task_body(tasks[0]),
        "queueOverused": json.dumps({"queue": next(iter(cluster.queues.values()))}).encode(),
    }


@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_bench_bodies_carry_every_key_volcano_sends(capture: Path) -> None:
    verb = FILE_VERBS.get(capture.name.split(".")[0], capture.name.split(".")[0])
    kind = BY_VERB[verb].request
    captured = walk(json.loads(capture.read_bytes()), kind)
    built = walk(json.loads(bench_bodies()[verb]), kind)
    missing = {
        struct: sorted(keys - built.get(struct, set()))
        for struct, keys in captured.items()
        if keys - built.get(struct, set())
    }
    assert missing == {}, f"bench/workloads.py's {verb} body lacks keys Volcano sends: {missing}"
