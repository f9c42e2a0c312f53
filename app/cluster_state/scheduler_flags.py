"""What vc-scheduler's sharding and multi-scheduler settings mean for Caldera's session state:
the notes and refusals ``caldera volcano-config`` prints for the flags the operator passes it
(``--scheduler-sharding-mode``, ``--scheduler-num``, ``--node-selector``).

* Node sharding (``--scheduler-sharding-mode hard|soft`` with ``--scheduler-sharding-name``,
  v1.14 and later; ``cmd/scheduler/app/options/options.go``): the NodeShard named by the shard
  name (``shard.volcano.sh/v1alpha1``, ``spec.nodesDesired``) gives ``NodesInShard``
  (``RefreshNodeShards``, ``pkg/scheduler/cache/shard_coordinator.go``), kept beside the
  snapshot's nodes, not instead of them (``Snapshot``, ``pkg/scheduler/cache/cache.go``); the
  extender's ``OnSessionOpenRequest`` does not carry it. Hard mode fails every node outside the
  shard before any predicate is asked (``PredicateNodes``, ``pkg/scheduler/util/
  predicate_helper.go``); soft mode asks them all and prefers the shard's
  (``GetPredicatedNodeByShard``, and allocate's candidate lists). Either way the session's state
  is the unsharded one, which is what Caldera derives.
* Multi-scheduler without node selectors (``MULTI_SCHEDULER_ENABLE``, ``SCHEDULER_NUM``,
  ``SCHEDULER_POD_NAME``): followed when the sidecar has the same environment
  (:mod:`app.cluster_state.multi_scheduler`).
* ``--node-selector``: ``nodeCanAddCache`` (``pkg/scheduler/cache/event_handlers.go``) adds only
  nodes carrying one of the labels, and ``SyncNode`` returns before updating or removing a node
  whose labels stopped matching, so the cache keeps that node's last matching version until it
  is deleted. Caldera derives every node and keeps no earlier versions: refused in compare and
  cluster mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.cluster_state.modes import SessionStateMode
from app.cluster_state.multi_scheduler import ENABLE, MAX_SCHEDULERS, NUM, POD_NAME
from plugins.api.release import NODE_SHARDING, Release

SHARDING_MODES = ("none", "hard", "soft")


@dataclass(frozen=True)
class SchedulerFlags:
    """vc-scheduler's settings as the operator tells ``caldera volcano-config`` them."""

    sharding_mode: str | None = None
    """``--scheduler-sharding-mode``."""
    schedulers: int | None = None
    """``SCHEDULER_NUM`` of a multi-scheduler deployment (``MULTI_SCHEDULER_ENABLE=true``)."""
    node_selectors: Sequence[str] = ()
    """``--node-selector`` values (``label:value``)."""


@dataclass
class FlagNotes:
    notes: list[str]
    refusals: list[str]
    """What cannot be served: ``volcano-config`` exits 2 with them."""


def flag_notes(
    session_state: SessionStateMode, release: Release, flags: SchedulerFlags
) -> FlagNotes:
    """The notes and refusals that follow from ``flags`` for ``session_state``."""
    out = FlagNotes([], [])
    derived = session_state != SessionStateMode.SNAPSHOT
    mode = flags.sharding_mode
    if mode is not None:
        if not release.has(NODE_SHARDING):
            out.refusals.append(
                f"--scheduler-sharding-mode: Volcano {release} has no node sharding (from"
                f" {'.'.join(map(str, NODE_SHARDING.since))}): vc-scheduler refuses the flag"
            )
        elif mode not in SHARDING_MODES[1:]:
            if mode != "none":
                out.notes.append(
                    f"--scheduler-sharding-mode {mode} is neither hard nor soft: vc-scheduler"
                    " schedules without node sharding"
                )
        else:
            asked = (
                "asks predicate only about the shard's nodes (every other node fails first)"
                if mode == "hard"
                else "asks predicate about every node and prefers the shard's"
            )
            state = (
                "Caldera derives every node too: the shard changes nothing in the derived"
                " state, and Caldera watches no NodeShard"
                if derived
                else "Caldera sees what Volcano sends"
            )
            out.notes.append(
                f"--scheduler-sharding-mode {mode}: Volcano's session state holds every Ready"
                " node, the shard's and the others' (NodesInShard is kept beside them and is"
                f" not sent to the extender); Volcano {asked}. {state}"
            )
    if flags.schedulers is not None:
        if not derived:
            out.notes.append(
                f"{ENABLE}=true, {NUM}={flags.schedulers}: each replica's snapshot is its"
                " own share of the pods, PodGroups and nodes; give each replica its own sidecar"
            )
        elif flags.schedulers > MAX_SCHEDULERS:
            out.refusals.append(
                f"sessionState {session_state} with {NUM}={flags.schedulers}: Caldera follows"
                f" rings of up to {MAX_SCHEDULERS} scheduler replicas"
            )
        else:
            out.notes.append(
                f"{ENABLE}=true, {NUM}={flags.schedulers}: give the Caldera sidecar the"
                f" scheduler's environment ({ENABLE}=true, {NUM}={flags.schedulers} and {POD_NAME}"
                " from the downward API's metadata.name): it then derives only the pods,"
                " PodGroups and nodes the replicas' hash ring gives its own replica; without"
                " them it derives every replica's"
            )
    if flags.node_selectors and derived:
        out.refusals.append(
            f"sessionState {session_state} with --node-selector"
            f" {','.join(flags.node_selectors)}: vc-scheduler's cache holds only the nodes with"
            " one of those labels and keeps a node's last matching version after its labels"
            " stop matching (nodeCanAddCache, SyncNode); Caldera derives every node and does"
            " not follow that: use sessionState snapshot"
        )
    return out
