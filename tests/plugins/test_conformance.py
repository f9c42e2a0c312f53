"""conformance: ``pkg/scheduler/plugins/conformance/conformance_test.go`` (TestConformancePlugin)
plus the edge cases of plugins-part1.md §4."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import answer_of
from plugins.conformance import CRITICAL_PRIORITY_CLASSES, ConformancePlugin
from schemas.api import TaskInfo, TaskStatus
from schemas.k8s import ObjectMeta, Pod, PodSpec, PodStatus


def make_task(
    namespace: str,
    name: str = "test-pod",
    priority_class: str = "",
    pod_namespace: str | None = None,
    with_pod: bool = True,
) -> TaskInfo:
    pod = Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace if pod_namespace is None else pod_namespace,
            annotations={"scheduling.k8s.io/group-name": "pg1"},
        ),
        spec=PodSpec(priorityClassName=priority_class),
        status=PodStatus(phase="Running"),
    )
    return TaskInfo(
        UID=f"{namespace}-{name}",
        Job=f"{namespace}/pg1",
        Name=name,
        Namespace=namespace,
        NodeName="test-node",
        Status=int(TaskStatus.Running),
        Pod=pod if with_pod else None,
    )


def make_plugin() -> ConformancePlugin:
    plugin = ConformancePlugin(Arguments({}, plugin="conformance"))
    plugin.on_session_open(Session())
    return plugin


def by_uid(tasks: Sequence[TaskInfo]) -> list[str]:
    return [t.UID for t in tasks]


KUBE_SYSTEM = make_task("kube-system")
REGULAR = make_task("test-namespace")
CLUSTER_CRITICAL = make_task("default", "cc", priority_class="system-cluster-critical")
NODE_CRITICAL = make_task("default", "nc", priority_class="system-node-critical")
OTHER_CLASS = make_task("default", "hi", priority_class="high-priority")
MISCASED_CLASS = make_task("default", "mc", priority_class="System-Cluster-Critical")
POD_IN_KUBE_SYSTEM = make_task("default", "pk", pod_namespace="kube-system")
NO_POD = make_task("default", "np", with_pod=False)
KUBE_SYSTEM_CRITICAL = make_task("kube-system", "ks", priority_class="system-node-critical")


@pytest.mark.parametrize(
    ("evictees", "expected"),
    [
        ([KUBE_SYSTEM, REGULAR], [REGULAR]),
        ([CLUSTER_CRITICAL, REGULAR], [REGULAR]),
        ([NODE_CRITICAL, REGULAR], [REGULAR]),
        ([CLUSTER_CRITICAL, NODE_CRITICAL, KUBE_SYSTEM, KUBE_SYSTEM_CRITICAL], []),
        ([], []),
        ([OTHER_CLASS, REGULAR, MISCASED_CLASS], [OTHER_CLASS, REGULAR, MISCASED_CLASS]),
        ([POD_IN_KUBE_SYSTEM], [POD_IN_KUBE_SYSTEM]),
        ([NO_POD, KUBE_SYSTEM], [NO_POD]),
        ([REGULAR, NODE_CRITICAL, OTHER_CLASS, KUBE_SYSTEM], [REGULAR, OTHER_CLASS]),
    ],
    ids=[
        "conformance plugin",
        "system-cluster-critical is protected",
        "system-node-critical is protected",
        "all critical: empty list with Permit",
        "no evictees: empty list with Permit",
        "other and mis-cased class names are victims",
        "the task namespace counts, not the pod's",
        "a task without a pod has no priority class",
        "input order is kept",
    ],
)
@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_conformance_plugin(hook: str, evictees: list[TaskInfo], expected: list[TaskInfo]) -> None:
    # Upstream calls ssn.Preemptable(&TaskInfo{}, ...): the evictor is ignored.
    result = getattr(make_plugin(), hook)(TaskInfo(), evictees)
    victims, vote = answer_of(result)
    assert vote == Vote.PERMIT
    assert by_uid(victims) == by_uid(expected)
    assert all(any(v is e for e in evictees) for v in victims)
    # every evictee left out is explained: its critical class, or kube-system
    spared = {t.UID for t in evictees} - {t.UID for t in victims}
    assert set(result.vetoes) == spared
    for task in evictees:
        if task.UID in spared:
            pod = task.Pod
            critical = (
                pod is not None
                and pod.spec is not None
                and (pod.spec.priorityClassName in CRITICAL_PRIORITY_CLASSES)
            )
            expected_code = "critical-priority-class" if critical else "kube-system"
            assert result.vetoes[task.UID].code == expected_code


def test_registered_hooks() -> None:
    assert make_plugin().hooks() == frozenset({"preemptable", "reclaimable"})
    assert not ConformancePlugin.needs_snapshot
    assert ConformancePlugin.in_tree_only == ("UnifiedEvictableFn",)
