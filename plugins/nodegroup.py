"""``nodegroup``: keep each queue's tasks on the node groups its affinity names (node label
``volcano.sh/nodegroup-name``), score them by that affinity, and cap what a queue may use per
group (queue annotation ``volcano.sh/nodegroup-resource-limits``).

Follows ``pkg/scheduler/plugins/nodegroup/{nodegroup.go,errors.go}`` of volcano-sh/volcano at
master ed72c7c81 (2026-08-20), the same files as v1.16.0-alpha.0/1. The plugin changed across
the releases Caldera serves with it (1.13 and later: ``ported_from``; v1.9-v1.12 ship an earlier
plugin that decides differently, so those releases are refused), and ``ssn.release`` selects
the behaviour (the allocate/deallocate verbs are needed only from 1.16, ``required_verbs``):

- v1.13.0 to v1.14.x (identical files): no ``enablePreferredOrder`` (the argument is ignored),
  no resource limits, no event handlers. A task whose job or queue is missing from the session
  makes upstream dereference nil and crash the scheduler; Caldera answers as v1.15 does.
- v1.15.x (v1.15.1, 0a56ed331): adds ``enablePreferredOrder``, and a predicate for a task whose
  job is not in the session fails with the plain error ``job <ns/pg> not found in session``
  (not a FitError, so Volcano wraps it with code 1, Error).
- v1.16 (commit f3a1bf1ff, "feat: add nodegroup resource limits"): adds the resource limits
  and the allocate/deallocate handlers that keep each queue's use per group. Before 1.16 the
  annotation is ignored and allocate/deallocate change nothing, as the in-tree plugin has no
  such state.

Arguments: ``strict`` (``GetBool``, default true), ``enablePreferredOrder`` (``GetBool``,
default false, v1.15+); the plugin option ``enableHierarchy`` (false unless set true).

Session open (``initQueueAttrs``, ``initNodeGroupAllocated``): for each queue, the four sets of
its ``spec.affinity`` (nil affinity = none; ``affinity: {}`` is a non-nil, empty affinity) and
the preferred groups' list positions (a repeated group keeps its last position; ``n`` counts
distinct groups). With ``enableHierarchy`` a queue without affinity takes that of its nearest
ancestor along ``spec.parent`` (empty means ``root``). The walk stops at ``root``, at a parent
missing from the snapshot (upstream then builds no ancestors for the queue whose parent is
missing) and on a cycle; ``root``'s own parent is never followed. This is upstream's ancestor
list read nearest first, so the result does not depend on Go's map order. From v1.16, the
limits annotation is parsed per queue, and every task of a job in an allocated status (Bound,
Binding, Running, Allocated; not Pipelined) on a snapshot node carrying a group label adds its
``Resreq`` to its queue's use of that group.

``predicate`` (``PredicateFn``), in upstream's order, every failure code 3
(UnschedulableAndUnresolvable, upstream's ``newFitErr``):

1. job not in the session: ``job <ns/pg> not found in session``, code 1 (v1.15+, see above);
2. v1.16: the queue's limits annotation is invalid: ``node group resource limit annotation
   invalid`` on every node, labelled or not;
3. the node has no group label: passes when ``strict`` is false and the queue's affinity is
   unset (nil, or all four sets empty), else ``node group label not found``;
4. the queue's affinity is unset: ``node group affinity not specified``;
5. the group is neither affinity-required nor -preferred, or it is anti-required, and it is not
   anti-preferred (anti-preferred allows a group even when anti-required):
   ``node does not satisfy the node group affinity``;
6. v1.16: the queue's use of the group plus the task's ``Resreq`` exceeds a dimension the
   group's limit names (by at least 0.1 in Volcano's units: milli-CPU, bytes, pods as a count,
   other scalars in milli-units): ``node group resource limit exceeded``. A dimension the limit
   does not name is unlimited.

``prioritize`` (``NodeOrderFn``, no plugin weight): 0 for a node without a group label, a task
whose job is not in the session, or a queue without affinity; otherwise 100 if the group is
affinity-required, plus 50 if affinity-preferred (with ``enablePreferredOrder``:
``0.5 * 100 * (n - i) / n`` for position ``i`` of ``n``), and exactly -1 if anti-preferred
(overriding the rest). Anti-required alone scores 0.

``allocate`` / ``deallocate`` (v1.16 ``EventHandler``): the task's ``Resreq`` is added to or
taken from its queue's use of the group of the snapshot node it is on (``task.NodeName``);
nothing happens for a task whose job, queue, node or node label is unknown, and a deallocate
for a group with no use recorded is ignored, as upstream. They follow every event Volcano sends,
including the deallocate that rolls back a discarded statement, so a limit reached within a
session is freed again.

The limits annotation is read as Go's ``encoding/json`` reads a
``map[string]v1.ResourceList``: a JSON object (or ``null``: no limits) of objects (or ``null``:
no named dimension) whose values are quantity strings, bare JSON numbers (read as the quantity
of their text) or ``null`` (zero); anything else, or a quantity that does not parse, makes the
annotation invalid. For duplicate keys the last wins. Go hands ``ParseQuantity`` the raw bytes
between the quotes; Caldera decodes JSON escapes first, so a quantity spelled with ``\\u``
escapes parses here and not upstream (no real annotation does this).

Deliberate choices:

- Upstream's asserting ``Resource.Sub`` would panic when a deallocate takes more than a group's
  recorded use (an allocate Caldera never saw); the use is floored at zero per dimension and
  reported through ``ssn.clamped``.
- Upstream logs the names of the exceeded dimensions in map order; the answer carries only the
  constant reason, so nothing depends on that order.

With Caldera's ``managedResources`` set, Volcano sends no allocate/deallocate event (and no
predicate) for a task outside them, so such a task's placement within the session is not
counted against its queue's group limits until the next snapshot shows it.

What the extender cannot carry: nothing (``in_tree_only`` is empty). ``enableHierarchy``,
``strict`` and ``enablePreferredOrder`` are configured on Caldera's plugin entry, since Volcano
does not send the extender's plugin options.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from plugins.api import (
    NODEGROUP_AS_PORTED,
    NODEGROUP_PREFERRED_ORDER,
    NODEGROUP_RESOURCE_LIMITS,
    Arguments,
    Background,
    FitError,
    Plugin,
    Release,
    Session,
    StatusCode,
    Upstream,
    Verb,
    register,
)
from plugins.support.queues import ROOT
from plugins.support.resources import (
    add_in_place,
    clone,
    new_resource,
    resource_get,
    sub_clamped_in_place,
)
from schemas.api import ALLOCATED_STATUSES, NodeInfo, QueueInfo, Resource, TaskInfo
from schemas.quantity import QuantityError, parse_quantity

logger = logging.getLogger("caldera.plugins.nodegroup")

PLUGIN_NAME = "nodegroup"
NODE_GROUP_NAME_KEY = "volcano.sh/nodegroup-name"
"""``schedulingv1.NodeGroupNameKey``."""
RESOURCE_LIMITS_ANNOTATION = "volcano.sh/nodegroup-resource-limits"
"""``schedulingv1.NodeGroupResourceLimitsAnnotationKey``."""
BASE_SCORE = 100
MIN_RESOURCE = 0.1
"""``api.GetMinResource()``."""

ERR_AFFINITY_NOT_FOUND = "node group affinity not specified"
ERR_LABEL_NOT_FOUND = "node group label not found"
ERR_NODE_UNSATISFIED = "node does not satisfy the node group affinity"
ERR_LIMIT_INVALID = "node group resource limit annotation invalid"
ERR_LIMIT_EXCEEDED = "node group resource limit exceeded"


@dataclass(slots=True)
class QueueGroupAffinity:
    """``queueGroupAffinity``: the four group sets and the preferred groups' positions."""

    affinity_required: frozenset[str] = frozenset()
    affinity_preferred: frozenset[str] = frozenset()
    anti_affinity_required: frozenset[str] = frozenset()
    anti_affinity_preferred: frozenset[str] = frozenset()
    preferred_indexes: dict[str, int] = field(default_factory=dict)

    def unset(self) -> bool:
        return not (
            self.affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )

    def allows(self, group: str) -> bool:
        """``queueGroupAffinity.predicate``: anti-required excludes, anti-preferred allows."""
        flag = group in self.affinity_required or group in self.affinity_preferred
        if group in self.anti_affinity_required:
            flag = False
        if group in self.anti_affinity_preferred:
            flag = True
        return flag

    def score(self, group: str, enable_preferred_order: bool) -> float:
        """``queueGroupAffinity.score``."""
        node_score = 0.0
        if group in self.affinity_required:
            node_score += BASE_SCORE
        if enable_preferred_order:
            index = self.preferred_indexes.get(group)
            if index is not None:
                n = len(self.preferred_indexes)
                node_score += 0.5 * BASE_SCORE * float(n - index) / float(n)
        elif group in self.affinity_preferred:
            node_score += 0.5 * BASE_SCORE
        if group in self.anti_affinity_preferred:
            node_score = -1.0
        return node_score


def queue_group_affinity(queue: QueueInfo) -> QueueGroupAffinity | None:
    """``newQueueGroupAffinity``: None when the queue's ``spec.affinity`` is nil."""
    spec_affinity = queue.Queue.spec.affinity if queue.Queue is not None else None
    if spec_affinity is None:
        return None
    result = QueueGroupAffinity()
    affinity = spec_affinity.node_group_affinity
    if affinity is not None:
        preferred = affinity.preferred_during_scheduling_ignored_during_execution or []
        result.affinity_preferred = frozenset(preferred)
        result.affinity_required = frozenset(
            affinity.required_during_scheduling_ignored_during_execution or []
        )
        result.preferred_indexes = {group: i for i, group in enumerate(preferred)}
    anti = spec_affinity.node_group_anti_affinity
    if anti is not None:
        result.anti_affinity_preferred = frozenset(
            anti.preferred_during_scheduling_ignored_during_execution or []
        )
        result.anti_affinity_required = frozenset(
            anti.required_during_scheduling_ignored_during_execution or []
        )
    return result


@dataclass(frozen=True, slots=True)
class GroupLimit:
    """``nodeGroupResourceLimit``: the limit and the dimensions the annotation names."""

    resource: Resource
    names: tuple[str, ...]


class LimitsError(ValueError):
    """The annotation is not a JSON ``map[string]v1.ResourceList``."""


def _reject_constant(text: str) -> Any:
    raise LimitsError(f"invalid JSON value {text}")


def _quantity_text(value: Any) -> str:
    """One ``Quantity.UnmarshalJSON``: a string or a number's text (kept as text by the
    decoder), trimmed; ``null`` is zero."""
    if value is None:
        return "0"
    if not isinstance(value, str):
        raise LimitsError(f"cannot unmarshal {type(value).__name__} into a quantity")
    text = value.strip()
    try:
        parse_quantity(text)
    except QuantityError as exc:
        raise LimitsError(str(exc)) from exc
    return text


def parse_resource_limits(raw: str) -> dict[str, GroupLimit]:
    """``parseNodeGroupResourceLimits`` for a non-empty annotation; :class:`LimitsError` where
    ``json.Unmarshal`` fails."""
    try:
        decoded = json.loads(raw, parse_int=str, parse_float=str, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise LimitsError(str(exc)) from exc
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        raise LimitsError("the annotation is not a JSON object")
    limits: dict[str, GroupLimit] = {}
    for group, resource_list in decoded.items():
        if resource_list is None:
            limits[group] = GroupLimit(Resource(), ())
            continue
        if not isinstance(resource_list, dict):
            raise LimitsError(f"group {group!r}: not a resource list")
        quantities = {name: _quantity_text(value) for name, value in resource_list.items()}
        limits[group] = GroupLimit(new_resource(quantities), tuple(quantities))
    return limits


def _greater_than_limit(used: float, limit: float) -> bool:
    """``greaterThanResourceLimit``."""
    return used > limit and used - limit >= MIN_RESOURCE


def exceeded_names(used: Resource, limit: GroupLimit) -> list[str]:
    """``limitedResourceExceededNames``: the named dimensions ``used`` exceeds, cpu and memory
    first, then the others in the annotation's order."""
    names = [
        name
        for name in limit.names
        if _greater_than_limit(resource_get(used, name), resource_get(limit.resource, name))
    ]
    return sorted(names, key=lambda name: (name != "cpu", name != "memory"))


@dataclass(slots=True)
class QueueAttr:
    """``queueAttr``: the queue's (possibly inherited) affinity, its limits and its use per
    group."""

    affinity: QueueGroupAffinity | None
    limits: dict[str, GroupLimit] = field(default_factory=dict)
    limits_error: str | None = None
    allocated: dict[str, Resource] = field(default_factory=dict)


def _node_group(node: NodeInfo | None) -> str | None:
    """The node's ``volcano.sh/nodegroup-name`` label, or None."""
    if node is None or node.Node is None or node.Node.metadata is None:
        return None
    labels = node.Node.metadata.labels
    if labels is None:
        return None
    return labels.get(NODE_GROUP_NAME_KEY)


@register
class NodeGroupPlugin(Plugin):
    name: ClassVar[str] = PLUGIN_NAME
    on_error: ClassVar[Literal["fail", "abstain"]] = "fail"
    """A queue's node groups are a hard placement rule: abstaining would place pods outside them."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=(
            "pkg/scheduler/plugins/nodegroup/nodegroup.go",
            "pkg/scheduler/plugins/nodegroup/errors.go",
        ),
        commit="ed72c7c81",
        releases="v1.13.0 and later",
    )
    needs_snapshot: ClassVar[bool] = True
    requires_verbs: ClassVar[tuple[str, ...]] = (Verb.ALLOCATE, Verb.DEALLOCATE)
    ported_from = NODEGROUP_AS_PORTED

    @classmethod
    def required_verbs(cls, release: Release) -> tuple[str, ...]:
        """The allocate/deallocate handlers exist from 1.16 (per-group resource limits); before
        it the plugin keeps no state across a session's placements, so it needs no events."""
        return cls.requires_verbs if release.has(NODEGROUP_RESOURCE_LIMITS) else ()

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.strict = arguments.get_bool("strict", True)
        self.enable_preferred_order_argument = arguments.get_bool("enablePreferredOrder", False)
        self.enable_preferred_order = self.enable_preferred_order_argument
        self.hierarchy = arguments.enabled("enableHierarchy")
        self.resource_limits = True
        self.queue_attrs: dict[str, QueueAttr] = {}
        self.jobs_queue: dict[str, str] = {}
        self.node_groups: dict[str, str] = {}
        self._clamped: functools.partial[None] | None = None

    # --- session ----------------------------------------------------------------------------

    def hooks(self) -> frozenset[str]:
        hooks = super().hooks()
        if not self.resource_limits:
            # As upstream before 1.16: its allocate/deallocate handlers arrive with the resource limits (1.16); no verb to send.
            hooks -= {"allocate", "deallocate"}
        return hooks

    def on_session_open(self, ssn: Session) -> None:
        release = ssn.release
        self.enable_preferred_order = self.enable_preferred_order_argument and release.has(
            NODEGROUP_PREFERRED_ORDER
        )
        self.resource_limits = release.has(NODEGROUP_RESOURCE_LIMITS)
        self._clamped = functools.partial(ssn.clamped, PLUGIN_NAME)
        self.jobs_queue = {key: job.Queue for key, job in ssn.jobs.items()}
        self.node_groups = {}
        for name, node in ssn.nodes.items():
            group = _node_group(node)
            if group is not None:
                self.node_groups[name] = group
        self.queue_attrs = {
            name: QueueAttr(queue_group_affinity(queue)) for name, queue in ssn.queues.items()
        }
        if self.hierarchy:
            self._inherit_affinity(ssn.queues)
        if not self.resource_limits:
            return
        for name, queue in ssn.queues.items():
            self._read_limits(name, queue)
        for job in ssn.jobs.values():
            attr = self.queue_attrs.get(job.Queue)
            if attr is None:
                continue
            for task in (job.Tasks or {}).values():
                if task.Status in ALLOCATED_STATUSES:
                    self._add_allocated(attr, task)

    def _inherit_affinity(self, queues: Mapping[str, QueueInfo]) -> None:
        """``buildAncestors`` + ``updateAffinityFromAncestor``: the nearest ancestor's own
        affinity, walking ``spec.parent`` (see the module docstring for where it stops)."""
        own = {name: attr.affinity for name, attr in self.queue_attrs.items()}
        for name, attr in self.queue_attrs.items():
            if attr.affinity is not None:
                continue
            seen = {name}
            current = name
            while current != ROOT:
                info = queues[current]
                parent = (info.Queue.spec.parent if info.Queue is not None else "") or ROOT
                if parent in seen or parent not in queues:
                    break
                seen.add(parent)
                inherited = own[parent]
                if inherited is not None:
                    attr.affinity = inherited
                    break
                current = parent

    def _read_limits(self, name: str, queue: QueueInfo) -> None:
        annotations = queue.Queue.metadata.annotations if queue.Queue is not None else None
        raw = (annotations or {}).get(RESOURCE_LIMITS_ANNOTATION, "")
        if not raw:
            return
        attr = self.queue_attrs[name]
        try:
            attr.limits = parse_resource_limits(raw)
        except LimitsError as exc:
            attr.limits_error = str(exc)
            logger.error(
                "queue <%s> has invalid %s annotation: %s", name, RESOURCE_LIMITS_ANNOTATION, exc
            )

    def on_session_close(self) -> None:
        self.queue_attrs = {}
        self.jobs_queue = {}
        self.node_groups = {}

    # --- use per group ------------------------------------------------------------------------

    def _task_attr(self, task: TaskInfo) -> QueueAttr | None:
        queue = self.jobs_queue.get(task.Job)
        return None if queue is None else self.queue_attrs.get(queue)

    def _add_allocated(self, attr: QueueAttr, task: TaskInfo) -> None:
        """``addNodeGroupAllocated``."""
        group = self.node_groups.get(task.NodeName) if task.NodeName else None
        if group is None:
            return
        allocated = attr.allocated.get(group)
        if allocated is None:
            allocated = attr.allocated[group] = Resource()
        add_in_place(allocated, task.Resreq)

    def _sub_allocated(self, attr: QueueAttr, task: TaskInfo) -> None:
        """``subNodeGroupAllocated``, floored at zero."""
        group = self.node_groups.get(task.NodeName) if task.NodeName else None
        if group is None:
            return
        allocated = attr.allocated.get(group)
        if allocated is None:
            return
        sub_clamped_in_place(allocated, task.Resreq, self._clamped)

    def limit_exceeded(self, attr: QueueAttr, task: TaskInfo, group: str) -> list[str]:
        """``checkNodeGroupResourceLimit`` with a valid annotation: the exceeded dimensions."""
        limit = attr.limits.get(group)
        if limit is None:
            return []
        future = clone(attr.allocated.get(group))
        add_in_place(future, task.Resreq)
        return exceeded_names(future, limit)

    # --- extension points -----------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        queue = self.jobs_queue.get(task.Job)
        if queue is None:
            return FitError(f"job {task.Job} not found in session", StatusCode.ERROR)
        attr = self.queue_attrs.get(queue)
        if attr is not None and attr.limits_error is not None:
            return FitError(ERR_LIMIT_INVALID)
        affinity = attr.affinity if attr is not None else None
        unset = affinity is None or affinity.unset()
        group = _node_group(node)
        if group is None:
            if not self.strict and unset:
                return None
            return FitError(ERR_LABEL_NOT_FOUND)
        if affinity is None or unset:
            return FitError(ERR_AFFINITY_NOT_FOUND)
        if not affinity.allows(group):
            return FitError(ERR_NODE_UNSATISFIED)
        if attr is not None and self.resource_limits:
            exceeded = self.limit_exceeded(attr, task, group)
            if exceeded:
                logger.debug(
                    "task <%s>/<%s> queue %s on nodegroup %s rejected by nodegroup resource"
                    " limit: insufficient resources: %s",
                    task.Namespace,
                    task.Name,
                    queue,
                    group,
                    exceeded,
                )
                return FitError(ERR_LIMIT_EXCEEDED)
        return None

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """``NodeOrderFn`` for every candidate node, the task's queue looked up once."""
        attr = self._task_attr(task)
        affinity = attr.affinity if attr is not None else None
        scores: dict[str, float] = {}
        for node in nodes:
            group = _node_group(node)
            if group is None or affinity is None:
                scores[node.Name] = 0.0
            else:
                scores[node.Name] = affinity.score(group, self.enable_preferred_order)
        return scores

    def allocate(self, task: TaskInfo) -> str | None:
        """``AllocateFunc`` (v1.16): fired on allocate, pipeline and unevict."""
        if self.resource_limits:
            attr = self._task_attr(task)
            if attr is not None:
                self._add_allocated(attr, task)
        return None

    def deallocate(self, task: TaskInfo) -> str | None:
        """``DeallocateFunc`` (v1.16): fired on evict, unpipeline and a discarded statement."""
        if self.resource_limits:
            attr = self._task_attr(task)
            if attr is not None:
                self._sub_allocated(attr, task)
        return None
