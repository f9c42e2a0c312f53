"""Resource arithmetic with Volcano's semantics (``pkg/scheduler/api/resource_info.go``).

Shared by the plugins that do accounting. ``Resource`` values are Go float64s; scalars are
milli-units except ``pods``. Functions return new objects unless their name says otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from schemas.api import ALLOCATED_STATUSES, JobInfo, NodeInfo, Resource, TaskInfo
from schemas.quantity import milli_value, value

MIN_RESOURCE = 0.1
"""``api.GetMinResource()``: values below it count as zero in ``IsEmpty``."""

_QUALIFIED_NAME = re.compile(
    r"^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    """k8s ``IsExtendedResourceName``: outside the kubernetes.io namespace, not ``requests.*``,
    and ``requests.<name>`` is a qualified name."""
    if "/" not in name or is_prefixed_native(name) or name.startswith("requests."):
        return False
    quota_name = "requests." + name
    prefix, _, short = quota_name.rpartition("/")
    return bool(_QUALIFIED_NAME.match(quota_name)) and len(short) <= 63 and len(prefix) <= 253


def is_scalar_resource_name(name: str) -> bool:
    """k8s ``IsScalarResourceName``: extended, hugepages, prefixed native or attachable volume."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or is_prefixed_native(name)
        or name.startswith("attachable-volumes-")
    )


def new_resource(rl: Mapping[str, str] | None) -> Resource:
    """``api.NewResource``: cpu in milli, memory in bytes, pods in units (also ``MaxTaskNum``),
    ephemeral-storage and other scalars in milli; ``count/*`` and unknown names dropped."""
    res = Resource()
    for name, quantity in (rl or {}).items():
        if name == "cpu":
            res.MilliCPU += milli_value(quantity)
        elif name == "memory":
            res.Memory += value(quantity)
        elif name == "pods":
            pods = value(quantity)
            res.MaxTaskNum += pods
            _add_scalar(res, name, pods)
        elif name == "ephemeral-storage":
            _add_scalar(res, name, milli_value(quantity))
        elif name.startswith("count/"):
            continue
        elif is_scalar_resource_name(name):
            _add_scalar(res, name, milli_value(quantity))
    return res


def _add_scalar(res: Resource, name: str, amount: float) -> None:
    if res.ScalarResources is None:
        res.ScalarResources = {}
    res.ScalarResources[name] = res.ScalarResources.get(name, 0.0) + amount


def clone(res: Resource | None) -> Resource:
    if res is None:
        return Resource()
    scalars = dict(res.ScalarResources) if res.ScalarResources is not None else None
    return Resource(res.MilliCPU, res.Memory, scalars, res.MaxTaskNum)


def add_in_place(res: Resource, other: Resource | None) -> Resource:
    """``Resource.Add``: dimension by dimension, creating scalar keys as needed."""
    if other is None:
        return res
    res.MilliCPU += other.MilliCPU
    res.Memory += other.Memory
    for name, amount in (other.ScalarResources or {}).items():
        _add_scalar(res, name, amount)
    return res


def multi_in_place(res: Resource, ratio: float) -> Resource:
    """``Resource.Multi``: every dimension, ``pods`` included."""
    res.MilliCPU *= ratio
    res.Memory *= ratio
    if res.ScalarResources is not None:
        for name in res.ScalarResources:
            res.ScalarResources[name] *= ratio
    return res


def sub_without_assert_in_place(res: Resource, other: Resource | None) -> Resource:
    """``Resource.SubWithoutAssert``: never clamps; scalars only when ``res`` has a scalar map,
    keys missing from ``res`` going negative."""
    if other is None:
        return res
    res.MilliCPU -= other.MilliCPU
    res.Memory -= other.Memory
    if res.ScalarResources is not None:
        for name, amount in (other.ScalarResources or {}).items():
            res.ScalarResources[name] = res.ScalarResources.get(name, 0.0) - amount
    return res


def is_empty(res: Resource | None) -> bool:
    """``Resource.IsEmpty``: every dimension below 0.1, ``pods`` ignored."""
    if res is None:
        return True
    if res.MilliCPU >= MIN_RESOURCE or res.Memory >= MIN_RESOURCE:
        return False
    return all(
        amount < MIN_RESOURCE
        for name, amount in (res.ScalarResources or {}).items()
        if name != "pods"
    )


def total_allocatable(nodes: Mapping[str, NodeInfo]) -> Resource:
    """``ssn.TotalResource``: the sum of ``Allocatable`` over the snapshot's nodes."""
    total = Resource()
    for node in nodes.values():
        add_in_place(total, node.Allocatable)
    return total


# --- enqueue accounting (overcommit; ``api/job_info.go``, ``plugins/util/util.go``) ---------

QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"
"""``schedulingv1beta1.QueueAllocationGateKey``: Volcano's own scheduling gate (v1.15+)."""

IGNORED_SCALAR_RESOURCES = frozenset({"pods"})
"""``api.ignoredScalarResources``: scalars the dimension comparisons skip."""


def get_min_resources(job: JobInfo) -> Resource:
    """``JobInfo.GetMinResources``: ``NewResource(MinResources)``, empty without a PodGroup."""
    if job.PodGroup is None or job.PodGroup.spec.min_resources is None:
        return Resource()
    return new_resource(job.PodGroup.spec.min_resources)


def calculate_allocated_task_num(job: JobInfo) -> int:
    """``util.CalculateAllocatedTaskNum``: tasks in Bound, Binding, Running or Allocated."""
    return sum(1 for task in (job.Tasks or {}).values() if task.Status in ALLOCATED_STATUSES)


def has_only_volcano_scheduling_gate(task: TaskInfo) -> bool:
    """``api.HasOnlyVolcanoSchedulingGate``: the pod's one scheduling gate is Volcano's."""
    spec = task.Pod.spec if task.Pod is not None else None
    gates = spec.schedulingGates if spec is not None else None
    return gates is not None and len(gates) == 1 and gates[0].name == QUEUE_ALLOCATION_GATE


def get_sch_gated_pod_resources(
    job: JobInfo, exclude_queue_allocation_gate: bool = True
) -> Resource:
    """``JobInfo.GetSchGatedPodResources``: the summed ``Resreq`` of scheduling-gated tasks.

    From v1.15 a task whose only gate is Volcano's queue-allocation gate is left out (it is
    counted as in-queue); earlier releases count every gated task
    (``exclude_queue_allocation_gate=False``).
    """
    gated = Resource()
    for task in (job.Tasks or {}).values():
        if not task.SchGated:
            continue
        if exclude_queue_allocation_gate and has_only_volcano_scheduling_gate(task):
            continue
        add_in_place(gated, task.Resreq)
    return gated


def deduct_sch_gated(
    job: JobInfo, res: Resource, exclude_queue_allocation_gate: bool = True
) -> Resource:
    """``JobInfo.DeductSchGatedResources``: ``res`` less the job's gated tasks, floored at 0.

    Returns ``res`` itself (not a copy) when the gated total is empty, as upstream does. Scalars
    are reduced only where both sides have the key; gated-only scalars are skipped.
    """
    gated = get_sch_gated_pod_resources(job, exclude_queue_allocation_gate)
    if is_empty(gated):
        return res
    result = clone(res)
    result.MilliCPU = max(result.MilliCPU - gated.MilliCPU, 0.0)
    result.Memory = max(result.Memory - gated.Memory, 0.0)
    if result.ScalarResources is not None and gated.ScalarResources is not None:
        for name, amount in (res.ScalarResources or {}).items():
            if name in gated.ScalarResources:
                result.ScalarResources[name] = max(amount - gated.ScalarResources[name], 0.0)
    return result


def get_inqueue_resource(
    job: JobInfo, allocated: Resource | None, milli_scalars: bool = True
) -> Resource:
    """``util.GetInqueueResource``: what a Running job still reserves, per key of MinResources.

    cpu and memory reserve ``min - allocated`` when positive. ``milli_scalars`` selects the unit
    of the other scalars: from Volcano #5391 (v1.16.0-alpha.0, backported as v1.15.1 and
    v1.14.3) they come from ``NewResource`` in milli-units, like ``job.Allocated``, and ``pods``
    reserves ``min - allocated`` whole pods; before it a scalar's ``Quantity.Value()`` (whole
    units) was compared with milli-unit allocations and ``pods`` reserved nothing. ``count/*``
    and non-scalar names (``ephemeral-storage``) never reserve. A scalar the allocation lacks
    reserves its full minimum.
    """
    allocated = allocated or Resource()
    if job.PodGroup is None or job.PodGroup.spec.min_resources is None:
        return Resource()
    min_list = job.PodGroup.spec.min_resources
    minimum = new_resource(min_list)
    alloc_scalars = allocated.ScalarResources or {}
    min_scalars = minimum.ScalarResources or {}
    inqueue = Resource()
    for name, quantity in min_list.items():
        if name == "cpu":
            if minimum.MilliCPU - allocated.MilliCPU > 0:
                inqueue.MilliCPU = minimum.MilliCPU - allocated.MilliCPU
        elif name == "memory":
            if minimum.Memory - allocated.Memory > 0:
                inqueue.Memory = minimum.Memory - allocated.Memory
        elif name == "pods":
            # Only from #5391: ``pods`` is not a scalar resource name, so before it this key
            # fell into the skipped branch below.
            reserved = min_scalars.get(name, 0.0) - alloc_scalars.get(name, 0.0)
            if milli_scalars and reserved > 0:
                if inqueue.ScalarResources is None:
                    inqueue.ScalarResources = {}
                inqueue.ScalarResources[name] = reserved
        else:
            if name.startswith("count/") or not is_scalar_resource_name(name):
                continue
            if inqueue.ScalarResources is None:
                inqueue.ScalarResources = {}
            wanted = min_scalars.get(name, 0.0) if milli_scalars else float(value(quantity))
            if name not in alloc_scalars:
                inqueue.ScalarResources[name] = wanted
            elif wanted - alloc_scalars[name] > 0:
                inqueue.ScalarResources[name] = wanted - alloc_scalars[name]
    return inqueue


def less_equal_with_dimension_and_names(
    res: Resource, rr: Resource, req: Resource
) -> tuple[bool, list[str]]:
    """``Resource.LessEqualWithDimensionAndResourcesName(rr, req)``: is ``res <= rr`` in the
    dimensions ``req`` asks for (> 0), and the names of those that fail.

    Strict ``>``, no tolerance; ``pods`` is never compared; a scalar missing from either side
    counts as 0 (so asking for a GPU the cluster lacks fails). When ``res`` has no scalar map,
    scalars are not compared. Names come in the order cpu, memory, then ``req``'s scalars.
    (Upstream's nil ``rr``/``req`` branches are left out: no caller here passes nil.)
    """
    failed: list[str] = []
    if req.MilliCPU > 0 and res.MilliCPU > rr.MilliCPU:
        failed.append("cpu")
    if req.Memory > 0 and res.Memory > rr.Memory:
        failed.append("memory")
    if res.ScalarResources is not None:
        rr_scalars = rr.ScalarResources or {}
        for name, amount in (req.ScalarResources or {}).items():
            if name in IGNORED_SCALAR_RESOURCES:
                continue
            if amount > 0 and res.ScalarResources.get(name, 0.0) > rr_scalars.get(name, 0.0):
                failed.append(name)
    return not failed, failed


def sub_clamped_in_place(
    res: Resource, other: Resource | None, clamped: Callable[[str], None] | None = None
) -> Resource:
    """Subtract ``other`` dimension by dimension, flooring each at zero.

    Volcano's ``Resource.Sub`` panics when ``other`` is not less or equal; state that Caldera
    keeps across calls (use per node group, shadow load) must survive an event Caldera never saw
    the matching half of, so it floors instead. ``clamped`` is told the name of each dimension
    that would have gone negative (``cpu``, ``memory`` or the scalar's name), so the caller can
    log once and count it."""
    if other is None:
        return res
    res.MilliCPU -= other.MilliCPU
    if res.MilliCPU < 0:
        res.MilliCPU = 0.0
        if clamped is not None:
            clamped("cpu")
    res.Memory -= other.Memory
    if res.Memory < 0:
        res.Memory = 0.0
        if clamped is not None:
            clamped("memory")
    for name, amount in (other.ScalarResources or {}).items():
        if res.ScalarResources is None:
            res.ScalarResources = {}
        left = res.ScalarResources.get(name, 0.0) - amount
        if left < 0:
            left = 0.0
            if clamped is not None:
                clamped(name)
        res.ScalarResources[name] = left
    return res


# --- per-dimension reads and comparisons (``api/resource_info.go``) ---------------------------


def resource_names(res: Resource | None) -> list[str]:
    """``Resource.ResourceNames``: ``cpu`` and ``memory`` when at least 0.1, then every scalar
    (``pods`` included) at least 0.1. Go lists the scalars in map order; here they come in the
    payload's order, which is sorted by name (Go's JSON encoder sorts map keys)."""
    if res is None:
        return []
    names: list[str] = []
    if res.MilliCPU >= MIN_RESOURCE:
        names.append("cpu")
    if res.Memory >= MIN_RESOURCE:
        names.append("memory")
    for name, amount in (res.ScalarResources or {}).items():
        if amount >= MIN_RESOURCE:
            names.append(name)
    return names


def resource_get(res: Resource | None, name: str) -> float:
    """``Resource.Get``: cpu in milli, memory in bytes, else the scalar (0 when absent)."""
    if res is None:
        return 0.0
    if name == "cpu":
        return res.MilliCPU
    if name == "memory":
        return res.Memory
    return (res.ScalarResources or {}).get(name, 0.0)


def less_partly_zero(res: Resource, rr: Resource) -> bool:
    """``res.LessPartly(rr, Zero)``: some dimension of ``res`` is strictly below ``rr``'s.

    cpu or memory below; a scalar ``rr`` names that ``res`` lacks (even when ``rr``'s value is
    0; from commit 029a17cc8, v1.8.0); or a scalar of ``res`` below ``rr``'s (0 when ``rr``
    lacks it, so a negative ``res`` scalar counts). No tolerance.
    """
    if res.MilliCPU < rr.MilliCPU or res.Memory < rr.Memory:
        return True
    res_scalars = res.ScalarResources or {}
    rr_scalars = rr.ScalarResources or {}
    if any(name not in res_scalars for name in rr_scalars):
        return True
    return any(amount < rr_scalars.get(name, 0.0) for name, amount in res_scalars.items())


def less_equal_zero(res: Resource, rr: Resource) -> bool:
    """``res.LessEqual(rr, Zero)``: every dimension of ``res`` at most ``rr``'s, within 0.1;
    a scalar ``rr`` lacks counts as 0 there; scalars only ``rr`` has are not compared."""
    left, right = res.MilliCPU, rr.MilliCPU
    if not (left < right or abs(left - right) < MIN_RESOURCE):
        return False
    left, right = res.Memory, rr.Memory
    if not (left < right or abs(left - right) < MIN_RESOURCE):
        return False
    if res.ScalarResources:
        rr_scalars = rr.ScalarResources or {}
        for name, left in res.ScalarResources.items():
            right = rr_scalars.get(name, 0.0)
            if not (left < right or abs(left - right) < MIN_RESOURCE):
                return False
    return True


def sub_asserting_in_place(
    res: Resource, other: Resource | None, clamped: Callable[[str], None] | None = None
) -> Resource:
    """``Resource.Sub``: when ``other <= res`` (``LessEqual`` with its 0.1 tolerance) the plain
    subtraction, scalars only when ``res`` has a scalar map (so a value within the tolerance may
    end slightly negative, as in Volcano). Where Volcano's assertion would panic (the default,
    ``PANIC_ON_ERROR``), the subtraction is floored at zero per dimension and ``clamped`` told."""
    if other is None:
        return res
    if less_equal_zero(other, res):
        return sub_without_assert_in_place(res, other)
    return sub_clamped_in_place(res, other, clamped)
