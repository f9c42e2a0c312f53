"""Typed views of the Kubernetes objects embedded in Volcano's payloads (standard k8s JSON keys).

Only the fields Caldera's plugins read are declared; msgspec skips every other key without
building it, which is what keeps decoding a whole-cluster snapshot fast. Add a field here when a
plugin needs it, never "just in case".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from msgspec import Struct

ResourceList = dict[str, str]
"""``v1.ResourceList``: resource name to canonical quantity string (``{"cpu": "500m"}``)."""


class ObjectMeta(Struct, omit_defaults=True, gc=False):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    creationTimestamp: datetime | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class ResourceRequirements(Struct, omit_defaults=True, gc=False):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class Container(Struct, omit_defaults=True, gc=False):
    name: str = ""
    resources: ResourceRequirements | None = None
    restartPolicy: str = ""
    """Only on init containers: ``Always`` makes it a sidecar (usage's pod limits)."""


class PodSchedulingGate(Struct, omit_defaults=True, gc=False):
    name: str = ""


class PodSpec(Struct, omit_defaults=True, gc=False):
    containers: list[Container] | None = None
    initContainers: list[Container] | None = None
    priorityClassName: str = ""
    schedulingGates: list[PodSchedulingGate] | None = None
    """Read by overcommit (``api.HasOnlyVolcanoSchedulingGate``)."""
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None
    """Pod-level resources (``PodLevelResources``); usage reads their limits."""


class PodCondition(Struct, omit_defaults=True, gc=False):
    """``v1.PodCondition``; cdp and min-runtime read ``PodScheduled`` and its ``lastTransitionTime``."""

    type: str = ""
    status: str = ""
    lastTransitionTime: datetime | None = None


class ContainerStatus(Struct, omit_defaults=True, gc=False):
    """``v1.ContainerStatus``: the resources the kubelet applied (in-place resize)."""

    name: str = ""
    resources: ResourceRequirements | None = None


class PodStatus(Struct, omit_defaults=True, gc=False):
    phase: str = ""
    conditions: list[PodCondition] | None = None
    startTime: datetime | None = None
    """Set by the kubelet when it accepts the pod; min-runtime's fallback start time, usage's
    metrics blind spot."""
    containerStatuses: list[ContainerStatus] | None = None
    initContainerStatuses: list[ContainerStatus] | None = None


class Pod(Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


class Node(Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta | None = None


class ResourceQuotaStatus(Struct, omit_defaults=True):
    """``v1.ResourceQuotaStatus`` as carried in ``NamespaceInfo.QuotaStatus``."""

    hard: ResourceList | None = None
    used: ResourceList | None = None


class LabelSelectorRequirement(Struct, omit_defaults=True):
    """``metav1.LabelSelectorRequirement``: ``operator`` is In, NotIn, Exists or DoesNotExist."""

    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(Struct, omit_defaults=True):
    """``metav1.LabelSelector``: the requirements are ANDed."""

    matchLabels: dict[str, str] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


class PodDisruptionBudgetSpec(Struct, omit_defaults=True):
    selector: LabelSelector | None = None
    """Absent (null) and ``{}`` are different selectors; Volcano's pdb plugin ignores both."""


class PodDisruptionBudgetStatus(Struct, omit_defaults=True):
    disruptionsAllowed: int = 0
    disruptedPods: dict[str, Any] | None = None
    """Pod name to the time its eviction was processed; only the keys are read, so the values
    are left undecoded (a malformed timestamp must not drop the whole budget)."""


class PodDisruptionBudget(Struct, omit_defaults=True):
    """``policy/v1`` PodDisruptionBudget, as far as Volcano's pdb plugin reads it."""

    metadata: ObjectMeta | None = None
    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None
