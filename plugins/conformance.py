"""``conformance``: never evict critical pods or anything in ``kube-system``.

Follows ``pkg/scheduler/plugins/conformance/conformance.go`` of volcano-sh/volcano at ed72c7c81
(master, 2026-08-20; the same file as v1.15.0+). The Preemptable/Reclaimable filter is unchanged
from v1.6.0, so nothing branches on ``ssn.release``.

One filter serves both preempt and reclaim: an evictee is protected when its pod's
``spec.priorityClassName`` is ``system-cluster-critical`` or ``system-node-critical`` (the class
*name*, not its value) or when the task's namespace is ``kube-system``. The evictor is ignored.
The vote is always Permit, so when every evictee is protected the empty answer blocks the rest of
the tier.

Go reads ``evictee.Pod.Spec`` unguarded (a task without a pod would crash the scheduler; Volcano
never builds one); Caldera treats a missing pod as having no priority class.

What the extender cannot carry (``in_tree_only``): ``UnifiedEvictableFn`` (v1.15+, the same
filter for the gang-aware actions) is called in-process only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from plugins.api import EvictResult, Explained, Plugin, Reason, Upstream, Vote, register
from schemas.api import TaskInfo

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
"""``scheduling.SystemClusterCritical`` and ``scheduling.SystemNodeCritical``."""
SYSTEM_NAMESPACE = "kube-system"
"""``metav1.NamespaceSystem``."""


PROTECTED = {
    **{name: Reason("critical-priority-class", f"priorityClassName {name} is never evicted")
       for name in CRITICAL_PRIORITY_CLASSES},
    SYSTEM_NAMESPACE: Reason("kube-system", f"a pod of {SYSTEM_NAMESPACE} is never evicted"),
}  # fmt: skip
"""Why conformance spares a pod, by its priority class or its namespace (built once)."""


def protection(task: TaskInfo) -> Reason | None:
    """Why ``task`` may not be evicted (a critical priority class, checked first as upstream
    does, or kube-system), or None when it may."""
    pod = task.Pod
    class_name = pod.spec.priorityClassName if pod is not None and pod.spec is not None else ""
    if class_name in CRITICAL_PRIORITY_CLASSES:
        return PROTECTED[class_name]
    if task.Namespace == SYSTEM_NAMESPACE:
        return PROTECTED[SYSTEM_NAMESPACE]
    return None


def _evictable(evictees: Sequence[TaskInfo]) -> Explained[EvictResult]:
    victims: list[TaskInfo] = []
    vetoes: dict[str, Reason] = {}
    for task in evictees:
        reason = protection(task)
        if reason is None:
            victims.append(task)
        else:
            vetoes[task.UID] = reason
    return Explained((victims, Vote.PERMIT), vetoes=vetoes)


@register
class ConformancePlugin(Plugin):
    name: ClassVar[str] = "conformance"
    on_error: ClassVar[Literal["fail", "abstain"]] = "fail"
    """Its answer protects critical pods from eviction: abstaining would offer them."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/conformance/conformance.go",),
        commit="ed72c7c81",
        releases="v1.6.0 and later",
    )
    needs_snapshot: ClassVar[bool] = False
    in_tree_only: ClassVar[tuple[str, ...]] = ("UnifiedEvictableFn",)

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return _evictable(preemptees)

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return _evictable(reclaimees)
