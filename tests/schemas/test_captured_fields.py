"""A guard on the fields our views rely on: every key a view declares must really appear in the
bodies Volcano's own json.Marshal produced, for each captured release (plugins/api/captured/volcano-1.14
from v1.14.1, plugins/api/captured/volcano-1.15 from v1.15.1). msgspec defaults a missing key silently,
so a field renamed upstream would otherwise read as zero."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest

from schemas import api, k8s
from schemas.requests import EvictRequest, OnSessionOpenRequest
from tests.examples import CAPTURED_BODIES
from tests.schemas.test_examples import CAPTURED_RELEASES, REQUEST_TYPES
from tests.schemas.walk import declared, walk

# One directory per Volcano release whose extender plugin produced the bodies.
CAPTURED = [CAPTURED_BODIES / release for release in CAPTURED_RELEASES]

# Keys a view declares on purpose although Volcano 1.14 and 1.15 do not send them: other releases'
# spellings, and Kubernetes fields that are legitimately absent from minimal objects.
NOT_CAPTURED = {
    "PodGroup": {
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "labels",
        "annotations",
        "Spec",
        "Status",
    },
    "Queue": {"name", "uid", "creationTimestamp", "labels", "annotations", "Spec", "Status"},
    "NodeInfo": {"Capability"},
    "DisruptionBudget": {"MaxUnavilable"},
}
# The views whose every field must be seen in the captures (the ones Volcano itself defines).
VOLCANO_VIEWS = [
    api.TaskInfo,
    api.JobInfo,
    api.NodeInfo,
    api.Resource,
    api.QueueInfo,
    api.NodeState,
    api.PodGroup,
    api.Queue,
    api.NodeUsage,
]


def captured_seen(captured: Path) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for path in sorted(captured.glob("*.request.json")):
        verb = path.name.split(".")[0]
        kind = REQUEST_TYPES[verb]
        raw = json.loads(path.read_bytes())
        walk(raw, kind, seen)
        if kind is EvictRequest:
            for evictee in raw.get("evictees") or []:
                walk(evictee, api.TaskInfo, seen)
    return seen


def test_every_release_has_captures() -> None:
    for captured in CAPTURED:
        assert (captured / "onSessionOpen.request.json").is_file(), f"no captures in {captured}"


@pytest.mark.parametrize("captured", CAPTURED, ids=lambda p: p.name)
@pytest.mark.parametrize("view", VOLCANO_VIEWS, ids=lambda v: v.__name__)
def test_every_declared_volcano_key_is_in_the_captures(view: type, captured: Path) -> None:
    seen = captured_seen(captured)
    expected = declared(view) - NOT_CAPTURED.get(view.__name__, set())
    missing = expected - seen.get(view.__name__, set())
    assert not missing, f"{view.__name__} keys never seen in {captured.name} bodies: {missing}"


# The pod fields plugins read through TaskInfo.Pod. The captured pods come from Volcano's fake
# cache: Running pods with a phase and nothing else, so a pod's conditions (cdp, min-runtime)
# and startTime (min-runtime) never occur in them; those keys are standard Kubernetes
# (core/v1 PodStatus ``conditions``, ``startTime``; PodCondition ``type``, ``status``,
# ``lastTransitionTime``) and are decoded from Kubernetes-shaped bodies in the plugins' tests
# (tests/plugins/min_runtime/test_min_runtime.py, tests/service/test_plugin_min_runtime.py). Likewise the
# in-place-resize statuses usage reads for pod limits (``containerStatuses``,
# ``initContainerStatuses``: ContainerStatus ``name``, ``resources``), and the pod-spec keys
# (``restartPolicy`` of an init container, ``overhead``, pod-level ``resources``, a container's
# ``limits``), decoded from a Kubernetes-shaped pod in test_usage_pod_keys_decode below.
# The other PodStatus keys are declared so that a plugin can read every field Kubernetes sends
# (docs/plugin-author-guide.md, "Field reference"); they are decoded from Kubernetes-shaped pods
# in tests/schemas/test_k8s_fields.py.
POD_VIEWS = [k8s.Pod, k8s.PodStatus]
POD_KEYS_NOT_IN_CAPTURES = {
    "PodStatus": {"conditions", "startTime", "containerStatuses", "initContainerStatuses"}
    | {
        "message",
        "reason",
        "nominatedNodeName",
        "hostIP",
        "podIP",
        "qosClass",
        "resize",
        "observedGeneration",
        "hostIPs",
        "podIPs",
        "ephemeralContainerStatuses",
        "resourceClaimStatuses",
        "resources",
    }
}


@pytest.mark.parametrize("captured", CAPTURED, ids=lambda p: p.name)
@pytest.mark.parametrize("view", POD_VIEWS, ids=lambda v: v.__name__)
def test_every_declared_pod_key_is_in_the_captures(view: type, captured: Path) -> None:
    seen = captured_seen(captured)
    expected = declared(view) - POD_KEYS_NOT_IN_CAPTURES.get(view.__name__, set())
    missing = expected - seen.get(view.__name__, set())
    assert not missing, f"{view.__name__} keys never seen in {captured.name} bodies: {missing}"


def test_walk_detects_a_missing_key() -> None:
    raw = {"Jobs": {"a/b": {"UID": "a/b", "Namespace": "a"}}}
    seen = walk(raw, OnSessionOpenRequest)
    assert seen["JobInfo"] == {"UID", "Namespace"}
    assert "Priority" in declared(api.JobInfo) - seen["JobInfo"]
    assert k8s.ObjectMeta.__name__ not in seen


# Keys each node plugin reads, by view, including Kubernetes views the list above leaves out:
# a plugin must not rely on a key Volcano 1.14 or 1.15 never sends.
PLUGIN_READS = {
    "resource-strategy-fit": {
        "TaskInfo": {"Resreq", "Pod"},
        "Pod": {"metadata"},
        "ObjectMeta": {"annotations"},
        "NodeInfo": {"Name", "Idle", "Used", "Allocatable"},
        "Resource": {"MilliCPU", "Memory", "ScalarResources"},
    },
    "task-topology": {
        "TaskInfo": {"UID", "Job", "Name", "TaskRole", "Resreq", "NodeName", "Status", "Pod"},
        "Pod": {"metadata"},
        "ObjectMeta": {"uid", "annotations"},
        "JobInfo": {"UID", "Name", "Namespace", "Tasks", "PodGroup"},
        "PodGroup": {"metadata"},
        "NodeInfo": {"Name", "Idle", "Releasing"},
        "Resource": {"MilliCPU", "Memory", "ScalarResources"},
    },
    "usage": {
        "TaskInfo": {
            "UID",
            "Name",
            "Namespace",
            "Resreq",
            "NodeName",
            "Status",
            "BestEffort",
            "Pod",
        },
        "NodeInfo": {"Name", "Capacity", "ResourceUsage", "Tasks"},
        "NodeUsage": {"MetricsTime", "CPUUsageAvg", "MEMUsageAvg"},
        "Resource": {"MilliCPU", "Memory"},
        "Pod": {"spec", "status"},
        "PodSpec": {"containers"},
        "Container": {"name", "resources"},
    },
    # Queue affinity and spec.parent are absent from the captures (no queue there sets them,
    # and Go omits them when empty): test_queue_affinity_keys_decode_in_both_queue_shapes.
    "nodegroup": {
        "TaskInfo": {"Job", "Name", "Namespace", "Resreq", "NodeName", "Status"},
        "JobInfo": {"Queue", "Tasks"},
        "QueueInfo": {"Name", "Queue"},
        "Queue": {"metadata", "spec"},
        "ObjectMeta": {"labels", "annotations"},
        "NodeInfo": {"Name", "Node"},
        "Node": {"metadata"},
        "Resource": {"MilliCPU", "Memory", "ScalarResources"},
    },
}


@pytest.mark.parametrize("captured", CAPTURED, ids=lambda p: p.name)
@pytest.mark.parametrize("plugin", sorted(PLUGIN_READS))
def test_node_plugin_keys_are_in_the_captures(plugin: str, captured: Path) -> None:
    seen = captured_seen(captured)
    missing = {
        view: keys - seen.get(view, set())
        for view, keys in PLUGIN_READS[plugin].items()
        if keys - seen.get(view, set())
    }
    assert not missing, f"{plugin} reads keys never seen in {captured.name} bodies: {missing}"


@pytest.mark.parametrize("captured", CAPTURED, ids=lambda p: p.name)
def test_task_role_and_pod_identity_decode_from_the_captures(captured: Path) -> None:
    for verb in ("predicate", "prioritize", "allocateFunc"):
        body = (captured / f"{verb}.request.json").read_bytes()
        raw = json.loads(body)
        task = msgspec.json.decode(body, type=REQUEST_TYPES[verb]).task
        assert task.TaskRole == raw["task"]["TaskRole"] != ""
        assert task.Pod is not None and task.Pod.metadata is not None
        assert task.Pod.metadata.uid == raw["task"]["Pod"]["metadata"]["uid"] != ""
        assert task.Pod.metadata.annotations == raw["task"]["Pod"]["metadata"]["annotations"]


# ``QueueSpec.Affinity`` of volcano.sh/apis (``json:"affinity,omitempty"`` in both the v1beta1
# and the internal type, so the legacy ``Spec`` shape keeps the lower-case key), its
# ``NodeGroupAffinity`` / ``NodeGroupAntiAffinity`` lists, and ``spec.parent``.
AFFINITY = {
    "nodeGroupAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": ["g1"],
        "preferredDuringSchedulingIgnoredDuringExecution": ["g2"],
    },
    "nodeGroupAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": ["g3"],
        "preferredDuringSchedulingIgnoredDuringExecution": ["g4"],
    },
}
QUEUE_SHAPES = {
    "1.14+": {
        "metadata": {"name": "q"},
        "spec": {"weight": 1, "parent": "p", "affinity": AFFINITY},
    },
    "1.6-1.13": {"name": "q", "Spec": {"Weight": 1, "parent": "p", "affinity": AFFINITY}},
}


@pytest.mark.parametrize("shape", sorted(QUEUE_SHAPES))
def test_queue_affinity_keys_decode_in_both_queue_shapes(shape: str) -> None:
    raw = {"UID": "q", "Name": "q", "Queue": QUEUE_SHAPES[shape]}
    seen = walk(raw, api.QueueInfo)
    assert seen["Affinity"] == declared(api.Affinity)
    assert seen["NodeGroupAffinity"] == declared(api.NodeGroupAffinity)
    spec = "QueueSpec" if shape == "1.14+" else "LegacyQueueSpec"
    assert {"parent", "affinity"} <= seen[spec]
    info = msgspec.json.decode(json.dumps(raw).encode(), type=api.QueueInfo)
    assert info.Queue is not None
    decoded = info.Queue.spec
    assert decoded.parent == "p"
    assert decoded.affinity == api.Affinity(
        api.NodeGroupAffinity(["g1"], ["g2"]), api.NodeGroupAffinity(["g3"], ["g4"])
    )


# A pod as the API server returns it (core/v1 JSON keys), with what usage's
# ``GetPodResourceLimit`` reads and the captured pods do not carry.
USAGE_POD = {
    "metadata": {"name": "p"},
    "spec": {
        "containers": [{"name": "main", "resources": {"limits": {"cpu": "1"}}}],
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}}
        ],
        "overhead": {"cpu": "100m"},
        "resources": {"limits": {"memory": "1Gi"}},
    },
    "status": {
        "startTime": "2026-11-22T12:00:00Z",
        "containerStatuses": [{"name": "main", "resources": {"limits": {"cpu": "2"}}}],
        "initContainerStatuses": [{"name": "sidecar", "resources": {"limits": {"cpu": "1"}}}],
    },
}


def test_usage_pod_keys_decode() -> None:
    seen = walk(USAGE_POD, k8s.Pod)
    assert {"overhead", "resources", "containers", "initContainers"} <= seen["PodSpec"]
    assert {"containerStatuses", "initContainerStatuses", "startTime"} <= seen["PodStatus"]
    assert {"name", "resources"} <= seen["ContainerStatus"]
    assert "restartPolicy" in seen["Container"]
    assert "limits" in seen["ResourceRequirements"]
    pod = msgspec.json.decode(json.dumps(USAGE_POD).encode(), type=k8s.Pod)
    assert pod.spec is not None and pod.status is not None
    assert pod.spec.initContainers is not None
    assert pod.spec.initContainers[0].restartPolicy == "Always"
    assert pod.spec.overhead == {"cpu": "100m"}
    assert pod.status.containerStatuses == [
        k8s.ContainerStatus(name="main", resources=k8s.ResourceRequirements(limits={"cpu": "2"}))
    ]
