"""``cdp`` (cooldown protection): a pod is not evicted within its cooldown after being scheduled.

Follows ``pkg/scheduler/plugins/cdp/cdp.go`` of volcano-sh/volcano at ed72c7c81 (master,
2026-08-20; the same file since v1.12.0).

A pod opts in with ``volcano.sh/cooldown-time`` (a Go duration) as a label, or else as an
annotation. The label wins even when it does not parse (then protection is off; the annotation
is not consulted). A Running pod whose **first** ``PodScheduled=True`` condition has
``lastTransitionTime + cooldown`` strictly after now is protected; every other candidate is a
victim, in input order, and the vote is always Permit. Zero and negative durations are valid
("enabled") and protect only a pod whose transition time lies in the future; a unitless ``"600"``
does not parse, so it disables protection.

Releases (branching on ``ssn.release``):

- v1.12.0+ registers the filter as ``PreemptableFn`` and ``ReclaimableFn``.
- v1.7.0 to v1.11.x register it as ``PreemptableFn`` only, so for those versions
  :meth:`CdpPlugin.hooks` leaves ``reclaimable`` out (and the hook itself abstains, which
  Volcano's aggregator treats exactly like a plugin without a ``ReclaimableFn``).
- v1.6.x has no cdp plugin at all (Volcano logs "Failed to get plugin cdp" and skips the entry).
  Hosted by Caldera it behaves as in v1.7, the first release that shipped it.

Go would crash on a task without a pod (``pod.Labels`` of a nil pointer); Volcano never builds
one, and Caldera treats such a task as not opted in, hence a victim.

cdp registers no ``UnifiedEvictableFn`` upstream, so nothing is ``in_tree_only``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar

from plugins.api import (
    CDP_RECLAIMABLE,
    Arguments,
    Background,
    EvictResult,
    Explained,
    OnError,
    Plugin,
    Reason,
    Session,
    Upstream,
    Vote,
    register,
    utc_now,
)
from schemas.api import TaskInfo
from schemas.goduration import DurationError, go_time, nanos_between, parse_go_duration
from schemas.k8s import Pod

logger = logging.getLogger("caldera.plugins.cdp")

COOLDOWN_TIME = "volcano.sh/cooldown-time"
"""``v1beta1.CooldownTime``: read from the pod's labels, then its annotations."""
IN_COOLDOWN = Reason(
    "cooldown",
    f"scheduled less than its {COOLDOWN_TIME} ago (a Running pod that opted into cdp's cooldown)",
)


def pod_cooldown_time(pod: Pod | None) -> tuple[int, bool]:
    """Upstream ``podCooldownTime``: ``(nanoseconds, enabled)``."""
    if pod is None or pod.metadata is None:
        return 0, False
    labels = pod.metadata.labels or {}
    annotations = pod.metadata.annotations or {}
    if COOLDOWN_TIME in labels:
        value = labels[COOLDOWN_TIME]  # a present label wins, even when it does not parse
    elif COOLDOWN_TIME in annotations:
        value = annotations[COOLDOWN_TIME]
    else:
        return 0, False
    try:
        return parse_go_duration(value), True
    except DurationError:
        logger.debug("invalid time duration %s=%s", COOLDOWN_TIME, value)
        return 0, False


def in_cooldown(pod: Pod | None, now: datetime) -> bool:
    """True when the pod is protected: opted in, Running, and scheduled less than the cooldown ago."""
    cooldown, enabled = pod_cooldown_time(pod)
    if not enabled or pod is None or pod.status is None or pod.status.phase != "Running":
        return False
    for condition in pod.status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "True":
            # Only the first PodScheduled=True condition counts (upstream breaks here).
            # lastTransitionTime + cooldown after now  <=>  cooldown > now - lastTransitionTime
            return cooldown > nanos_between(go_time(condition.lastTransitionTime), now)
    return False


@register
class CdpPlugin(Plugin):
    name: ClassVar[str] = "cdp"
    on_error = OnError.FAIL
    """Its answer protects pods in their cooldown from eviction: abstaining would offer them."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/cdp/cdp.go",),
        commit="ed72c7c81",
        releases="v1.12.0 and later",
    )
    needs_snapshot: ClassVar[bool] = False
    in_tree_only: ClassVar[tuple[str, ...]] = ()

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)  # cdp takes no arguments
        self._now = utc_now
        self._reclaimable = True

    def on_session_open(self, ssn: Session) -> None:
        self._now = ssn.now
        self._reclaimable = ssn.release.has(CDP_RECLAIMABLE)

    def hooks(self) -> frozenset[str]:
        hooks = super().hooks()
        if not self._reclaimable:
            hooks -= {"reclaimable"}  # as if no ReclaimableFn were registered
        return hooks

    def _filter(self, candidates: Sequence[TaskInfo]) -> Explained[EvictResult]:
        now = self._now()
        victims: list[TaskInfo] = []
        vetoes: dict[str, Reason] = {}
        for task in candidates:
            if in_cooldown(task.Pod, now):
                vetoes[task.UID] = IN_COOLDOWN
            else:
                victims.append(task)
        return Explained((victims, Vote.PERMIT), vetoes=vetoes)

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return self._filter(preemptees)

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> EvictResult | Explained[EvictResult]:
        if not self._reclaimable:
            return [], Vote.ABSTAIN  # no ReclaimableFn before v1.12: the aggregator skips us
        return self._filter(reclaimees)
