"""How the hosted plugins' answers combine, per extension point.

Follows ``pkg/scheduler/framework/session_plugins.go`` (Volcano HEAD ed72c7c81): tiers in order,
plugins in order within a tier, a plugin consulted only when its ``enableXxx`` flag is on and it
implements the hook. Caldera then answers Volcano with one value for the whole set, chosen so
that Volcano, which sees the extender as a single plugin, reaches the decision our tiers reached:

- predicate: the first failure (``PredicateFn``);
- prioritize: per-node sum (``BatchNodeOrderFn``);
- preemptable / reclaimable: the per-tier victim intersection by UID, an empty list with a
  non-zero vote ending the tier, the empty-intersection quirk (``Preemptable``). The answer is
  the deciding tier's victims with Permit; when no tier decided, Abstain — unless a plugin
  blocked a tier with an empty list, which is answered as Permit with no victims so Volcano's
  tier holding the extender is blocked too, as it would be with the plugin in-tree;
- jobEnqueueable: the vote with a per-tier Permit short-circuit (``JobEnqueueable``), answered
  as the vote that decided: Reject, Permit, or Abstain when every plugin abstained (a Permit
  would wrongly end Volcano's own later tiers);
- jobEnqueued: every plugin; queueOverused: OR; jobReady: AND;
- allocate / deallocate: every handler in order, the first error message.

A plugin listed twice is built twice, but, as in Volcano, whose function maps are keyed by
plugin name, both positions consult the instance registered last.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.config import PluginOption
from app.metrics import Metrics
from plugins.api.base import FitError, Plugin, Vote
from plugins.api.extension_points import PLUGIN_HOOKS as HOOKS
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo

HOOK_FLAG: dict[str, str | None] = {
    "predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "overused": "enabledOverused",
    "job_ready": "enableJobReady",
    "allocate": None,  # event handlers have no flag
    "deallocate": None,
}

HOOK_VERB: dict[str, str] = {
    "predicate": "predicate",
    "node_order": "prioritize",
    "preemptable": "preemptable",
    "reclaimable": "reclaimable",
    "job_enqueueable": "jobEnqueueable",
    "job_enqueued": "jobEnqueued",
    "overused": "queueOverused",
    "job_ready": "jobReady",
    "allocate": "allocate",
    "deallocate": "deallocate",
    "on_session_open": "onSessionOpen",
    "on_session_close": "onSessionClose",
}

_T = TypeVar("_T")


class PluginFailure(Exception):
    """A hosted plugin raised; answered as HTTP 500 naming the plugin and the verb."""

    def __init__(self, plugin: str, verb: str, cause: BaseException) -> None:
        self.plugin = plugin
        self.verb = verb
        self.cause = cause
        super().__init__(f"plugin {plugin} failed in {verb}: {type(cause).__name__}: {cause}")


@dataclass(slots=True)
class Slot:
    """One plugin entry of the tiers and the instance answering for it."""

    option: PluginOption
    plugin: Plugin
    hooks: frozenset[str] = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return self.option.name


def participates(slot: Slot, hook: str) -> bool:
    flag = HOOK_FLAG[hook]
    return hook in slot.hooks and (flag is None or slot.option.enabled(flag))


@dataclass(slots=True)
class EvictDecision:
    victims: list[TaskInfo]
    decided: bool


class Framework:
    """The plugin instances of one session, arranged by tier, and the combination rules."""

    def __init__(self, tiers: Sequence[Sequence[Slot]], metrics: Metrics | None = None) -> None:
        self.tiers = [list(tier) for tier in tiers]
        self.metrics = metrics
        last_by_name: dict[str, Slot] = {}
        for tier in self.tiers:
            for slot in tier:
                last_by_name[slot.name] = slot
        # Volcano keys hook functions by plugin name: the last registration answers everywhere,
        # each position keeping its own flags.
        resolved = [
            [
                Slot(slot.option, last_by_name[slot.name].plugin, last_by_name[slot.name].hooks)
                for slot in tier
            ]
            for tier in self.tiers
        ]
        self._active: dict[str, list[list[Slot]]] = {
            hook: [[slot for slot in tier if participates(slot, hook)] for tier in resolved]
            for hook in HOOKS
        }
        self._implemented = frozenset(hook for hook, tiers in self._active.items() if any(tiers))
        self._counters: dict[tuple[str, str, str], Any] = {}

    # --- bookkeeping -------------------------------------------------------------------------

    def active_names(self, hook: str) -> list[str]:
        return [slot.name for tier in self._active[hook] for slot in tier]

    def implements(self, hook: str) -> bool:
        """Whether any plugin answers ``hook`` (otherwise the answer is neutral)."""
        return hook in self._implemented

    def _record(self, slot: Slot, hook: str, outcome: str) -> None:
        if self.metrics is None:
            return
        key = (slot.name, hook, outcome)
        child = self._counters.get(key)
        if child is None:
            child = self.metrics.decisions.labels(slot.name, HOOK_VERB[hook], outcome)
            self._counters[key] = child
        child.inc()

    def _call(self, slot: Slot, hook: str, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return fn(*args)
        except Exception as exc:
            if self.metrics is not None:
                self.metrics.plugin_errors.labels(slot.name, HOOK_VERB[hook]).inc()
            raise PluginFailure(slot.name, HOOK_VERB[hook], exc) from exc

    # --- extension points ----------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """``Session.PredicateFn``: the first failure, in tier and plugin order."""
        for tier in self._active["predicate"]:
            for slot in tier:
                error = self._call(slot, "predicate", slot.plugin.predicate, task, node)
                if error is not None:
                    self._record(slot, "predicate", "fail")
                    return error
                self._record(slot, "predicate", "pass")
        return None

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        """``Session.BatchNodeOrderFn``: every plugin's scores added per node."""
        total: dict[str, float] = {}
        for tier in self._active["node_order"]:
            for slot in tier:
                scores = self._call(slot, "node_order", slot.plugin.node_order, task, nodes)
                for node, score in scores.items():
                    if not math.isfinite(score):
                        raise PluginFailure(
                            slot.name, "prioritize", ValueError(f"score {score} for {node}")
                        )
                    total[node] = total.get(node, 0.0) + score
                self._record(slot, "node_order", "scored")
        return total

    def evictable(
        self, hook: str, evictor: TaskInfo, evictees: Sequence[TaskInfo]
    ) -> EvictDecision:
        """``Session.Preemptable`` / ``Session.Reclaimable``."""
        victims: list[TaskInfo] | None = None
        blocked = False
        for tier in self._active[hook]:
            for slot in tier:
                method = getattr(slot.plugin, hook)
                candidates, vote = self._call(slot, hook, method, evictor, evictees)
                if vote == Vote.ABSTAIN:
                    self._record(slot, hook, "abstain")
                    continue
                if len(candidates) == 0:
                    self._record(slot, hook, "none")
                    victims = None
                    blocked = True
                    break  # an empty list with a vote ends this tier; the next one is tried
                self._record(slot, hook, "victims")
                if victims is None:
                    victims = list(candidates)
                else:
                    wanted = Counter(c.UID for c in candidates)
                    # Each victim is kept once per candidate with its UID, in the victims' order;
                    # an empty intersection resets to "no victims" without ending the tier.
                    victims = [v for v in victims for _ in range(wanted[v.UID])] or None
            if victims is not None:
                return EvictDecision(victims, True)
        return EvictDecision([], blocked)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """``Session.JobEnqueueable``: a Reject ends everything; a tier with a Permit ends the
        vote after that tier; all abstaining leaves the decision to Volcano's other plugins."""
        for tier in self._active["job_enqueueable"]:
            permitted = False
            for slot in tier:
                vote = self._call(slot, "job_enqueueable", slot.plugin.job_enqueueable, job)
                if vote < 0:
                    self._record(slot, "job_enqueueable", "reject")
                    return Vote.REJECT
                if vote > 0:
                    self._record(slot, "job_enqueueable", "permit")
                    permitted = True
                else:
                    self._record(slot, "job_enqueueable", "abstain")
            if permitted:
                return Vote.PERMIT
        return Vote.ABSTAIN

    def job_enqueued(self, job: JobInfo) -> None:
        for tier in self._active["job_enqueued"]:
            for slot in tier:
                self._call(slot, "job_enqueued", slot.plugin.job_enqueued, job)
                self._record(slot, "job_enqueued", "called")

    def overused(self, queue: QueueInfo) -> bool:
        """``Session.Overused``: OR, the first true wins."""
        for tier in self._active["overused"]:
            for slot in tier:
                if self._call(slot, "overused", slot.plugin.overused, queue):
                    self._record(slot, "overused", "overused")
                    return True
                self._record(slot, "overused", "ok")
        return False

    def job_ready(self, job: JobInfo) -> bool:
        """``Session.JobReady``: AND, the first false wins; true when nobody objects."""
        for tier in self._active["job_ready"]:
            for slot in tier:
                if not self._call(slot, "job_ready", slot.plugin.job_ready, job):
                    self._record(slot, "job_ready", "not_ready")
                    return False
                self._record(slot, "job_ready", "ready")
        return True

    def event(self, hook: str, task: TaskInfo) -> str:
        """allocate / deallocate: every handler in order; the first error message."""
        first = ""
        for tier in self._active[hook]:
            for slot in tier:
                message = self._call(slot, hook, getattr(slot.plugin, hook), task)
                if message:
                    self._record(slot, hook, "error")
                    first = first or message
                else:
                    self._record(slot, hook, "ok")
        return first

    def close(self) -> None:
        for tier in self.tiers:
            for slot in tier:
                self._call(slot, "on_session_close", slot.plugin.on_session_close)
