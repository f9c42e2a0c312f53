"""``extender.managedResources``: Volcano's ``IsInterested`` test, applied on our side too.

Volcano (v1.13+) skips the HTTP call for a task none of whose containers or init containers
request or limit a managed resource. Caldera applies the same test, so a body that reaches it
anyway (an older Volcano, a misconfigured extender, a curl) gets the answer Volcano would have
used: predicate passes, prioritize adds nothing, preemptable/reclaimable abstain, and
allocate/deallocate are no-ops.
"""

from __future__ import annotations

from collections.abc import Collection

from schemas.api import TaskInfo


def is_interested(task: TaskInfo, managed: Collection[str]) -> bool:
    if not managed:
        return True
    pod = task.Pod
    if pod is None or pod.spec is None:
        return False
    for containers in (pod.spec.containers, pod.spec.initContainers):
        for container in containers or ():
            resources = container.resources
            if resources is None:
                continue
            for listing in (resources.requests, resources.limits):
                if listing and any(name in listing for name in managed):
                    return True
    return False
