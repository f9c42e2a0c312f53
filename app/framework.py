"""How the hosted plugins' answers combine: one method per combination rule of the
extension-point table (``plugins/api/extension_points.py``).

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

A plugin may explain its answer (``plugins/api/reasons.py``): the framework answers Volcano with
the plain value and tells the answer, its typed outcome and its reason to one decision stream
(``app/decisions.py``), to which the metrics, the session's decision record
(``app/explain.py``), the PodGroup Events and the failure policy subscribe. Every predicate,
score, vote, verdict and eviction answer is told, explained or not, so ``GET /debug/explain``
can say which plugin decided.

A plugin listed twice is built twice, but, as in Volcano, whose function maps are keyed by
plugin name, both positions consult the instance registered last.
"""

from __future__ import annotations

import functools
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any

import msgspec

from app.config import PluginOption
from app.contract import CONFORMS, check_answer
from app.decisions import (
    OF_VOTE,
    DecisionSink,
    EventsSubscriber,
    FaultSubscriber,
    MetricsSubscriber,
    RecordSubscriber,
    Stream,
)
from app.errors import PluginFailure, RequestError
from app.events import PodGroupEvents
from app.explain import Answer, SessionLog
from app.metrics import Metrics, TallyHistogram
from app.outcome import Outcome
from app.plugin_faults import (
    BENCHED_WITHOUT_SESSION,
    DEFAULT_TIME_BUDGET,
    OVERRUNS_BEFORE_POLICY,
    Contract,
    Fault,
    FaultKind,
    OnError,
    PluginFaults,
)
from plugins.api.base import FitError, Plugin, StatusCode, Vote, hook_name, utc_now
from plugins.api.extension_points import (
    BY_VERB,
    EXTENSION_POINTS,
    LIFECYCLE,
    ExtensionPoint,
    Verb,
)
from plugins.api.reasons import NO_VETOES, Explained, Reason
from plugins.api.release import Release
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo
from schemas.quantity import QuantityError

ENQUEUED = BY_VERB[Verb.JOB_ENQUEUED]
CLOSE = BY_VERB[Verb.ON_SESSION_CLOSE]
PRIORITIZE = BY_VERB[Verb.PRIORITIZE]
FIT_STATUS = {code: code.name.lower() for code in StatusCode}
"""A predicate rejection's ``reason`` label: its status (bounded, unlike its message)."""
CODE = attrgetter("code")
DROPPED: Any = object()
"""What :meth:`Framework._call` returns for an answer its plugin's ``onError: abstain`` drops:
each combination rule goes on as if that plugin had not taken part."""
_clock = time.perf_counter
# The outcomes as module globals: a global is read in a few nanoseconds, an enum member through
# its class in hundreds (Python 3.11), on every plugin answer.
PASS, FAIL, SCORED, ABSTAIN = Outcome.PASS, Outcome.FAIL, Outcome.SCORED, Outcome.ABSTAIN
NONE, VICTIMS, REJECT, PERMIT = Outcome.NONE, Outcome.VICTIMS, Outcome.REJECT, Outcome.PERMIT
CALLED, OVERUSED, OK, ERROR = Outcome.CALLED, Outcome.OVERUSED, Outcome.OK, Outcome.ERROR
READY, NOT_READY = Outcome.READY, Outcome.NOT_READY


class _CutShort(Exception):
    """:func:`_scores_until` stopped at the deadline: ``asked`` of ``of`` nodes were scored."""

    def __init__(self, asked: int, of: int) -> None:
        super().__init__(asked, of)
        self.asked, self.of = asked, of


def _scores_until(
    score: Callable[[TaskInfo, NodeInfo], float],
    deadline: float,
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
) -> dict[str, float]:
    """``Plugin.node_order``'s default, each node's ``node_score``, but stopped once the call
    clock passes ``deadline`` with nodes left (:class:`_CutShort`). Used only for a call whose
    overrun benches its plugin: that answer is dropped (or the verb failed) whatever the other
    nodes would score, so asking them only keeps every verb queued behind this one waiting
    (a 3 s node_score held a prioritize of two nodes for 6 s)."""
    scores: dict[str, float] = {}
    for asked, node in enumerate(nodes):
        if asked and _clock() > deadline:
            raise _CutShort(asked, len(nodes))
        scores[node.Name] = score(task, node)
    return scores


def explained(result: Any) -> tuple[Any, Reason | None, Mapping[str, Reason]]:
    """A hook's answer, its reason and its vetoes, whether it explained itself or not."""
    if isinstance(result, Explained):
        return result.answer, result.reason, result.vetoes
    return result, None, NO_VETOES


@dataclass(slots=True)
class Slot:
    """One plugin entry of the tiers and the instance answering for it."""

    option: PluginOption
    plugin: Plugin
    hooks: frozenset[str] = field(default_factory=frozenset)
    on_error: OnError = field(init=False)
    """The entry's ``onError``, else the plugin class's ``on_error``."""
    budget: float = field(init=False)
    """The entry's ``timeBudget`` in seconds, else the default."""

    def __post_init__(self) -> None:
        self.on_error = OnError(self.option.onError or type(self.plugin).on_error)
        self.budget = self.option.timeBudget or DEFAULT_TIME_BUDGET

    @property
    def name(self) -> str:
        return self.option.name


def participates(slot: Slot, point: ExtensionPoint) -> bool:
    return point.hook in slot.hooks and (point.flag is None or slot.option.enabled(point.flag))


@dataclass(slots=True)
class EvictDecision:
    victims: list[TaskInfo]
    decided: bool


class Framework:
    """The plugin instances of one session, arranged by tier, and the combination rules."""

    def __init__(
        self,
        tiers: Sequence[Sequence[Slot]],
        release: Release,
        metrics: Metrics,
        log: SessionLog | None = None,
        clock: Callable[[], datetime] = utc_now,
        events: PodGroupEvents | None = None,
        faults: PluginFaults | None = None,
        sessionless: bool = False,
    ) -> None:
        self.tiers = [list(tier) for tier in tiers]
        self.sessionless = sessionless
        """The framework that answers when no session is open (app/session.py): it lives as
        long as its configuration, so what a session would start afresh ends by time here."""
        self.faults = faults if faults is not None else PluginFaults(metrics, clock)
        """Where a plugin's fault is counted, logged and kept for ``/readyz``."""
        self._times: TallyHistogram = metrics.plugin_call_duration
        self._overruns: dict[str, int] = {}
        """Plugin → its calls in a row over budget, this session."""
        self._benched: dict[str, datetime | None] = {}
        """Plugins over budget too often: their policy applies to every call, for the rest of
        the session (None) or, without one, until the time given (then they are asked again)."""
        self.release = release
        self.log = log
        """The session's decision record (None: not recorded, as without a snapshot)."""
        self.clock = clock
        subscribers: list[DecisionSink] = [FaultSubscriber(self.faults), MetricsSubscriber(metrics)]
        if log is not None:
            subscribers.append(RecordSubscriber(log, clock))
        if events is not None:  # a change of verdict on a job becomes a PodGroup Event
            subscribers.append(EventsSubscriber(events))
        self.stream = Stream(subscribers)
        """Where every answer, verdict and fault is told (app/decisions.py)."""
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
            point.verb: [[slot for slot in tier if participates(slot, point)] for tier in resolved]
            for point in EXTENSION_POINTS
            if point.hook not in LIFECYCLE
        }
        answered = {verb for verb, tiers in self._active.items() if any(tiers)}
        if Verb.JOB_ENQUEUED in answered and not release.admission_follows_vote:
            answered.add(Verb.JOB_ENQUEUEABLE)  # the vote is where admissions are accounted
        self._answered = frozenset(answered)

    # --- bookkeeping -------------------------------------------------------------------------

    def active_plugins(self) -> dict[str, list[str]]:
        """Per verb, the plugins that take part, in the order they are asked."""
        return {
            verb: [slot.name for tier in tiers for slot in tier]
            for verb, tiers in self._active.items()
        }

    def answers(self, point: ExtensionPoint) -> bool:
        """Whether any plugin takes part in ``point`` (otherwise the answer is neutral)."""
        return point.verb in self._answered

    def _call(self, slot: Slot, point: ExtensionPoint, *args: Any) -> Any:
        """The plugin's answer, checked against the contract (app/contract.py) and timed
        against its budget; :data:`DROPPED` when a fault's policy drops it. Raises
        :class:`PluginFailure` when the policy fails the verb."""
        if self._benched and slot.name in self._benched and point is not CLOSE:
            until = self._benched[slot.name]
            if until is None or self.clock() < until:
                return self._fault(
                    slot, point, args, FaultKind.OVER_BUDGET,
                    f"not asked: {OVERRUNS_BEFORE_POLICY} calls in a row over its"
                    f" {slot.budget * 1e3:g} ms budget"
                    + (" this session" if until is None else f", until {until:%H:%M:%S}"),
                )  # fmt: skip
            # Asked again on probation: one more call over budget benches it again.
            del self._benched[slot.name]
            self._overruns[slot.name] = OVERRUNS_BEFORE_POLICY - 1
        hook = getattr(slot.plugin, point.hook)
        started = _clock()
        if (
            self._overruns
            and point is PRIORITIZE
            and self._overruns.get(slot.name, 0) >= OVERRUNS_BEFORE_POLICY - 1
            and type(slot.plugin).node_order is Plugin.node_order
        ):
            # One more overrun benches it: score node by node and stop at the budget. A hook
            # that runs cannot be stopped safely (nor a plugin's own node_order), only not
            # called again.
            hook = functools.partial(_scores_until, slot.plugin.node_score, started + slot.budget)
        try:
            result = hook(*args)
        except _CutShort as cut:
            elapsed = _clock() - started
            self._times.observe((slot.name, point.verb), elapsed)
            self._overran(
                slot, point, args, elapsed,
                f"; stopped after {cut.asked} of {cut.of} nodes, the others not asked",
            )  # fmt: skip
            return DROPPED  # the policy applied: under fail, _overran has raised
        except (
            msgspec.ValidationError,
            msgspec.DecodeError,
            UnicodeDecodeError,
            QuantityError,
        ) as exc:
            # A part of the body decoded only when a plugin first reads it (NodeInfo.Tasks, a
            # resource quantity, which Go's decoder would have refused with the whole body):
            # the caller's body is at fault, not the plugin, so it is a 400 like any other.
            raise RequestError(
                f"malformed body in a part {slot.name} reads in {point.verb}: {exc}"
            ) from None
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            return self._fault(slot, point, args, FaultKind.RAISED, detail, exc)
        elapsed = _clock() - started
        self._times.observe((slot.name, point.verb), elapsed)
        if elapsed > slot.budget:
            if self._overran(slot, point, args, elapsed):
                return DROPPED
        elif self._overruns:
            self._overruns.pop(slot.name, None)
        # The contract: a value of another type is this plugin's fault, never coerced into an
        # answer ("no" is not ready, 5 is not a Permit).
        if CONFORMS[point.hook](result):
            return result
        detail = (
            check_answer(point.hook, result, type(slot.plugin))
            or "returned an answer of another type"
        )
        return self._fault(slot, point, args, FaultKind.WRONG_TYPE, detail)

    def _overran(
        self,
        slot: Slot,
        point: ExtensionPoint,
        args: tuple[Any, ...],
        elapsed: float,
        cut: str = "",
    ) -> bool:
        """Count a call over budget; True when its answer is dropped (the policy applies).
        ``cut``: how the call was stopped short (:func:`_scores_until`)."""
        runs = self._overruns[slot.name] = self._overruns.get(slot.name, 0) + 1
        took = f"took {elapsed * 1e3:.0f} ms, over its {slot.budget * 1e3:g} ms budget{cut}"
        if runs < OVERRUNS_BEFORE_POLICY:
            self._fault(
                slot, point, args, FaultKind.OVER_BUDGET,
                f"{took} ({runs} of {OVERRUNS_BEFORE_POLICY} in a row before onError applies)",
                used=True,
            )  # fmt: skip
            return False
        if self.sessionless:
            until = self.clock() + timedelta(seconds=BENCHED_WITHOUT_SESSION)
            self._benched[slot.name] = until
            span = (
                f"until {until:%H:%M:%S} ({BENCHED_WITHOUT_SESSION:g} s: no session is open to"
                " end it), then it is asked again"
            )
        else:
            self._benched[slot.name] = None
            span = "for the rest of the session"
        self._fault(
            slot, point, args, FaultKind.OVER_BUDGET,
            f"{took}, {runs} calls in a row: onError applies to its calls {span}",
        )  # fmt: skip
        return True

    def _fault(
        self,
        slot: Slot,
        point: ExtensionPoint,
        args: tuple[Any, ...],
        kind: FaultKind,
        detail: str,
        cause: BaseException | None = None,
        used: bool = False,
    ) -> Any:
        """A fault of ``slot``'s plugin: counted, logged, recorded, then its policy.
        :data:`DROPPED` under ``abstain``; raises :class:`PluginFailure` under ``fail``
        (``used``: the answer stands, only the fault is told)."""
        fail = not used and slot.on_error is OnError.FAIL
        fault = Fault(
            slot.name, point.verb, kind, detail, slot.on_error, not used and not fail, fail,
            self.clock(),
        )  # fmt: skip
        self.stream.fault(fault, args[0] if args else None, cause)
        if fail:
            failure = PluginFailure(slot.name, point.verb, cause or Contract(detail), kind)
            failure.logged = True
            raise failure from cause
        return None if used else DROPPED

    # --- combination rules, one method per :class:`~plugins.api.extension_points.Rule` -----

    def first_failure(
        self, point: ExtensionPoint, task: TaskInfo, node: NodeInfo
    ) -> FitError | None:
        """``Session.PredicateFn``: the first failure, in tier and plugin order."""
        told = self.stream
        for tier in self._active[point.verb]:
            for slot in tier:
                error: FitError | None = self._call(slot, point, task, node)
                if error is DROPPED:
                    continue
                if error is not None:
                    told.answered(slot.name, point.verb, FAIL)
                    told.rejected(slot.name, point.verb, FIT_STATUS.get(error.code, "error"))
                    told.predicate(task, node.Name, slot.name, error)
                    return error
                told.answered(slot.name, point.verb, PASS)
        told.predicate(task, node.Name, "", None)
        return None

    def score_sum(
        self, point: ExtensionPoint, task: TaskInfo, nodes: Sequence[NodeInfo]
    ) -> dict[str, float]:
        """``Session.BatchNodeOrderFn``: every plugin's scores added per node."""
        total: dict[str, float] = {}
        for tier in self._active[point.verb]:
            for slot in tier:
                scores = self._call(slot, point, task, nodes)
                if scores is DROPPED:
                    continue
                if not all(map(math.isfinite, scores.values())):
                    bad = next(n for n, score in scores.items() if not math.isfinite(score))
                    hook = hook_name(type(slot.plugin), point.hook)
                    detail = f"returned the score {scores[bad]} for {bad} from {hook}; expected a finite float"
                    self._fault(slot, point, (task,), FaultKind.WRONG_TYPE, detail)
                    continue
                for node, score in scores.items():
                    total[node] = total.get(node, 0.0) + score
                self.stream.answered(slot.name, point.verb, SCORED)
                self.stream.scores(task, slot.name, scores)
        return total

    def victims(
        self, point: ExtensionPoint, evictor: TaskInfo, evictees: Sequence[TaskInfo]
    ) -> EvictDecision:
        """``Session.Preemptable`` / ``Session.Reclaimable``."""
        answers: list[Answer] = []
        try:
            return self._victims(point, evictor, evictees, answers)
        finally:
            # Once per question, whatever tier decided, with every answer it got.
            if answers:
                self.stream.evictions(point.verb, evictor, evictees, answers)

    def _victims(
        self,
        point: ExtensionPoint,
        evictor: TaskInfo,
        evictees: Sequence[TaskInfo],
        answers: list[Answer],
    ) -> EvictDecision:
        victims: list[TaskInfo] | None = None
        blocked = False
        told = self.stream
        given: set[int] | None = None  # the evictees' identities, once an answer has victims
        for tier in self._active[point.verb]:
            for slot in tier:
                result = self._call(slot, point, evictor, evictees)
                if result is DROPPED:
                    continue  # as an abstention: the other plugins' victims stand
                answer, _, vetoes = explained(result)
                candidates, vote = answer
                if vote == Vote.ABSTAIN:
                    told.answered(slot.name, point.verb, ABSTAIN)
                    continue
                if victims is None and candidates:
                    # This answer starts the victim list: its objects are what Caldera sends
                    # back, so each must be an evictee it was given. A later answer only
                    # filters that list by UID, as Volcano's intersection does.
                    if given is None:
                        given = set(map(id, evictees))
                    if not given.issuperset(map(id, candidates)):
                        self._foreign(slot, point, evictor, evictees, candidates, given)
                        continue  # dropped (abstain); fail has raised
                answers.append((slot.name, len(candidates), vetoes))
                if vetoes:
                    # once per answer and reason code: "this answer spared evictees because…"
                    for code in set(map(CODE, vetoes.values())):
                        told.rejected(slot.name, point.verb, code)
                if len(candidates) == 0:
                    told.answered(slot.name, point.verb, NONE)
                    victims = None
                    blocked = True
                    break  # an empty list with a vote ends this tier; the next one is tried
                told.answered(slot.name, point.verb, VICTIMS)
                if victims is None:
                    victims = list(candidates)
                else:
                    # Each victim is kept once per candidate with its UID, in the victims' order;
                    # an empty intersection resets to "no victims" without ending the tier.
                    uids = {c.UID for c in candidates}
                    if len(uids) == len(candidates):  # each UID once: a filter does it
                        victims = [v for v in victims if v.UID in uids] or None
                    else:
                        wanted = Counter(c.UID for c in candidates)
                        victims = [v for v in victims for _ in range(wanted[v.UID])] or None
            if victims is not None:
                return EvictDecision(victims, True)
        return EvictDecision([], blocked)

    def _foreign(
        self,
        slot: Slot,
        point: ExtensionPoint,
        evictor: TaskInfo,
        evictees: Sequence[TaskInfo],
        candidates: Sequence[TaskInfo],
        given: set[int],
    ) -> None:
        """A victim that is not one of the evictees the plugin was given (a copy, or a TaskInfo
        it made): Volcano evicts the objects Caldera echoes, and Caldera has the bytes of the
        evictees only. The plugin's fault, as a wrong type is: its answer is dropped, or the
        verb fails."""
        stranger = next(c for c in candidates if id(c) not in given)
        offered = (
            " (its UID is an evictee's: a copy)"
            if any(e.UID == stranger.UID for e in evictees)
            else ""
        )
        detail = (
            f"returned a victim that is not one of the evictees it was given: TaskInfo"
            f" {stranger.Namespace}/{stranger.Name} UID {stranger.UID!r}{offered}; expected"
            " some of the evictees themselves"
        )
        self._fault(slot, point, (evictor,), FaultKind.WRONG_TYPE, detail)

    def vote(self, point: ExtensionPoint, job: JobInfo) -> Vote:
        """``Session.JobEnqueueable``: a Reject ends everything; a tier with a Permit ends the
        vote after that tier; all abstaining leaves the decision to Volcano's other plugins.

        Volcano's enqueue action admits the job exactly when the vote is not a Reject and then
        calls ``JobEnqueued``. Releases whose extender has no jobEnqueued verb (before 1.16)
        never tell Caldera, so the framework tells the plugins itself, here."""
        decision, by, reason = self._vote(point, job)
        self.stream.job_decided(job, decision, by, reason)
        if decision != Vote.REJECT and not self.release.admission_follows_vote:
            self.notify(ENQUEUED, job)
        return decision

    def _vote(self, point: ExtensionPoint, job: JobInfo) -> tuple[Vote, str, Reason | None]:
        """The vote, and the rejecting plugin and its reason when it is a Reject."""
        told = self.stream
        for tier in self._active[point.verb]:
            permitted = False
            for slot in tier:
                result = self._call(slot, point, job)
                if result is DROPPED:
                    continue
                vote, reason, _ = explained(result)
                outcome = OF_VOTE[vote]
                told.job_verdict(job, point.verb, slot.name, outcome, reason)
                told.answered(slot.name, point.verb, outcome)
                if outcome is REJECT:
                    told.rejected(slot.name, point.verb, reason.code if reason else "unexplained")
                    return Vote.REJECT, slot.name, reason
                permitted = permitted or outcome is PERMIT
            if permitted:
                return Vote.PERMIT, "", None
        return Vote.ABSTAIN, "", None

    def notify(self, point: ExtensionPoint, job: JobInfo) -> None:
        """``Session.JobEnqueued``: every plugin, in order."""
        for tier in self._active[point.verb]:
            for slot in tier:
                if self._call(slot, point, job) is not DROPPED:
                    self.stream.answered(slot.name, point.verb, CALLED)

    def any_true(self, point: ExtensionPoint, queue: QueueInfo) -> bool:
        """``Session.Overused``: OR, the first true wins."""
        told = self.stream
        for tier in self._active[point.verb]:
            for slot in tier:
                result = self._call(slot, point, queue)
                if result is DROPPED:
                    continue
                overused, reason, _ = explained(result)
                outcome = OVERUSED if overused else OK
                told.queue_verdict(queue, slot.name, outcome, reason)
                told.answered(slot.name, point.verb, outcome)
                if overused:
                    told.rejected(slot.name, point.verb, reason.code if reason else "unexplained")
                    return True
        return False

    def all_true(self, point: ExtensionPoint, job: JobInfo) -> bool:
        """``Session.JobReady``: AND, the first false wins; true when nobody objects."""
        told = self.stream
        for tier in self._active[point.verb]:
            for slot in tier:
                result = self._call(slot, point, job)
                if result is DROPPED:
                    continue
                ready, reason, _ = explained(result)
                outcome = READY if ready else NOT_READY
                told.job_verdict(job, point.verb, slot.name, outcome, reason)
                told.answered(slot.name, point.verb, outcome)
                if not ready:
                    told.rejected(slot.name, point.verb, reason.code if reason else "unexplained")
                    return False
        return True

    def event(self, point: ExtensionPoint, task: TaskInfo) -> str:
        """allocate / deallocate: every handler in order; the first error message."""
        first = ""
        for tier in self._active[point.verb]:
            for slot in tier:
                message = self._call(slot, point, task)
                if message is DROPPED:
                    continue
                if message:
                    self.stream.answered(slot.name, point.verb, ERROR)
                    first = first or message
                else:
                    self.stream.answered(slot.name, point.verb, OK)
        return first

    def close(self) -> None:
        """Every plugin's ``on_session_close``, benched or not (closing is not an answer a
        budget can spare). A fault here is counted and told like any other, but fails nothing,
        as Volcano's onSessionClose errors are only logged: the next session still opens."""
        for tier in self.tiers:
            for slot in tier:
                try:
                    self._call(slot, CLOSE)
                except PluginFailure:
                    continue
