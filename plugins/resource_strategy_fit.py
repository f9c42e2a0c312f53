"""``resource-strategy-fit``: score nodes per resource with MostAllocated / LeastAllocated
strategies, steer tasks away from nodes holding scarce resources (SRA), and keep CPU and memory
in proportion to a node's idle GPUs (proportional predicate).

Follows ``pkg/scheduler/plugins/resource-strategy-fit/{resource_strategy_fit.go,sra.go,
proportional.go}`` of volcano-sh/volcano at v1.15.1 (0a56ed331). The files are the same from
v1.13.0, where the plugin first shipped, to master ed72c7c81 (2026-08-20) and v1.14.1, except
for the import path of ``MaxNodeScore`` (100 throughout), so nothing branches on
``ssn.release``. Before v1.13 Volcano has no such plugin; hosted by Caldera it behaves as in
v1.13+.

Hooks, registered exactly when upstream registers them (:meth:`ResourceStrategyFitPlugin.hooks`):

- ``predicate`` (``PredicateFn``) when ``proportional.enable`` is true, even with no resources
  listed. A task asking for none of the proportional resources fails a node that has one of
  them in ``Idle.ScalarResources`` (even at 0) when ``Idle.MilliCPU - Resreq.MilliCPU`` is below
  ``idle * cpu rate`` or ``Idle.Memory - Resreq.Memory`` below ``idle * memory rate * 10^6``.
  Idle scalars are milli-units, so the CPU rate is in cores per idle GPU and the memory rate in
  decimal GB (10^9 bytes) per idle GPU. The failure is ``proportional of resource <name> check
  failed`` with code 3 (UnschedulableAndUnresolvable): upstream's status carries that code and
  ``util.ShouldAbort`` returns it as the FitError, so preemption does not consider the node.
- ``prioritize`` (``NodeOrderFn``) when ``resourceStrategyFitWeight > 0`` or ``sra.weight > 0``:
  the sum of the two scores below, from the task's ``Resreq`` and pod annotations and the
  live node's ``Allocatable`` and ``Used`` as the request carries them.

Main score, for every resource of ``Resreq.ResourceNames()`` (cpu, memory and each scalar of
at least 0.1, ``pods`` included) that has a strategy: MostAllocated scores
``(req + used) * w / alloc``, LeastAllocated ``(alloc - req - used) * w / alloc``, 0 when
``w`` or ``alloc`` is 0, any other type 0; the weight counts in the sum in every case. A
resource where ``req + used > alloc`` makes the whole main score 0. The total is divided by the
weight sum (when positive) and multiplied by ``100 * resourceStrategyFitWeight``. The strategy of
a resource is the ``resources`` entry of its exact name, else the wildcard entry with the
longest prefix of it, else none (the resource is skipped). A pod annotated
``volcano.sh/resource-strategy-scoring-type: <type>`` uses that type for every resource and the
weights of ``volcano.sh/resource-strategy-weight`` (JSON ``{"<exact name>": int}``; no
wildcards; a resource it does not name is skipped); a missing, empty or invalid weight
annotation makes the main score 0. The weights are read as Go's ``encoding/json`` reads a
``map[ResourceName]int``: integer literals within int64 only (``1.0``, ``1e2``, ``"1"`` and
``true`` are errors), ``null`` is an empty map and a ``null`` weight is 0, the last of
duplicate keys wins.

SRA score: 0 when the node's ``Allocatable`` lacks any resource the task requests (``pods``
included); else ``(1 - sum of the weights of the sra resources the node has / their weight sum)
* 100 * sra.weight`` (without the ``1 -`` step when the weight sum is 0).

Arguments (decoded like upstream's ``framework.Get``, see :mod:`plugins.api.mapstructure`):

- ``resourceStrategyFitWeight`` int, default 10; absent or negative gives 10, 0 turns the main
  score off (a ``null`` value decodes to 0).
- ``resources``: map of resource name or ``prefix*`` to ``{type, weight}``. Absent or empty gives
  ``{cpu: LeastAllocated 1, memory: LeastAllocated 1}``. A key with ``*`` anywhere but as its
  single last character, or ``*`` alone, is dropped (when every key is dropped the map stays
  empty). ``weight <= 0`` becomes 1; a type other than ``LeastAllocated`` / ``MostAllocated``
  (case-sensitive) becomes ``LeastAllocated``.
- ``sra``: ``enable`` (bool), ``resources`` (comma-separated, trimmed, empty entries skipped),
  ``weight`` (int, 0 when absent: SRA scoring then stays off), ``resourceWeight`` (name to int;
  missing or negative gives 1, 0 is kept). The weight sum adds one weight per listed entry, so a
  name listed twice counts twice, as upstream.
- ``proportional``: ``enable`` (bool), ``resources`` (comma-separated), ``resourceProportion``
  (``"<name>.cpu"`` / ``"<name>.memory"`` to a float; missing or negative gives 1.0).

A value upstream's decoder refuses (a string weight, a non-map ``resources``, …) makes the
Volcano scheduler exit; here it is an :meth:`~ResourceStrategyFitPlugin.argument_errors` entry
(the configuration is refused) and, should the plugin be built anyway, the argument's default.

Deliberate choices where upstream depends on Go map order:

- The request's scalars are visited in the payload's order (Go's JSON encoder writes map keys
  sorted), so the float sum is the same on every call; upstream's order varies between calls
  and may differ from it in the last bit.
- The proportional resources are checked in the order ``proportional.resources`` lists them,
  so the failure names the first listed resource that fails; upstream names a random one.

Per prioritize call the annotation parsing, the resource list and each resource's strategy are
computed once; each node then costs a few dictionary reads. Nothing is kept between calls and
the snapshot is not read, so the plugin needs no session (``needs_snapshot`` is false).

What the extender cannot carry: nothing; both hooks map onto verbs (``in_tree_only`` is empty).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from plugins.api import (
    Arguments,
    Background,
    DecodeError,
    FitError,
    OnError,
    Plugin,
    StatusCode,
    Upstream,
    argument_warning,
    decode_bool,
    decode_float,
    decode_int,
    decode_map,
    decode_string,
    register,
    struct_fields,
)
from plugins.support.goint import as_go_int
from plugins.support.resources import resource_get, resource_names
from schemas.api import NodeInfo, TaskInfo

logger = logging.getLogger("caldera.plugins.resource_strategy_fit")

_T = TypeVar("_T")

PLUGIN_NAME = "resource-strategy-fit"
DEFAULT_WEIGHT = 10
"""``DefaultResourceStrategyFitPluginWeight``."""
MAX_NODE_SCORE = 100
"""``fwk.MaxNodeScore``."""

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"

SCORING_TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"


@dataclass(frozen=True, slots=True)
class ResourcesType:
    """One ``resources`` entry: a scoring strategy and its weight."""

    type: str
    weight: int


@dataclass(slots=True)
class ResourceStrategyFit:
    """``ResourceStrategyFit``: the plugin weight and the per-resource strategies."""

    weight: int
    resources: dict[str, ResourcesType]


@dataclass(slots=True)
class SraWeight:
    """``sraWeight``: the SRA weight, the scarce resources' weights and their sum."""

    weight: int = 0
    resources: dict[str, int] = field(default_factory=dict)
    weight_sum: int = 0


@dataclass(frozen=True, slots=True)
class BaseResource:
    """``baseResource``: CPU cores and decimal GB reserved per idle unit of a resource."""

    cpu: float
    memory: float


DEFAULT_RESOURCES = {
    "cpu": ResourcesType(LEAST_ALLOCATED, 1),
    "memory": ResourcesType(LEAST_ALLOCATED, 1),
}


# --- arguments ---------------------------------------------------------------------------------


def is_valid_wildcard_pattern(pattern: str) -> bool:
    """``isValidWildcardPattern``: no ``*``, or a single trailing ``*`` after a prefix."""
    if "*" not in pattern:
        return True
    if pattern == "*":
        return False
    return pattern.endswith("*") and pattern.count("*") == 1


def _decode_resources_type(raw: Any, path: str) -> ResourcesType:
    found = struct_fields(raw, path, ("Type", "Weight"))
    return ResourcesType(
        type=decode_string(found.get("Type"), f"{path}.Type"),
        weight=decode_int(found.get("Weight"), f"{path}.Weight"),
    )


def parse_plugin_weight(arguments: Mapping[str, Any]) -> int:
    """``resourceStrategyFitWeight``: absent or negative gives 10 (``null`` decodes to 0)."""
    if "resourceStrategyFitWeight" not in arguments:
        return DEFAULT_WEIGHT
    weight = decode_int(arguments["resourceStrategyFitWeight"], "resourceStrategyFitWeight")
    return DEFAULT_WEIGHT if weight < 0 else weight


def parse_resources(arguments: Mapping[str, Any]) -> dict[str, ResourcesType]:
    """``resources``: the defaults when absent or empty; invalid wildcard keys dropped, weights
    and types normalised."""
    resources = None
    if "resources" in arguments:
        resources = decode_map(arguments["resources"], "resources", _decode_resources_type)
    if not resources:
        return dict(DEFAULT_RESOURCES)
    normalised: dict[str, ResourcesType] = {}
    for key, config in resources.items():
        if not is_valid_wildcard_pattern(key):
            if key == "*":
                argument_warning(
                    arguments,
                    logger,
                    "Single asterisk '*' is not supported as default strategy. Please use specific"
                    " resource patterns like 'cloudml.gpu/*'. Pattern ignored.",
                )
            else:
                argument_warning(
                    arguments,
                    logger,
                    f"Invalid wildcard pattern '{key}': only single trailing asterisk is supported"
                    " (e.g., 'cloudml.gpu/*'). Pattern ignored.",
                )
            continue
        kind = config.type if config.type in (LEAST_ALLOCATED, MOST_ALLOCATED) else LEAST_ALLOCATED
        normalised[key] = ResourcesType(kind, config.weight if config.weight > 0 else 1)
    return normalised


def calculate_weight(arguments: Mapping[str, Any]) -> ResourceStrategyFit:
    """``calculateWeight``. Raises :class:`DecodeError` where upstream's ``framework.Get`` would
    be fatal."""
    return ResourceStrategyFit(parse_plugin_weight(arguments), parse_resources(arguments))


def _split_names(text: str) -> list[str]:
    return [name for name in (part.strip() for part in text.split(",")) if name]


def calculate_sra_weight(arguments: Mapping[str, Any]) -> SraWeight:
    """``applySraPolicy`` + ``calculateSraWeight``: an all-zero value unless ``sra.enable``."""
    if "sra" not in arguments:
        return SraWeight()
    found = struct_fields(
        arguments["sra"], "sra", ("Enable", "Resources", "Weight", "ResourceWeight")
    )
    enable = decode_bool(found.get("Enable"), "sra.Enable")
    names = decode_string(found.get("Resources"), "sra.Resources")
    weight = decode_int(found.get("Weight"), "sra.Weight")
    weights = decode_map(found.get("ResourceWeight"), "sra.ResourceWeight", decode_int) or {}
    if not enable:
        return SraWeight()
    sra = SraWeight(weight=weight)
    for name in _split_names(names):
        resource_weight = weights.get(name, 1)
        if resource_weight < 0:
            resource_weight = 1
        sra.resources[name] = resource_weight
        sra.weight_sum += resource_weight
    return sra


def calculate_proportional(arguments: Mapping[str, Any]) -> dict[str, BaseResource] | None:
    """``applyProportionalPolicy`` + ``calculateProportionalResources``: None unless
    ``proportional.enable`` (then the predicate is registered, even with no resources)."""
    if "proportional" not in arguments:
        return None
    found = struct_fields(
        arguments["proportional"], "proportional", ("Enable", "Resources", "ResourceProportion")
    )
    enable = decode_bool(found.get("Enable"), "proportional.Enable")
    names = decode_string(found.get("Resources"), "proportional.Resources")
    rates = (
        decode_map(found.get("ResourceProportion"), "proportional.ResourceProportion", decode_float)
        or {}
    )
    if not enable:
        return None
    proportional: dict[str, BaseResource] = {}
    for name in _split_names(names):
        cpu = rates.get(name + ".cpu", 1.0)
        memory = rates.get(name + ".memory", 1.0)
        proportional[name] = BaseResource(cpu if cpu >= 0 else 1.0, memory if memory >= 0 else 1.0)
    return proportional


_ARGUMENT_PARSERS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "resourceStrategyFitWeight": parse_plugin_weight,
    "resources": parse_resources,
    "sra": calculate_sra_weight,
    "proportional": calculate_proportional,
}
"""Each top-level argument and the decoder that reads it."""


# --- the main score ----------------------------------------------------------------------------


def find_resource_config_with_prefix(
    resource: str, resources: Mapping[str, ResourcesType]
) -> ResourcesType | None:
    """``findResourceConfigWithPrefix``: the exact key, else the longest matching wildcard
    prefix (two matching prefixes of one length are the same key, so the map order of upstream
    cannot change the answer), else None."""
    exact = resources.get(resource)
    if exact is not None:
        return exact
    best: ResourcesType | None = None
    best_length = 0
    for key, config in resources.items():
        if "*" in key:
            prefix = key[:-1] if key.endswith("*") else key
            if resource.startswith(prefix) and len(prefix) > best_length:
                best, best_length = config, len(prefix)
    return best


class NotEnough(Exception):
    """``validateAndCalcUsedFinally``: ``node resources are not enough``."""


def most_requested_score(requested: float, used: float, capacity: float, weight: int) -> float:
    """``mostRequestedScore``: ``(requested + used) * weight / capacity``."""
    if weight == 0 or capacity == 0:
        return 0.0
    used_finally = requested + used
    if used_finally > capacity:
        raise NotEnough("node resources are not enough")
    return used_finally * weight / capacity


def least_requested_score(requested: float, used: float, capacity: float, weight: int) -> float:
    """``leastRequestedScore``: ``(capacity - requested - used) * weight / capacity``."""
    if weight == 0 or capacity == 0:
        return 0.0
    used_finally = requested + used
    if used_finally > capacity:
        raise NotEnough("node resources are not enough")
    return (capacity - used_finally) * weight / capacity


@dataclass(frozen=True, slots=True)
class ScoredResource:
    """One requested resource that takes part in the main score."""

    name: str
    request: float
    type: str
    weight: int


def _pod_annotations(task: TaskInfo) -> Mapping[str, str]:
    pod = task.Pod
    if pod is None or pod.metadata is None or pod.metadata.annotations is None:
        return {}
    return pod.metadata.annotations


class _NotAnInt:
    """What a JSON literal Go cannot store in an ``int`` decodes to here."""


def _not_an_int(_: str) -> _NotAnInt:
    return _NotAnInt()


def parse_pod_weights(text: str) -> dict[str, int] | None:
    """``json.Unmarshal`` into ``map[v1.ResourceName]int``: None when Go reports an error (not
    an object or null, a value that is not an integer literal, or one outside int64). A ``null``
    value stores the element's zero value under its key, no error (encoding/json decodes each
    map element into a fresh zero ``int``, which null leaves as it is, then sets the key)."""
    try:
        # A float or NaN literal is an error for an int, as a string or a bool is; null is not.
        decoded = json.loads(text, parse_float=_not_an_int, parse_constant=_not_an_int)
    except (ValueError, RecursionError):
        return None
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        return None
    weights: dict[str, int] = {}
    for name, weight in decoded.items():
        if weight is None:
            weights[name] = 0
            continue
        if as_go_int(weight) is None:
            return None
        weights[name] = weight
    return weights


def plan_score(task: TaskInfo, fit: ResourceStrategyFit) -> list[ScoredResource] | None:
    """The per-task part of upstream ``Score``: which requested resources are scored, how and
    with which weight. None means the main score is 0 on every node (the pod's scoring type
    annotation without a usable weight annotation)."""
    annotations = _pod_annotations(task)
    pod_type = annotations.get(SCORING_TYPE_ANNOTATION, "")
    pod_weights: dict[str, int] | None = None
    if pod_type:
        text = annotations.get(WEIGHT_ANNOTATION, "")
        if not text:
            logger.error(
                "pod %s/%s: annotation '%s' is present, but annotation '%s' is missing or empty",
                task.Namespace,
                task.Name,
                SCORING_TYPE_ANNOTATION,
                WEIGHT_ANNOTATION,
            )
            return None
        pod_weights = parse_pod_weights(text)
        if pod_weights is None:
            logger.error("failed to unmarshal pod level scoring weight: %r", text)
            return None
    plan: list[ScoredResource] = []
    requested = task.Resreq
    for name in resource_names(requested):
        request = resource_get(requested, name)
        if pod_weights is not None:
            if name not in pod_weights:
                continue
            plan.append(ScoredResource(name, request, pod_type, pod_weights[name]))
        else:
            config = find_resource_config_with_prefix(name, fit.resources)
            if config is None:
                continue
            plan.append(ScoredResource(name, request, config.type, config.weight))
    return plan


def score_node(plan: Sequence[ScoredResource] | None, node: NodeInfo, plugin_weight: int) -> float:
    """The per-node part of upstream ``Score``."""
    if plan is None:
        return 0.0
    score = 0.0
    weight_sum = 0
    for resource in plan:
        allocatable = resource_get(node.Allocatable, resource.name)
        used = resource_get(node.Used, resource.name)
        try:
            if resource.type == MOST_ALLOCATED:
                resource_score = most_requested_score(
                    resource.request, used, allocatable, resource.weight
                )
            elif resource.type == LEAST_ALLOCATED:
                resource_score = least_requested_score(
                    resource.request, used, allocatable, resource.weight
                )
            else:
                resource_score = 0.0
        except NotEnough:
            return 0.0
        score += resource_score
        weight_sum += resource.weight
    if weight_sum > 0:
        score /= weight_sum
    score *= float(MAX_NODE_SCORE) * float(plugin_weight)
    return score


def score(task: TaskInfo, node: NodeInfo, fit: ResourceStrategyFit) -> float:
    """Upstream ``Score(task, node, weight)`` for one node."""
    return score_node(plan_score(task, fit), node, fit.weight)


# --- SRA ---------------------------------------------------------------------------------------


def sra_score(requested: Sequence[str], node: NodeInfo, sra: SraWeight) -> float:
    """``sraScore`` for the task's requested resource names."""
    allocatable = node.Allocatable
    for name in requested:
        if resource_get(allocatable, name) == 0:
            return 0.0
    score = 0.0
    for name, weight in sra.resources.items():
        if resource_get(allocatable, name) > 0:
            score += float(weight)
    if sra.weight_sum > 0:
        score /= float(sra.weight_sum)
        score = 1.0 - score
    score *= float(MAX_NODE_SCORE * sra.weight)
    return score


# --- proportional ------------------------------------------------------------------------------


def check_node_resource_is_proportional(
    task: TaskInfo, node: NodeInfo, proportional: Mapping[str, BaseResource]
) -> FitError | None:
    """``checkNodeResourceIsProportional``: None on success."""
    requested = task.Resreq.ScalarResources if task.Resreq is not None else None
    requested = requested or {}
    for name in proportional:
        if requested.get(name, 0.0) > 0:
            return None
    idle = node.Idle
    if idle is None or not idle.ScalarResources:
        return None
    milli_cpu = task.Resreq.MilliCPU if task.Resreq is not None else 0.0
    memory = task.Resreq.Memory if task.Resreq is not None else 0.0
    for name, rate in proportional.items():
        if name not in idle.ScalarResources:
            continue
        value = idle.ScalarResources[name]
        cpu_reserved = value * rate.cpu
        memory_reserved = value * rate.memory * 1000 * 1000
        if idle.MilliCPU - milli_cpu < cpu_reserved or idle.Memory - memory < memory_reserved:
            return FitError(
                f"proportional of resource {name} check failed",
                StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
    return None


# --- the plugin --------------------------------------------------------------------------------


@register
class ResourceStrategyFitPlugin(Plugin):
    name: ClassVar[str] = PLUGIN_NAME
    on_error = OnError.ABSTAIN
    """Its filter and scores pack nodes well; without them for a call a pod is placed as by the other plugins, no rule broken."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=(
            "pkg/scheduler/plugins/resource-strategy-fit/resource_strategy_fit.go",
            "pkg/scheduler/plugins/resource-strategy-fit/sra.go",
            "pkg/scheduler/plugins/resource-strategy-fit/proportional.go",
        ),
        commit="0a56ed331",
        releases="v1.13.0 and later",
    )
    needs_snapshot: ClassVar[bool] = False
    in_tree_only: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        """Values upstream's ``framework.Get`` cannot decode: the Volcano scheduler would exit."""
        errors: dict[str, str] = {}
        for key, parse in _ARGUMENT_PARSERS.items():
            try:
                parse(arguments)
            except DecodeError as exc:
                errors[key] = (
                    f"{exc} (Volcano's scheduler exits on this: klog.Fatalf in framework.Get)"
                )
        return errors

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.fit = ResourceStrategyFit(
            self._parse(parse_plugin_weight, DEFAULT_WEIGHT),
            self._parse(parse_resources, dict(DEFAULT_RESOURCES)),
        )
        self.sra = self._parse(calculate_sra_weight, SraWeight())
        self.proportional = self._parse(calculate_proportional, None)
        arguments.use("resourceStrategyFitWeight", self.fit.weight)
        arguments.use(
            "resources",
            {name: {"type": r.type, "weight": r.weight} for name, r in self.fit.resources.items()},
        )

    def _parse(self, parse: Callable[[Mapping[str, Any]], _T], default: _T) -> _T:
        try:
            return parse(self.arguments)
        except DecodeError as exc:
            self.arguments.warn(f"plugin {PLUGIN_NAME}: {exc}; keeping the default")
            return default

    def hooks(self) -> frozenset[str]:
        hooks = super().hooks()
        if self.proportional is None:
            hooks -= {"predicate"}
        if self.fit.weight <= 0 and self.sra.weight <= 0:
            hooks -= {"node_order"}
        return hooks

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        if self.proportional is None:
            return None
        return check_node_resource_is_proportional(task, node, self.proportional)

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        fit_on = self.fit.weight > 0
        sra_on = self.sra.weight > 0
        plan = plan_score(task, self.fit) if fit_on else None
        requested = resource_names(task.Resreq) if sra_on else []
        scores: dict[str, float] = {}
        for node in nodes:
            total = 0.0
            if fit_on:
                total += score_node(plan, node, self.fit.weight)
            if sra_on:
                total += sra_score(requested, node, self.sra)
            scores[node.Name] = total
        return scores
