"""Typed views of Volcano's scheduler API objects, as the extender plugin marshals them.

Names and JSON keys follow ``volcano.sh/volcano/pkg/scheduler/api`` (``TaskInfo``, ``JobInfo``,
``NodeInfo``, ``QueueInfo``, ``NamespaceInfo``, ``Resource``) so a reader can hold the two side by
side. Go's ``encoding/json`` writes untagged fields under their Go names, so the keys here are Go
field names. Only what Caldera's plugins read is declared; unknown keys are skipped unbuilt.

The embedded ``PodGroup`` and ``Queue`` changed JSON shape in Volcano v1.14: before it their
``ObjectMeta`` is flattened and ``Spec``/``Status`` are untagged; from it they are
``metadata``/``spec``/``status`` (protocol reference §3.5). Both decode into the same view: the
legacy keys are read and folded into the canonical fields after decoding.
"""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from msgspec import Struct, field

from schemas.k8s import Node, ObjectMeta, Pod, ResourceList, ResourceQuotaStatus
from schemas.lazy import ABSENT, JSON, Lazy
from schemas.legacy import canonical, untagged_twin


class TaskStatus(IntEnum):
    """``api.TaskStatus`` bit values (``1 << iota``), identical from v1.6 to HEAD."""

    Pending = 1
    Allocated = 2
    Pipelined = 4
    Binding = 8
    Bound = 16
    Running = 32
    Releasing = 64
    Succeeded = 128
    Failed = 256
    Unknown = 512


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Running, TaskStatus.Allocated}
)
"""``api.AllocatedStatus``: Bound, Binding, Running and Allocated (Pipelined is not)."""


Int32 = Annotated[int, msgspec.Meta(ge=-(1 << 31), le=(1 << 31) - 1)]
"""A Go ``int32``: Go's decoder refuses a number outside it, so Caldera does too rather than
compare priorities Volcano could never have sent."""


class NodePhase(IntEnum):
    Ready = 1
    NotReady = 2


class Resource(Struct, gc=False):
    """``api.Resource``: MilliCPU in millicores, Memory in bytes, scalars in milli-units
    (``pods`` in units). Values are Go float64s and may be negative (Idle after over-commit)."""

    MilliCPU: float = 0.0
    Memory: float = 0.0
    ScalarResources: dict[str, float] | None = None
    MaxTaskNum: int = 0


class TaskInfo(Struct, gc=False, kw_only=True):
    UID: str = ""
    Job: str = ""
    """``<namespace>/<podgroup>`` from the pod's group annotation; ``""`` for non-Volcano pods."""
    Name: str = ""
    Namespace: str = ""
    TaskRole: str = ""
    """The pod's ``volcano.sh/task-spec`` annotation, else that label (``getTaskRole``): the
    key of the job's ``TaskMinAvailable``."""
    Resreq: Resource | None = None
    NodeName: str = ""
    Status: int = 0
    Priority: Int32 = 0
    """``pod.spec.priority`` or the ``volcano.sh/task-priority`` annotation; default 1."""
    BestEffort: bool = False
    """``InitResreq.IsEmpty()`` (usage estimates such a pod with fixed amounts)."""
    SchGated: bool = False
    Pod: Pod | None = None


# --- PodGroup (internal scheduling.PodGroup wrapped by api.PodGroup) --------------------------


class PodGroupSpec(Struct, rename="camel", gc=False):
    min_member: int = 0
    min_task_member: dict[str, int] | None = None
    queue: str = ""
    priority_class_name: str = ""
    min_resources: ResourceList | None = None
    network_topology_raw: msgspec.Raw = field(default_factory=ABSENT.copy, name="networkTopology")
    sub_group_policy_raw: msgspec.Raw = field(default_factory=ABSENT.copy, name="subGroupPolicy")

    network_topology = Lazy[JSON](
        Any,
        "``{mode, highestTierAllowed}`` (v1.12+): hard or soft network-topology placement.",
        raw="network_topology_raw",
    )
    sub_group_policy = Lazy[list[JSON]](
        list[Any], "Sub-group gangs (v1.13+).", raw="sub_group_policy_raw"
    )


class PodGroupStatus(Struct, rename="camel", gc=False):
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions_raw: msgspec.Raw = field(default_factory=ABSENT.copy, name="conditions")

    conditions = Lazy[list[JSON]](
        list[Any],
        "``{type, status, transitionID, lastTransitionTime, reason, message}`` (Go field names"
        " before v1.14: ``Type``, ``Status``...).",
        raw="conditions_raw",
    )


# v1.6–v1.13: the same fields, untagged (``MinMember``, ``Phase``…).
if TYPE_CHECKING:
    LegacyPodGroupSpec = PodGroupSpec
    LegacyPodGroupStatus = PodGroupStatus
else:
    LegacyPodGroupSpec = untagged_twin(
        PodGroupSpec,
        "LegacyPodGroupSpec",
        "v1.6–v1.13: the same fields, untagged (``MinMember``, ``MinResources``…).",
    )
    LegacyPodGroupStatus = untagged_twin(
        PodGroupStatus, "LegacyPodGroupStatus", "v1.6–v1.13: ``Phase``, ``Running``…"
    )


class PodGroup(Struct, gc=False):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodGroupSpec = field(default_factory=PodGroupSpec)
    status: PodGroupStatus = field(default_factory=PodGroupStatus)
    Version: str = ""
    # v1.6–v1.13 shape: flattened ObjectMeta and untagged Spec/Status.
    name: str = ""
    namespace: str = ""
    uid: str = ""
    creationTimestamp: datetime | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    Spec: LegacyPodGroupSpec | None = None
    Status: LegacyPodGroupStatus | None = None

    def __post_init__(self) -> None:
        if self.name or self.uid or self.annotations or self.creationTimestamp:
            self.metadata = ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                uid=self.uid,
                creationTimestamp=self.creationTimestamp,
                labels=self.labels,
                annotations=self.annotations,
            )
        if self.Spec is not None:
            self.spec = canonical(self.Spec, PodGroupSpec)
        if self.Status is not None:
            self.status = canonical(self.Status, PodGroupStatus)


class DisruptionBudget(Struct, gc=False):
    MinAvailable: str = ""
    MaxUnavailable: str = ""
    MaxUnavilable: str = ""  # the v1.6–v1.11 spelling


class JobInfo(Struct, gc=False):
    UID: str = ""
    PgUID: str = ""
    Name: str = ""
    Namespace: str = ""
    Queue: str = ""
    Priority: Int32 = 0
    MinAvailable: int = 0
    WaitingTime: int | None = None
    """``*time.Duration`` in nanoseconds, from the PodGroup's sla-waiting-time annotations."""
    Tasks: dict[str, TaskInfo] | None = None
    """All tasks of the job, keyed by task UID."""
    TaskMinAvailable: dict[str, int] | None = None
    TaskMinAvailableTotal: int = 0
    Allocated: Resource | None = None
    TotalRequest: Resource | None = None
    CreationTimestamp: datetime | None = None
    PodGroup: PodGroup | None = None
    Preemptable: bool = False
    RevocableZone: str = ""
    Budget: DisruptionBudget | None = None


# --- Nodes ---------------------------------------------------------------------------------


class NodeState(Struct, gc=False):
    Phase: int = 0
    Reason: str = ""


_node_tasks = msgspec.json.Decoder(dict[str, TaskInfo] | None)


class NodeUsage(Struct, gc=False):
    """``api.NodeUsage``: the node's measured load, percentages (0-100) keyed by period
    (``"10m"``), sampled at ``MetricsTime`` (Go's zero time when never sampled)."""

    MetricsTime: datetime | None = None
    CPUUsageAvg: dict[str, float] | None = None
    MEMUsageAvg: dict[str, float] | None = None


class NodeInfo(Struct, dict=True):
    """``api.NodeInfo``. ``Tasks`` (every pod bound to the node, again) is decoded only when a
    plugin first reads it: in a snapshot most of its bytes repeat the jobs' tasks, and no
    snapshot-reading plugin here needs them, so they stay raw: a view of the body's bytes, as
    every lazy field (schemas/lazy.py)."""

    Name: str = ""
    Node: Node | None = None
    State: NodeState | None = None
    Releasing: Resource | None = None
    Pipelined: Resource | None = None
    Idle: Resource | None = None
    Used: Resource | None = None
    Allocatable: Resource | None = None
    Capacity: Resource | None = None
    Capability: Resource | None = None
    """v1.6–v1.7 name of ``Capacity``."""
    ResourceUsage: NodeUsage | None = None
    # Not copied out of the body: the node's other lazy fields (Node.spec, status, managedFields)
    # keep the body alive anyway, and the copy cost ~4 % of a real snapshot's decode.
    TasksRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="Tasks")
    RevocableZone: str = ""

    def __post_init__(self) -> None:
        if self.Capacity is None and self.Capability is not None:
            self.Capacity = self.Capability

    @cached_property
    def Tasks(self) -> dict[str, TaskInfo] | None:
        """Every non-terminated pod bound to the node, keyed ``namespace/name`` (not UID)."""
        return _node_tasks.decode(self.TasksRaw) if self.TasksRaw else None


# --- Queues and namespaces -----------------------------------------------------------------


class Guarantee(Struct, gc=False):
    resource: ResourceList | None = None


class NodeGroupAffinity(Struct, rename="camel", gc=False):
    """``NodeGroupAffinity`` / ``NodeGroupAntiAffinity``: node group names (the nodes' label
    ``volcano.sh/nodegroup-name``); the same JSON keys in both queue shapes."""

    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class Affinity(Struct, rename="camel", gc=False):
    """``QueueSpec.Affinity`` (read by nodegroup)."""

    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


class QueueSpec(Struct, rename="camel", gc=False):
    weight: int = 0
    capability: ResourceList | None = None
    reclaimable: bool | None = None
    guarantee: Guarantee | None = None
    deserved: ResourceList | None = None
    parent: str = ""
    priority: int = 0
    affinity: Affinity | None = None
    type: str = ""
    dequeue_strategy: str = ""
    extend_clusters_raw: msgspec.Raw = field(default_factory=ABSENT.copy, name="extendClusters")

    extend_clusters = Lazy[list[JSON]](
        list[Any], "``{name, weight, capacity}`` per cluster.", raw="extend_clusters_raw"
    )


# v1.6–v1.13: ``Weight``, ``Capability``, ``Reclaimable``, ``ExtendClusters`` untagged, the rest tagged;
# ``State``, ``Allocated``… untagged.
if TYPE_CHECKING:
    LegacyQueueSpec = QueueSpec
else:
    LegacyQueueSpec = untagged_twin(
        QueueSpec,
        "LegacyQueueSpec",
        "v1.6–v1.13: ``Weight``, ``Capability``, ``Reclaimable`` untagged; the rest tagged.",
        untagged=("weight", "capability", "reclaimable", "extend_clusters_raw"),
    )


class QueueStatus(Struct, rename="camel", gc=False):
    state: str = ""
    unknown: int = 0
    pending: int = 0
    running: int = 0
    inqueue: int = 0
    completed: int = 0
    allocated: ResourceList | None = None
    reservation_raw: msgspec.Raw = field(default_factory=ABSENT.copy, name="reservation")

    reservation = Lazy[JSON](
        Any, "``{nodes, resource}`` reserved for the queue.", raw="reservation_raw"
    )


if TYPE_CHECKING:
    LegacyQueueStatus = QueueStatus
else:
    LegacyQueueStatus = untagged_twin(
        QueueStatus, "LegacyQueueStatus", "v1.6–v1.13: ``State``, ``Allocated``…"
    )


class Queue(Struct, gc=False):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: QueueSpec = field(default_factory=QueueSpec)
    status: QueueStatus = field(default_factory=QueueStatus)
    # v1.6–v1.13 shape
    name: str = ""
    uid: str = ""
    creationTimestamp: datetime | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    Spec: LegacyQueueSpec | None = None
    Status: LegacyQueueStatus | None = None

    def __post_init__(self) -> None:
        if self.name or self.uid or self.annotations or self.creationTimestamp:
            self.metadata = ObjectMeta(
                name=self.name,
                uid=self.uid,
                creationTimestamp=self.creationTimestamp,
                labels=self.labels,
                annotations=self.annotations,
            )
        if self.Spec is not None:
            self.spec = canonical(self.Spec, QueueSpec)
        if self.Status is not None:
            self.status = canonical(self.Status, QueueStatus)


class QueueInfo(Struct, gc=False):
    UID: str = ""
    Name: str = ""
    Weight: int = 0
    Weights: str = ""
    Hierarchy: str = ""
    Queue: Queue | None = None


class NamespaceInfo(Struct, gc=False):
    Name: str = ""
    QuotaStatus: dict[str, ResourceQuotaStatus] | None = None
    """ResourceQuota name to its status (``hard`` and ``used``), not its spec."""


__all__ = [
    "ALLOCATED_STATUSES",
    "Affinity",
    "DisruptionBudget",
    "JobInfo",
    "NamespaceInfo",
    "NodeGroupAffinity",
    "NodeInfo",
    "NodePhase",
    "NodeState",
    "NodeUsage",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "Queue",
    "QueueInfo",
    "QueueSpec",
    "QueueStatus",
    "Resource",
    "TaskInfo",
    "TaskStatus",
]
