"""The suite's taint-toleration plugin (tests/plugins/taint_toleration.py) on Volcano-shaped
JSON: the node's ``spec.taints`` and the pod's ``spec.tolerations`` as Kubernetes writes them,
decoded by the same view the server uses, then read through the documented lazy attributes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from plugins.api import Arguments, FitError, StatusCode
from schemas.api import NodeInfo, TaskInfo
from schemas.k8s import Node, NodeSpec, Pod, PodSpec, Taint, Toleration
from schemas.lazy import raw
from tests.plugins.taint_toleration import TaintToleration, tolerates

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
SPOT = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
# Admission adds these two to every pod (DefaultTolerationSeconds).
DEFAULTS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
]  # fmt: skip

UNTOLERATED_GPU = "node(s) had untolerated taint {nvidia.com/gpu: present}"

# name: (node taints, pod tolerations, the message of the FitError or None when it fits)
CASES: dict[str, tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None, str | None]] = {
    "an untainted node fits any pod": (None, None, None),
    "an empty taint list fits": ([], DEFAULTS, None),
    "a NoSchedule taint rejects a pod without tolerations": ([GPU], None, UNTOLERATED_GPU),
    "the default tolerations do not tolerate a GPU taint": ([GPU], DEFAULTS, UNTOLERATED_GPU),
    "Exists on the key tolerates any value": (
        [GPU], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], None),
    "Equal with the same value tolerates": (
        [GPU], [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}], None),
    "an empty operator means Equal": (
        [GPU], [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], None),
    "Equal with another value does not tolerate": (
        [GPU], [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}],
        UNTOLERATED_GPU),
    "a toleration for another effect does not tolerate": (
        [GPU], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
        UNTOLERATED_GPU),
    "an empty key with Exists tolerates every taint": (
        [GPU, NOT_READY], [{"operator": "Exists"}], None),
    "NoExecute taints reject too": (
        [NOT_READY], None, "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"),
    "the default tolerations tolerate not-ready": ([NOT_READY], DEFAULTS, None),
    "PreferNoSchedule never rejects": ([SPOT], None, None),
    "the first untolerated taint is named": (
        [SPOT, NOT_READY, GPU], DEFAULTS, UNTOLERATED_GPU),
    "an unknown operator tolerates nothing": (
        [GPU], [{"key": "nvidia.com/gpu", "operator": "Gt", "value": "present"}],
        UNTOLERATED_GPU),
}  # fmt: skip


def volcano_bodies(
    taints: list[dict[str, Any]] | None, tolerations: list[dict[str, Any]] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A TaskInfo and a NodeInfo as Volcano's json.Marshal writes them (Go field names outside,
    Kubernetes JSON inside; Go omits ``taints`` and ``tolerations`` when empty)."""
    node_spec: dict[str, Any] = {"podCIDR": "10.244.1.0/24"}
    if taints is not None:
        node_spec["taints"] = taints
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if tolerations is not None:
        pod_spec["tolerations"] = tolerations
    task = {
        "UID": "ns1-p",
        "Name": "p",
        "Namespace": "ns1",
        "Status": 1,
        "Pod": {"metadata": {"name": "p", "namespace": "ns1"}, "spec": pod_spec,
                "status": {"phase": "Pending"}},
    }  # fmt: skip
    node = {
        "Name": "n1",
        "Node": {"metadata": {"name": "n1"}, "spec": node_spec,
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        "State": {"Phase": 1, "Reason": ""},
    }  # fmt: skip
    return task, node


@pytest.mark.parametrize("name", CASES)
def test_predicate_on_volcano_json(name: str) -> None:
    taints, tolerations, message = CASES[name]
    task_json, node_json = volcano_bodies(taints, tolerations)
    task = msgspec.json.decode(msgspec.json.encode(task_json), type=TaskInfo)
    node = msgspec.json.decode(msgspec.json.encode(node_json), type=NodeInfo)
    answer = TaintToleration(Arguments({}, plugin="taint-toleration")).predicate(task, node)
    if message is None:
        assert answer is None
    else:
        assert answer == FitError(message, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)


def test_views_built_in_code_give_the_same_answer() -> None:
    """A unit test builds the objects itself: the raw twin takes the value's JSON."""
    task = TaskInfo(Pod=Pod(spec=PodSpec(tolerationsRaw=raw([Toleration(key="a", operator="Exists")]))))  # fmt: skip
    tainted = NodeInfo(Name="n", Node=Node(specRaw=raw(NodeSpec(taints=[Taint(key="b", effect="NoSchedule")]))))  # fmt: skip
    tolerated = NodeInfo(Name="n", Node=Node(specRaw=raw(NodeSpec(taints=[Taint(key="a", effect="NoSchedule")]))))  # fmt: skip
    plugin = TaintToleration(Arguments({}, plugin="taint-toleration"))
    assert plugin.predicate(task, tainted) == FitError(
        "node(s) had untolerated taint {b: }", StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
    assert plugin.predicate(task, tolerated) is None


def test_tolerates_matches_kubernetes_on_value_and_effect() -> None:
    taint = Taint(key="k", value="v", effect="NoSchedule")
    assert tolerates(Toleration(key="k", value="v"), taint)
    assert not tolerates(Toleration(key="k", value="w"), taint)
    assert tolerates(Toleration(key="k", operator="Exists"), taint)
    assert not tolerates(Toleration(key="j", operator="Exists"), taint)
    assert not tolerates(Toleration(key="k", operator="Exists", effect="NoExecute"), taint)
