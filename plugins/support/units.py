"""Quantities in Kubernetes' units, for reasons a person reads: ``3 CPU``, ``1500m CPU``,
``12Gi memory``, ``2 nvidia.com/gpu``.

Volcano's ``api.Resource`` keeps CPU in millicores, memory in bytes and scalar resources in
milli-units (``pods`` in units); these functions turn one dimension, or the dimensions a
decision compared, back into what a manifest would say.
"""

from __future__ import annotations

from collections.abc import Iterable

from plugins.support.resources import resource_get
from schemas.api import Resource

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _number(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_milli(milli: float) -> str:
    """Milli-units as a manifest writes them: whole units plainly, otherwise with ``m``."""
    if milli % 1000 == 0:
        return _number(milli / 1000)
    return f"{_number(milli)}m"


def format_bytes(amount: float) -> str:
    """Bytes in the largest binary unit that keeps two decimals honest (``12Gi``, ``1.5Gi``)."""
    for suffix, size in _BINARY:
        if abs(amount) >= size:
            return f"{_number(amount / size)}{suffix}"
    return _number(amount)


def format_amount(name: str, value: float) -> str:
    """One dimension of an ``api.Resource``: ``3 CPU``, ``12Gi memory``, ``2 nvidia.com/gpu``."""
    if name == "cpu":
        return f"{format_milli(value)} CPU"
    if name == "memory":
        return f"{format_bytes(value)} memory"
    if name == "pods":
        return f"{_number(value)} pods"
    return f"{format_milli(value)} {name}"


def format_resource(res: Resource | None, names: Iterable[str] | None = None) -> str:
    """The named dimensions of ``res`` (by default cpu, memory and every scalar it has),
    comma-separated: ``40 CPU, 64Gi memory``."""
    if names is None:
        names = ["cpu", "memory", *sorted((res.ScalarResources or {}) if res else ())]
    return ", ".join(format_amount(name, resource_get(res, name)) for name in names)


def format_duration(nanos: int) -> str:
    """A duration as an annotation would give it: ``1h``, ``10m30s``, ``250ms``."""
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    seconds, rest = divmod(nanos, 10**9)
    if nanos == 0:
        return "0s"
    if seconds == 0:
        return f"{sign}{rest // 10**6}ms" if rest >= 10**6 else f"{sign}{rest}ns"
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (seconds, "s")) if n]
    return sign + "".join(parts)
