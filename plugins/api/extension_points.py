"""The extension points: one row per extender verb, everything else derived from it.

Volcano's ``pkg/scheduler/framework/session_plugins.go`` registers a function per extension point
and combines the plugins' answers with one rule per point; its ``extender`` plugin
(``pkg/scheduler/plugins/extender/extender.go``) forwards each point to one HTTP verb, enabled by
one ``extender.<verb>Verb`` argument. This table holds those facts once. The framework's
combination, the routes, the wire release rules, ``caldera volcano-config``, the OpenAPI document
and the metrics all read it. Adding an extension point is adding a row (and, for a new
combination rule, the framework method of that name).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import msgspec

from schemas import requests as rq
from schemas import responses as rs

_encode = msgspec.json.encode


class Verb(enum.StrEnum):
    """The extender verbs, by Volcano's names: the URL path Volcano posts to, the metrics label
    and the key in JSON. A ``StrEnum``, so a member equals the string on the wire. One member per
    row of :data:`EXTENSION_POINTS` (a test holds the two together)."""

    ON_SESSION_OPEN = "onSessionOpen"
    ON_SESSION_CLOSE = "onSessionClose"
    PREDICATE = "predicate"
    PRIORITIZE = "prioritize"
    PREEMPTABLE = "preemptable"
    RECLAIMABLE = "reclaimable"
    JOB_ENQUEUEABLE = "jobEnqueueable"
    JOB_ENQUEUED = "jobEnqueued"
    QUEUE_OVERUSED = "queueOverused"
    JOB_READY = "jobReady"
    ALLOCATE = "allocate"
    DEALLOCATE = "deallocate"


class Rule(enum.StrEnum):
    """How the answers of several plugins combine (``session_plugins.go``). The value names the
    framework method that applies it."""

    OPEN = "open"
    """onSessionOpen: build the session's plugins (``OpenSession``)."""
    CLOSE = "close"
    """onSessionClose: end it (``CloseSession``)."""
    FIRST_FAILURE = "first_failure"
    """``PredicateFn``: the first plugin that rejects decides."""
    SCORE_SUM = "score_sum"
    """``BatchNodeOrderFn``: scores added per node."""
    VICTIMS = "victims"
    """``Preemptable``/``Reclaimable``: per-tier intersection of the victims by UID."""
    VOTE = "vote"
    """``JobEnqueueable``: Reject ends the vote, a tier with a Permit ends it after that tier."""
    NOTIFY = "notify"
    """``JobEnqueued``: every plugin is told."""
    ANY_TRUE = "any_true"
    """``Overused``: true when one plugin says so."""
    ALL_TRUE = "all_true"
    """``JobReady``: true unless one plugin says no."""
    EVENT = "event"
    """``EventHandler``: every handler in order; the first error message."""


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    verb: Verb
    """The extender verb: the URL path Volcano posts to and the metrics label."""
    hook: str
    """The :class:`~plugins.api.base.Plugin` method a plugin overrides to take part."""
    volcano: str
    """The upstream hook it mirrors, for readers."""
    flag: str | None
    """The ``enableXxx`` plugin option that gates it (``None``: never gated)."""
    since: tuple[int, int]
    """The first Volcano release whose extender plugin sends this verb."""
    argument: str
    """The ``volcano-scheduler.conf`` argument that enables the verb."""
    request: type[Any]
    """The typed view of the body, as the plugins read it."""
    envelope: type[Any]
    """The body's required shape alone: what is validated when no plugin answers."""
    answers: tuple[type[Any], ...]
    """The answer's structs (several when the shape depends on the release)."""
    neutral: bytes | None
    """The answer when no configured plugin answers (``None``: the release's pass answer)."""
    rule: Rule
    summary: str
    """What the verb asks, for the OpenAPI document."""
    body_limit: str
    """The configuration key bounding the verb's request body: ``maxSnapshotBytes`` for the
    session snapshot (the whole cluster), ``maxRequestBytes`` for a call about one task, job,
    node list or queue."""
    actions: frozenset[str] | None
    """The ``volcano-scheduler.conf`` actions whose run asks this point (Volcano's
    ``pkg/scheduler/actions``, v1.6.0 to ed72c7c8, the union over the releases): a verb no
    configured action asks is never sent. ``None``: every session, whatever the actions."""


def _point(
    verb: Verb,
    hook: str,
    volcano: str,
    flag: str | None,
    since: tuple[int, int],
    request: type[Any],
    envelope: type[Any],
    answers: tuple[type[Any], ...],
    neutral: bytes | None,
    rule: Rule,
    summary: str,
    argument: str = "",
    body_limit: str = "maxRequestBytes",
    actions: frozenset[str] | None = None,
) -> ExtensionPoint:
    return ExtensionPoint(
        verb=verb,
        hook=hook,
        volcano=volcano,
        flag=flag,
        since=since,
        argument=argument or f"extender.{verb}Verb",
        request=request,
        envelope=envelope,
        answers=answers,
        neutral=neutral,
        rule=rule,
        summary=summary,
        body_limit=body_limit,
        actions=actions,
    )


_EMPTY = b"{}"

ACTIONS: tuple[str, ...] = (
    "enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim",
    "shuffle",
)  # fmt: skip
"""Volcano's actions (``pkg/scheduler/actions``; gangpreempt and gangreclaim since v1.15), in
the order a conf usually lists them."""

# Which actions ask what (``pkg/scheduler/actions/*``; gangpreempt and gangreclaim through
# ``actions/utils/simulate.go``; backfill's JobReady through ``Session.Allocate``).
_PLACING = frozenset({"allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim"})
"""PredicateFn (``PredicateNodes``, ``PredicateFor*Action``) and the EventHandlers (a statement
that allocates, pipelines or evicts, or rolls one of those back)."""
_SCORING = frozenset({"allocate", "backfill", "preempt", "gangpreempt", "gangreclaim"})
"""BatchNodeOrderFn, through ``util.PrioritizeNodes`` (reclaim does not score nodes)."""
_EVENTS = _PLACING | {"shuffle"}

EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    _point(Verb.ON_SESSION_OPEN, "on_session_open", "OnSessionOpen", None, (1, 6),
           rq.OnSessionOpenRequest, rq.OnSessionOpenRequest, (rs.Empty,), _EMPTY, Rule.OPEN,
           "Open a session: the whole-cluster snapshot. Builds fresh plugin instances.",
           body_limit="maxSnapshotBytes"),
    _point(Verb.ON_SESSION_CLOSE, "on_session_close", "OnSessionClose", None, (1, 6),
           rq.OnSessionCloseRequest, rq.OnSessionCloseRequest, (rs.Empty,), _EMPTY, Rule.CLOSE,
           "End the open session."),
    _point(Verb.PREDICATE, "predicate", "PredicateFn", "enablePredicate", (1, 6),
           rq.PredicateRequest, rq.PredicateEnvelope,
           (rs.PredicateResponse, rs.PredicateResponseV18, rs.PredicateResponseV16), None,
           Rule.FIRST_FAILURE,
           "Does the task fit the node? First failure of the hosted plugins. The answer's"
           " shape follows volcanoVersion: {status, code} (1.10+), {status: [{Code,"
           " Reason}]} (1.8–1.9), {errorMessage} (1.6–1.7).",
           actions=_PLACING),
    _point(Verb.PRIORITIZE, "node_order", "BatchNodeOrderFn", "enableNodeOrder", (1, 6),
           rq.PrioritizeRequest, rq.PrioritizeEnvelope, (rs.PrioritizeResponse,),
           _encode(rs.PrioritizeResponse(nodeScore={})), Rule.SCORE_SUM,
           "Score candidate nodes: the hosted plugins' scores summed per node.",
           actions=_SCORING),
    _point(Verb.PREEMPTABLE, "preemptable", "PreemptableFn", "enablePreemptable", (1, 6),
           rq.EvictRequest, rq.EvictEnvelope, (rs.EvictResponse,),
           _encode(rs.EvictResponse(status=0, victims=[])), Rule.VICTIMS,
           "Which evictees may be preempted; victims are echoed exactly as received.",
           actions=frozenset({"preempt"})),
    _point(Verb.RECLAIMABLE, "reclaimable", "ReclaimableFn", "enableReclaimable", (1, 6),
           rq.EvictRequest, rq.EvictEnvelope, (rs.EvictResponse,),
           _encode(rs.EvictResponse(status=0, victims=[])), Rule.VICTIMS,
           "Which evictees may be reclaimed; victims are echoed exactly as received.",
           actions=frozenset({"reclaim"})),
    _point(Verb.JOB_ENQUEUEABLE, "job_enqueueable", "JobEnqueueableFn", "enableJobEnqueued", (1, 6),
           rq.JobRequest, rq.JobEnvelope, (rs.JobEnqueueableResponse,),
           _encode(rs.JobEnqueueableResponse(status=0)), Rule.VOTE,
           "May the job be enqueued: 1 permit, 0 abstain, -1 reject.",
           actions=frozenset({"enqueue"})),
    _point(Verb.JOB_ENQUEUED, "job_enqueued", "JobEnqueuedFn", "enableJobEnqueued", (1, 16),
           rq.JobRequest, rq.JobEnvelope, (rs.Empty,), _EMPTY, Rule.NOTIFY,
           "The job was enqueued (Volcano 1.16+).",
           actions=frozenset({"enqueue"})),
    # preempt asked queueOverused up to v1.8
    _point(Verb.QUEUE_OVERUSED, "overused", "OverusedFn", "enabledOverused", (1, 6),
           rq.QueueOverusedRequest, rq.QueueEnvelope, (rs.QueueOverusedResponse,),
           _encode(rs.QueueOverusedResponse(overused=False)), Rule.ANY_TRUE,
           "Is the queue overused (true skips it).",
           actions=frozenset({"allocate", "preempt", "reclaim", "gangreclaim"})),
    _point(Verb.JOB_READY, "job_ready", "JobReadyFn", "enableJobReady", (1, 7),
           rq.JobRequest, rq.JobEnvelope, (rs.JobReadyResponse,),
           _encode(rs.JobReadyResponse(status=True)), Rule.ALL_TRUE,
           "Is the job ready to be committed.",
           actions=frozenset({"allocate", "backfill", "gangpreempt", "gangreclaim"})),
    _point(Verb.ALLOCATE, "allocate", "EventHandler.AllocateFunc", None, (1, 13),
           rq.EventHandlerRequest, rq.EventHandlerEnvelope, (rs.EventHandlerResponse,),
           _encode(rs.EventHandlerResponse()), Rule.EVENT,
           "A task was allocated; an error message rolls the allocation back.",
           argument="extender.allocateFuncVerb",
           actions=_EVENTS),
    _point(Verb.DEALLOCATE, "deallocate", "EventHandler.DeallocateFunc", None, (1, 13),
           rq.EventHandlerRequest, rq.EventHandlerEnvelope, (rs.EventHandlerResponse,),
           _encode(rs.EventHandlerResponse()), Rule.EVENT,
           "A task was deallocated or evicted.",
           argument="extender.deallocateFuncVerb",
           actions=_EVENTS),
)  # fmt: skip

BY_VERB: dict[str, ExtensionPoint] = {point.verb: point for point in EXTENSION_POINTS}
"""Keyed by :class:`Verb` (a member hashes as its string, so a verb read off the wire finds its
row too)."""
BY_HOOK: dict[str, ExtensionPoint] = {point.hook: point for point in EXTENSION_POINTS}
VERBS: tuple[Verb, ...] = tuple(point.verb for point in EXTENSION_POINTS)
LIFECYCLE: frozenset[str] = frozenset({"on_session_open", "on_session_close"})
PLUGIN_HOOKS: tuple[str, ...] = tuple(p.hook for p in EXTENSION_POINTS if p.hook not in LIFECYCLE)
"""The extension points a plugin takes part in by overriding the method of that name."""
