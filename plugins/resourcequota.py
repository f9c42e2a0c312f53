"""``resourcequota``: keep a job Pending while its minimum resources would exceed one of its
namespace's ResourceQuotas.

Follows ``pkg/scheduler/plugins/resourcequota/resourcequota.go`` of volcano-sh/volcano at
ed72c7c81 (master, 2026-08-20) and at v1.15.1, with ``Mask``, ``Add`` and ``LessThanOrEqual`` of
``k8s.io/apiserver/pkg/quota/v1`` ported below on exact quantities (:class:`fractions.Fraction`,
like ``Quantity.Cmp``; never floats).

For each quota of the job's namespace (``NamespaceInfo[ns].QuotaStatus``: the quota *status*,
``hard`` and ``used``): the job's ``MinResources`` is masked to the quota's hard names (exact
names: a ``requests.cpu`` quota does not constrain a ``cpu`` minimum), added to ``used`` plus
what this session already admitted in the namespace, and compared with ``hard``. The first
exceeded quota rejects. A job without ``MinResources``, or in a namespace that never had a
quota, is permitted.

Where the session's admitted usage is recorded depends on the release (``ssn.release``):

- 1.16 and later (commit 5be98af37, v1.16.0-alpha.0): in ``JobEnqueuedFn``, which Volcano calls
  (verb ``jobEnqueued``) only once the whole vote admitted the job; the full ``MinResources`` is
  added, not only the quota's names.
- before 1.16: inside ``JobEnqueueableFn`` itself, as soon as this plugin permits — even when a
  plugin voting after it then rejects the job (the "phantom reservation" 5be98af37 fixed). Caldera
  reproduces that exactly: :meth:`job_enqueueable` records the usage and :meth:`job_enqueued`
  (which the framework calls by itself for those releases) does nothing, so the result equals
  the in-tree plugin of that release within one session, including when a Volcano-side plugin
  rejects after the extender.

What the extender cannot carry (``in_tree_only``): the PodGroup event (type Normal, reason
``Unschedulable``, ``resource quota insufficient, requested: …, used: …, limited: …``) recorded on
a Reject; Caldera logs the same message at info level (quantities printed as their strings, where
Go's ``%v`` prints ``Quantity`` structs). Go visits the quotas in random map order, which only
changes which quota the message names; Caldera visits them in the payload's order (sorted by
name, as Go's JSON encoder writes maps).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import ClassVar

from plugins.api import (
    RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED,
    Arguments,
    Background,
    Explained,
    OnError,
    Plugin,
    Reason,
    Session,
    Upstream,
    Vote,
    register,
)
from plugins.support.units import format_bytes, format_milli
from schemas.api import JobInfo, NamespaceInfo
from schemas.k8s import ResourceList
from schemas.quantity import parse_quantity

logger = logging.getLogger("caldera.plugins.resourcequota")

Quantities = dict[str, Fraction]
"""A ``v1.ResourceList`` with exact values."""


def parse_resource_list(rl: ResourceList | None) -> Quantities:
    return {name: parse_quantity(text) for name, text in (rl or {}).items()}


def quota_mask(resources: Mapping[str, Fraction], names: Iterable[str]) -> Quantities:
    """``quota.Mask``: only the entries of ``resources`` whose name is in ``names``."""
    wanted = set(names)
    return {name: amount for name, amount in resources.items() if name in wanted}


def quota_add(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Quantities:
    """``quota.Add``: the union of the names, summing those in both."""
    result = dict(a)
    for name, amount in b.items():
        result[name] = result.get(name, Fraction(0)) + amount
    return result


def quota_less_than_or_equal(
    a: Mapping[str, Fraction], b: Mapping[str, Fraction]
) -> tuple[bool, list[str]]:
    """``quota.LessThanOrEqual``: for each name of ``b`` also in ``a``, ``a <= b``; the names
    where ``a`` exceeds ``b``. Names only in ``a`` are not compared."""
    exceeded = [name for name, limit in b.items() if name in a and a[name] > limit]
    return not exceeded, exceeded


def _show(rl: ResourceList | None, names: Iterable[str]) -> str:
    """A ``%v``-like rendering of ``rl`` masked to ``names``, with the quantity strings."""
    wanted = set(names)
    items = sorted((k, v) for k, v in (rl or {}).items() if k in wanted)
    return "map[" + " ".join(f"{k}:{v}" for k, v in items) + "]"


def _exceeded(
    namespace: str,
    quota: str,
    requested: Quantities,
    used: Quantities,
    hard: Quantities,
    exceeded: list[str],
) -> Reason:
    """A Reject's numbers, written when read (the maps are this call's own)."""
    return Reason(
        "quota-exceeded",
        lambda: (
            f"quota {quota} of namespace {namespace}: "
            + ", ".join(
                f"{name} {_amount(name, requested[name])} requested,"
                f" {_amount(name, used.get(name, Fraction(0)))} used or admitted"
                f" of {_amount(name, hard[name])}"
                for name in sorted(exceeded)
            )
        ),
    )


def _amount(name: str, amount: Fraction) -> str:
    """A quota quantity in Kubernetes' units: memory and storage in bytes (``12Gi``), anything
    else (cpu cores, GPUs, counts) as a manifest writes it (``1500m``, ``2``)."""
    if name.endswith(("memory", "storage")):
        return format_bytes(float(amount))
    return format_milli(float(amount * 1000))


@register
class ResourceQuotaPlugin(Plugin):
    name: ClassVar[str] = "resourcequota"
    on_error = OnError.FAIL
    """Its Reject enforces ResourceQuota at admission: abstaining would admit jobs over quota."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/resourcequota/resourcequota.go",),
        commit="ed72c7c81",
        releases="v1.6.0 and later",
    )
    needs_snapshot: ClassVar[bool] = True
    in_tree_only: ClassVar[tuple[str, ...]] = (
        "RecordPodGroupEvent (Unschedulable, 'resource quota insufficient…'): logged instead",
    )

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.namespace_info: Mapping[str, NamespaceInfo] = {}
        self.pending_resources: dict[str, Quantities] = {}
        self._account_on_permit = False

    def on_session_open(self, ssn: Session) -> None:
        self.namespace_info = ssn.namespace_info
        self.pending_resources = {}
        self._account_on_permit = not ssn.release.has(RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED)

    def job_enqueueable(self, job: JobInfo) -> Vote | Explained[Vote]:
        pg = job.PodGroup
        min_resources = pg.spec.min_resources if pg is not None else None
        if min_resources is None:
            return Vote.PERMIT
        ns = self.namespace_info.get(job.Namespace)
        if ns is None:
            return Vote.PERMIT

        requests = parse_resource_list(min_resources)
        for quota_name, status in (ns.QuotaStatus or {}).items():
            hard = parse_resource_list(status.hard)
            requested = quota_mask(requests, hard)
            used = parse_resource_list(status.used)
            pending = self.pending_resources.get(job.Namespace)
            if pending is not None:
                used = quota_add(pending, used)
            new_usage = quota_mask(quota_add(used, requested), requested)
            allowed, exceeded = quota_less_than_or_equal(new_usage, hard)
            if not allowed:
                # The message's "used" is the quota's status, without this session's pending.
                # Debug, as upstream's klog.V(4) line: its PodGroup Event is explainEvents'
                # (deduplicated); at info a job held for an hour wrote a line every cycle.
                logger.debug(
                    "PodGroup %s/%s: Normal Unschedulable: resource quota insufficient,"
                    " requested: %s, used: %s, limited: %s (quota %s)",
                    job.Namespace,
                    job.Name,
                    _show({k: min_resources[k] for k in requested}, exceeded),
                    _show(status.used, exceeded),
                    _show(status.hard, exceeded),
                    quota_name,
                )
                return Explained(
                    Vote.REJECT,
                    _exceeded(job.Namespace, quota_name, requested, used, hard, exceeded),
                )

        if self._account_on_permit:
            self._add_pending(job.Namespace, requests)
        return Vote.PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if self._account_on_permit:
            return  # already recorded by job_enqueueable, as the in-tree plugin of that release
        pg = job.PodGroup
        if pg is None or pg.spec.min_resources is None:
            return
        if self.namespace_info.get(job.Namespace) is None:
            return
        self._add_pending(job.Namespace, parse_resource_list(pg.spec.min_resources))

    def _add_pending(self, namespace: str, requests: Quantities) -> None:
        self.pending_resources[namespace] = quota_add(
            self.pending_resources.get(namespace, {}), requests
        )
