"""What a shadow configuration would have decided differently: one verb's live answer beside the
shadow's, as :class:`Difference` values with both configurations' reasons.

Both answers are the bytes each configuration sent (or would have sent) Volcano; equal bytes are
no difference, which is the common case and costs one comparison. Otherwise the request is read
again for its subject (a job, a task and node, a queue) and each side's reason comes from its
own decision record (``app/explain.py``): the live configuration's and the shadow's are two
records, each written only by the thread that answers for that configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from app.explain import SessionLog, task_key
from plugins.api.extension_points import Verb
from schemas.api import JobInfo, TaskInfo
from schemas.requests import (
    EventHandlerRequest,
    JobRequest,
    PredicateRequest,
    PrioritizeRequest,
    QueueOverusedRequest,
)

HOLDS_BACK = frozenset({"reject", "not ready", "not_ready", "overused"})
"""A verdict that keeps a job from going on (the record's words, before and after the typed
outcome of the decision stream)."""
NO_PLUGIN = "none"
"""The ``plugin`` label of a difference no single plugin decided (scores, an error message)."""


class Side(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One configuration's answer and why: the plugin that decided and its reason."""

    answer: str
    plugin: str = ""
    reason: str = ""

    def describe(self) -> dict[str, str]:
        out = {"answer": self.answer}
        if self.plugin:
            out["plugin"] = self.plugin
        if self.reason:
            out["reason"] = self.reason
        return out


class Difference(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A struct, not a dataclass: it travels in the shadow process's
    :class:`~app.shadow.messages.Compared` reports."""

    verb: str
    kind: str
    """What ``subject`` names: job, task or queue."""
    subject: str
    change: str
    """What the shadow would do differently, in a few words ("would hold", "would offer")."""
    live: Side
    shadow: Side
    detail: str = ""
    """The node or victim concerned, when the subject alone does not say it."""
    key: str = ""
    """The node's name or the victim's UID, as the decision record keys them."""

    @property
    def plugin(self) -> str:
        """The label of ``caldera_shadow_differences_total``: the shadow's deciding plugin,
        else the live one's."""
        return self.shadow.plugin or self.live.plugin or NO_PLUGIN

    def line(self) -> str:
        where = f" ({self.detail})" if self.detail else ""
        why = f": {self.shadow.reason}" if self.shadow.reason else ""
        by = f" by {self.shadow.plugin}" if self.shadow.plugin else ""
        return f"{self.verb} {self.kind} {self.subject}{where}: the shadow {self.change}{by}{why}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verb": self.verb,
            self.kind: self.subject,
            "change": self.change,
            "live": self.live.describe(),
            "shadow": self.shadow.describe(),
        }
        if self.detail:
            out["detail"] = self.detail
        return out


_decode = msgspec.json.decode
_job_request = msgspec.json.Decoder(JobRequest)
_predicate_request = msgspec.json.Decoder(PredicateRequest)
_prioritize_request = msgspec.json.Decoder(PrioritizeRequest)
_queue_request = msgspec.json.Decoder(QueueOverusedRequest)
_event_request = msgspec.json.Decoder(EventHandlerRequest)
_task = msgspec.json.Decoder(TaskInfo)


class _EvictRequest(msgspec.Struct):
    evictor: TaskInfo
    evictees: list[msgspec.Raw] | None = None


_evict_request = msgspec.json.Decoder(_EvictRequest)


def job_key(job: JobInfo) -> str:
    return f"{job.Namespace}/{job.Name}"


def _job_side(log: SessionLog | None, key: str, verb: str, answer: str) -> Side:
    """``answer`` with the verdict that decided it: the first holding back, else the first."""
    verdicts = list((log.jobs.get(key) or {}).values()) if log is not None else []
    mine = [v for v in verdicts if v.verb == verb]
    decisive = next((v for v in mine if str(v.answer) in HOLDS_BACK), None)
    if decisive is None and mine and answer != "abstain":
        decisive = next((v for v in mine if str(v.answer) not in ("abstain",)), mine[0])
    if decisive is None:
        return Side(answer)
    reason = decisive.reason.message if decisive.reason is not None else ""
    return Side(answer, decisive.plugin, reason)


def _queue_side(log: SessionLog | None, queue: str, answer: str) -> Side:
    verdicts = list((log.queues.get(queue) or {}).values()) if log is not None else []
    decisive = next((v for v in verdicts if str(v.answer) in HOLDS_BACK), None)
    if decisive is None:
        return Side(answer)
    reason = decisive.reason.message if decisive.reason is not None else ""
    return Side(answer, decisive.plugin, reason)


def _predicate_side(log: SessionLog | None, task: str, node: str, passed: bool) -> Side:
    if passed:
        return Side("fits")
    trace = log.tasks.get(task) if log is not None else None
    failed = trace.failed.get(node) if trace is not None else None
    if failed is None:
        return Side("filtered")
    return Side("filtered", failed[0], failed[1])


def _veto_side(log: SessionLog | None, verb: str, evictor: str, uid: str, offered: bool) -> Side:
    """Whether a victim is offered, and when not the plugin whose veto spared it."""
    if offered:
        return Side("offered")
    trace = log.tasks.get(evictor) if log is not None else None
    question = trace.evictions.get(verb) if trace is not None else None
    if question is not None:
        for plugin, _, vetoes in list(question.answers):
            reason = vetoes.get(uid)
            if reason is not None:
                return Side("spared", plugin, reason.message)
    return Side("spared")


VOTE_WORDS = {1: "permit", 0: "abstain", -1: "reject"}


def _status(answer: bytes) -> Any:
    return _decode(answer).get("status")


def compare(
    verb: str, body: bytes | bytearray, live: bytes, shadow: bytes, logs: tuple[Any, Any]
) -> list[Difference]:
    """The differences between ``live`` and ``shadow``, the two answers to ``body``; ``logs``
    holds each side's session log (None where the record is off)."""
    if live == shadow:
        return []
    compare_verb = COMPARES.get(verb)
    if compare_verb is None:
        return []
    return compare_verb(verb, body, _decode(live), _decode(shadow), logs)


Logs = tuple[SessionLog | None, SessionLog | None]
Compare = Callable[[str, bytes | bytearray, Any, Any, Logs], list[Difference]]


def _enqueueable(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    key = job_key(_job_request.decode(body).job)
    lv, sv = VOTE_WORDS.get(live.get("status"), "?"), VOTE_WORDS.get(shadow.get("status"), "?")
    if lv == sv:
        return []
    change = {
        "reject": "would hold it",
        "permit": "would admit it",
        "abstain": "would leave it to Volcano's other plugins",
    }[sv] if sv in VOTE_WORDS.values() else f"would answer {sv}"  # fmt: skip
    return [
        Difference(
            verb, "job", key, change,
            _job_side(logs[0], key, verb, lv), _job_side(logs[1], key, verb, sv),
        )
    ]  # fmt: skip


def _ready(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    key = job_key(_job_request.decode(body).job)
    lr, sr = bool(live.get("status")), bool(shadow.get("status"))
    if lr == sr:
        return []
    word = {True: "ready", False: "not ready"}
    change = "would find it ready" if sr else "would hold it as not ready"
    return [
        Difference(
            verb, "job", key, change,
            _job_side(logs[0], key, verb, word[lr]), _job_side(logs[1], key, verb, word[sr]),
        )
    ]  # fmt: skip


def _overused(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    queue = _queue_request.decode(body).queue.Name
    lo, so = bool(live.get("overused")), bool(shadow.get("overused"))
    if lo == so:
        return []
    word = {True: "overused", False: "ok"}
    change = "would find it overused" if so else "would find it not overused"
    return [
        Difference(
            verb, "queue", queue, change,
            _queue_side(logs[0], queue, word[lo]), _queue_side(logs[1], queue, word[so]),
        )
    ]  # fmt: skip


def _passes(answer: Mapping[str, Any]) -> bool:
    """Every predicate answer shape's pass: an empty status, status list or error message."""
    status = answer.get("status")
    return not status and not answer.get("errorMessage") and not answer.get("code")


def _predicate(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    request = _predicate_request.decode(body)
    task, node = task_key(request.task), request.node.Name
    lp, sp = _passes(live), _passes(shadow)
    if lp and sp:
        return []
    # Both filtering the node, for different reasons, is a difference too.
    change = "would let it fit" if sp else "would filter the node"
    if lp == sp:
        change = "would filter the node for another reason"
    return [
        Difference(
            verb, "task", task, change,
            _predicate_side(logs[0], task, node, lp), _predicate_side(logs[1], task, node, sp),
            detail=f"node {node}", key=node,
        )
    ]  # fmt: skip


def _scores(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    task = task_key(_prioritize_request.decode(body).task)
    ls: dict[str, float] = live.get("nodeScore") or {}
    ss: dict[str, float] = shadow.get("nodeScore") or {}
    out = []
    for node in sorted(ls.keys() | ss.keys()):
        a, b = ls.get(node, 0.0), ss.get(node, 0.0)
        if a != b:
            out.append(
                Difference(
                    verb, "task", task, f"would score the node {b:g}",
                    Side(f"{a:g}"), Side(f"{b:g}"), detail=f"node {node}", key=node,
                )
            )  # fmt: skip
    return out


def _victims(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    request = _evict_request.decode(body)
    evictor = task_key(request.evictor)
    names = {}
    for raw in request.evictees or ():
        evictee = _task.decode(raw)
        names[evictee.UID] = task_key(evictee)

    def uids(answer: Any) -> set[str]:
        return {str(v.get("UID", "")) for v in answer.get("victims") or ()}

    lv, sv = uids(live), uids(shadow)
    out = []
    for uid in sorted(lv ^ sv):
        offered = uid in sv
        out.append(
            Difference(
                verb, "task", evictor,
                "would offer the victim" if offered else "would spare the victim",
                _veto_side(logs[0], verb, evictor, uid, not offered),
                _veto_side(logs[1], verb, evictor, uid, offered),
                detail=f"victim {names.get(uid, uid)}", key=uid,
            )
        )  # fmt: skip
    if not out and live.get("status") != shadow.get("status"):
        out.append(
            Difference(
                verb, "task", evictor, "would answer another vote",
                Side(VOTE_WORDS.get(live.get("status"), "?")),
                Side(VOTE_WORDS.get(shadow.get("status"), "?")),
            )
        )  # fmt: skip
    return out


def _event(verb: str, body: bytes | bytearray, live: Any, shadow: Any, logs: Logs) -> list[Difference]:  # fmt: skip
    task = task_key(_event_request.decode(body).task)
    le, se = live.get("errorMessage") or "", shadow.get("errorMessage") or ""
    if le == se:
        return []
    return [
        Difference(
            verb, "task", task, "would answer an error" if se else "would answer no error",
            Side("error" if le else "ok", reason=le), Side("error" if se else "ok", reason=se),
        )
    ]  # fmt: skip


COMPARES: dict[str, Compare] = {
    Verb.JOB_ENQUEUEABLE: _enqueueable,
    Verb.JOB_READY: _ready,
    Verb.QUEUE_OVERUSED: _overused,
    Verb.PREDICATE: _predicate,
    Verb.PRIORITIZE: _scores,
    Verb.PREEMPTABLE: _victims,
    Verb.RECLAIMABLE: _victims,
    Verb.ALLOCATE: _event,
    Verb.DEALLOCATE: _event,
}
"""Per verb with an answer that decides something, how two answers differ. onSessionOpen,
onSessionClose and jobEnqueued answer nothing but ``{}``."""


def with_live_reasons(difference: Difference, log: SessionLog | None) -> Difference:
    """``difference`` with the live side's deciding plugin and reason from the live session's
    log: the shadow compares without it (it runs in a process of its own, app/shadow/service.py)."""
    if log is None:
        return difference
    d, answer = difference, difference.live.answer
    if d.verb in (Verb.JOB_ENQUEUEABLE, Verb.JOB_READY):
        live = _job_side(log, d.subject, d.verb, answer)
    elif d.verb == Verb.QUEUE_OVERUSED:
        live = _queue_side(log, d.subject, answer)
    elif d.verb == Verb.PREDICATE:
        live = _predicate_side(log, d.subject, d.key, answer == "fits")
    elif d.verb in (Verb.PREEMPTABLE, Verb.RECLAIMABLE) and d.key:
        live = _veto_side(log, d.verb, d.subject, d.key, answer == "offered")
    else:
        return difference
    return msgspec.structs.replace(difference, live=live)
