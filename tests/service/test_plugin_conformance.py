"""conformance through the real server: /preemptable and /reclaimable never return critical pods
or kube-system tasks, and answer Permit even when nothing is left."""

from __future__ import annotations

import pytest

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import TASK_PENDING, config, evict, task

EVICTOR = task("team-a", "evictor", "pg-a", status=TASK_PENDING, phase="Pending")
KUBE_SYSTEM = task("kube-system", "test-pod", "pg1")
REGULAR = task("test-namespace", "test-pod", "pg1")
CLUSTER_CRITICAL = task("team-b", "cc", "pg-b", priority_class="system-cluster-critical")
NODE_CRITICAL = task("team-b", "nc", "pg-b", priority_class="system-node-critical")
OTHER_CLASS = task("team-b", "hi", "pg-b", priority_class="high-priority")


@pytest.mark.parametrize("verb", ["preemptable", "reclaimable"])
async def test_conformance_filter(caldera_server: StartCaldera, verb: str) -> None:
    server = await caldera_server(config("name: conformance"))
    # No session needed (conformance reads only the evictees).
    answer = await evict(server, verb, EVICTOR, [KUBE_SYSTEM, REGULAR])
    assert answer == {"status": 1, "victims": [REGULAR]}
    answer = await evict(
        server, verb, EVICTOR, [CLUSTER_CRITICAL, OTHER_CLASS, NODE_CRITICAL, REGULAR]
    )
    assert answer == {"status": 1, "victims": [OTHER_CLASS, REGULAR]}
    answer = await evict(server, verb, EVICTOR, [CLUSTER_CRITICAL, NODE_CRITICAL, KUBE_SYSTEM])
    assert answer == {"status": 1, "victims": []}
