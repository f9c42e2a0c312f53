"""Resource arithmetic with Volcano's semantics (``pkg/scheduler/api/resource_info.go``).

Shared by the plugins that do accounting. ``Resource`` values are Go float64s; scalars are
milli-units except ``pods``. Functions return new objects unless their name says otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from schemas.api import NodeInfo, Resource
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
    return (
        bool(_QUALIFIED_NAME.match(quota_name)) and len(short) <= 63 and len(prefix) <= 253
    )


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
