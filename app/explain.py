"""The decision record: why a job waits, in the plugins' own words and numbers.

Every verb the framework combines leaves a trace here (``app/framework.py`` calls the
:class:`SessionLog` of its session): per job, each plugin's verdict on jobEnqueueable and
jobReady with its reason; per queue, queueOverused; per task, the predicate failures aggregated
by plugin and reason with node counts (kube-scheduler's "0/100 nodes are available: 60 …"),
the best node each plugin scored, and, per preemptor, how many evictees each plugin let go and
which it vetoed and why. ``GET /debug/explain`` and ``caldera explain`` read it.

Bounded: the record keeps the last ``explainSessions`` sessions, and each session at most
``explainEntries`` entries — a job, a queue, a task, each node a task's predicate was asked
about, each veto an eviction answer keeps and each evictee named count one each — later ones
are counted as dropped, not kept. Every vetoed evictee is kept in its preemptor's entry, where
its own explanation finds it. What a session keeps is names, counts, reason codes and the
plugins' messages: nothing from a pod spec, env or annotation. Memory per 1,000 jobs:
bench/README.md, "The decision record".

The eviction verbs are the hot ones (Volcano asks them per preemptor per node): recording one
question keeps the framework's list of answers as it is, the plugins' own veto mappings in it,
and costs O(1) in entries; evictee UIDs become names only on a UID's first veto in a session,
and everything else is worked out when an explanation is read.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from app.outcome import Outcome
from plugins.api.base import FitError
from plugins.api.extension_points import Verb
from plugins.api.reasons import Reason
from schemas.api import TaskInfo

if TYPE_CHECKING:
    from app.plugin_faults import Fault

DEFAULT_SESSIONS = 3
DEFAULT_ENTRIES = 60_000
VETOES_SHOWN = 20
"""Vetoed evictees listed per plugin and verb (the count is always whole)."""
TASKS_SHOWN = 10
"""Tasks shown under a job (those with a predicate failure first)."""


@dataclass(slots=True)
class Verdict:
    verb: str
    plugin: str
    answer: Outcome
    reason: Reason | None
    at: datetime

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verb": self.verb, "plugin": self.plugin, "answer": Outcome(self.answer).said
        }  # fmt: skip
        if self.reason is not None:
            out["code"] = self.reason.code
            out["message"] = self.reason.message
        out["at"] = self.at.isoformat()
        return out


Answer = tuple[str, int, Mapping[str, Reason]]
"""One plugin's answer to an eviction question: (plugin, victims it let go, its vetoes by
evictee UID)."""


@dataclass(slots=True)
class EvictionQuestion:
    """The latest eviction question a preemptor or reclaimer asked, per verb."""

    evictees: int
    answers: list[Answer]
    """Each plugin that did not abstain, in the order asked (vetoes beyond the room left in
    the session are dropped from a copy of that plugin's mapping)."""
    vetoed: dict[str, int]
    """Plugin → vetoes given, where fewer are kept in ``answers``."""
    at: datetime

    def entries(self) -> int:
        """Entries its kept vetoes take (given back when a later question replaces it)."""
        return sum(len(vetoes) for _, _, vetoes in self.answers)


@dataclass(slots=True)
class TaskTrace:
    job: str
    nodes: set[str] = field(default_factory=set)
    """Every node a predicate was asked about."""
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Node → (plugin, reason) of its latest failure; a node that later fits is removed."""
    best: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Plugin → its best-scored node and score, from the latest prioritize."""
    evictions: dict[str, EvictionQuestion] = field(default_factory=dict)
    """Verb → the latest question this task asked for victims with."""
    faults: dict[tuple[str, str], Fault] = field(default_factory=dict)
    """(verb, plugin) → the latest fault of that plugin asked about this task."""


def task_key(task: TaskInfo) -> str:
    return f"{task.Namespace}/{task.Name}"


class SessionLog:
    """What one session decided, bounded by ``limit`` entries (see the module docstring)."""

    def __init__(self, number: int, opened_at: datetime, limit: int) -> None:
        self.number = number
        self.opened_at = opened_at
        self.limit = limit
        self.size = 0
        self.dropped = 0
        self.jobs: dict[str, dict[tuple[str, str], Verdict]] = {}
        self.job_queue: dict[str, str] = {}
        self.queues: dict[str, dict[str, Verdict]] = {}
        self.tasks: dict[str, TaskTrace] = {}
        self.job_tasks: dict[str, list[str]] = {}
        self.names: dict[str, str] = {}
        """Evictee UID → namespace/pod, for every UID a plugin vetoed."""
        self.job_faults: dict[str, dict[tuple[str, str], Fault]] = {}
        self.queue_faults: dict[str, dict[tuple[str, str], Fault]] = {}
        """Per job or queue, (verb, plugin) → the latest fault of that plugin about it."""

    def _room(self) -> bool:
        """Take one entry, if any is left."""
        if self.size < self.limit:
            self.size += 1
            return True
        self.dropped += 1
        return False

    def job_verdict(
        self, job: str, queue: str, verb: str, plugin: str, answer: Outcome,
        reason: Reason | None,
        at: datetime,
    ) -> None:  # fmt: skip
        verdicts = self.jobs.get(job)
        if verdicts is None:
            if not self._room():
                return
            verdicts = self.jobs[job] = {}
            self.job_queue[job] = queue
        verdicts[(verb, plugin)] = Verdict(verb, plugin, answer, reason, at)

    def queue_verdict(
        self, queue: str, plugin: str, answer: Outcome, reason: Reason | None, at: datetime
    ) -> None:
        verdicts = self.queues.get(queue)
        if verdicts is None:
            if not self._room():
                return
            verdicts = self.queues[queue] = {}
        verdicts[plugin] = Verdict(Verb.QUEUE_OVERUSED, plugin, answer, reason, at)

    def job_fault(self, job: str, queue: str, fault: Fault) -> None:
        """A plugin's fault answering about ``job`` (kept beside its verdicts: a fault whose
        answer was used is followed by that verdict)."""
        faults = self.job_faults.get(job)
        if faults is None:
            if job not in self.jobs and not self._room():
                return
            faults = self.job_faults[job] = {}
            self.job_queue.setdefault(job, queue)
        faults[(fault.verb, fault.plugin)] = fault

    def queue_fault(self, queue: str, fault: Fault) -> None:
        faults = self.queue_faults.get(queue)
        if faults is None:
            if queue not in self.queues and not self._room():
                return
            faults = self.queue_faults[queue] = {}
        faults[(fault.verb, fault.plugin)] = fault

    def task_fault(self, task: TaskInfo, fault: Fault) -> None:
        trace = self._task(task)
        if trace is not None:
            trace.faults[(fault.verb, fault.plugin)] = fault

    def _task(self, task: TaskInfo, key: str | None = None) -> TaskTrace | None:
        key = key or task_key(task)
        trace = self.tasks.get(key)
        if trace is None:
            if not self._room():
                return None
            trace = self.tasks[key] = TaskTrace(task.Job)
            self.job_tasks.setdefault(task.Job, []).append(key)
        return trace

    def predicate(self, task: TaskInfo, node: str, plugin: str, error: FitError | None) -> None:
        trace = self._task(task)
        if trace is None:
            return
        if node not in trace.nodes:
            if not self._room():
                return
            trace.nodes.add(node)
        if error is None:
            trace.failed.pop(node, None)
        else:
            trace.failed[node] = (plugin, error.reason)

    def scores(self, task: TaskInfo, plugin: str, scores: Mapping[str, float]) -> None:
        if not scores:
            return
        trace = self._task(task)
        if trace is None:
            return
        node = max(scores, key=scores.__getitem__)
        trace.best[plugin] = (node, scores[node])

    def evictions(
        self, verb: str, evictor: TaskInfo, evictees: Sequence[TaskInfo], answers: list[Answer],
        at: datetime,
    ) -> None:  # fmt: skip
        """Each plugin's answer to one eviction question. ``answers`` is kept as given: the
        caller must not change it, nor the mappings in it, afterwards."""
        trace = self._task(evictor)
        if trace is None:
            return
        previous = trace.evictions.get(verb)
        if previous is not None:
            self.size -= previous.entries()
        names = self.names
        entries = 0
        vetoed: dict[str, int] = {}
        for index, (plugin, victims, vetoes) in enumerate(answers):
            if not vetoes:
                continue
            named = vetoes.keys() <= names.keys() or self._name(vetoes, evictees)
            keep = min(len(vetoes) if named else 0, max(self.limit - self.size - entries, 0))
            if keep < len(vetoes):  # no room left in the session: the count stays whole
                self.dropped += len(vetoes) - keep
                vetoed[plugin] = len(vetoes)
                answers[index] = (plugin, victims, dict(islice(vetoes.items(), keep)))
            entries += keep
        self.size += entries
        trace.evictions[verb] = EvictionQuestion(len(evictees), answers, vetoed, at)

    def _name(self, vetoes: Mapping[str, Reason], evictees: Sequence[TaskInfo]) -> bool:
        """Name every vetoed evictee not yet named (one entry each); False if there is no room."""
        names = self.names
        for evictee in evictees:
            uid = evictee.UID
            if uid in vetoes and uid not in names:
                if not self._room():
                    return False
                names[uid] = f"{evictee.Namespace}/{evictee.Name}"
        return True

    def _uids(self, key: str) -> list[str]:
        return [uid for uid, name in self.names.items() if name == key]

    def spared(self, key: str) -> Spared:
        """(verb, plugin, evictor, reason, at) for every eviction question whose vetoes name
        ``key``, the latest last."""
        uids = self._uids(key)
        if not uids:
            return []
        found = [
            (verb, plugin, evictor, vetoes[uid], question.at)
            for evictor, trace in self.tasks.items()
            for verb, question in trace.evictions.items()
            for plugin, _, vetoes in question.answers
            for uid in uids
            if uid in vetoes
        ]
        found.sort(key=lambda entry: entry[4])
        return found

    def describe_evictions(self, trace: TaskTrace) -> list[dict[str, Any]]:
        """Each plugin's answer to the task's latest questions, the first ``VETOES_SHOWN``
        vetoes by name."""
        names = self.names
        return [
            {
                "verb": verb,
                "plugin": plugin,
                "evictees": question.evictees,
                "victims": victims,
                "vetoed": question.vetoed.get(plugin, len(vetoes)),
                "vetoes": [
                    {"task": names.get(uid, uid), "code": r.code, "message": r.message}
                    for uid, r in islice(vetoes.items(), VETOES_SHOWN)
                ],
            }
            for verb, question in trace.evictions.items()
            for plugin, victims, vetoes in question.answers
        ]

    def describe_task(self, key: str, trace: TaskTrace | None, spared: Spared) -> dict[str, Any]:
        out: dict[str, Any] = {"task": key}
        if trace is None:
            trace = TaskTrace("")
        else:
            out["job"] = trace.job
        if trace.nodes:
            out[Verb.PREDICATE] = predicate_summary(trace)
        if trace.best:
            out["scores"] = [
                {"plugin": plugin, "bestNode": node, "score": score}
                for plugin, (node, score) in trace.best.items()
            ]
        if trace.evictions:
            out["evictions"] = self.describe_evictions(trace)
        if trace.faults:
            out["faults"] = [
                {"plugin": fault.plugin, **fault.describe()} for fault in trace.faults.values()
            ]
        if spared:
            out["protected"] = [
                {"verb": verb, "plugin": plugin, "evictor": evictor, "code": r.code,
                 "message": r.message, "at": at.isoformat()}
                for verb, plugin, evictor, r, at in spared[-VETOES_SHOWN:]
            ]  # fmt: skip
        return out


def predicate_summary(trace: TaskTrace) -> dict[str, Any]:
    """kube-scheduler's aggregate: how many nodes were asked, how many fit, and the failures by
    plugin and reason with node counts, most nodes first."""
    counts: dict[tuple[str, str], int] = {}
    for failure in trace.failed.values():
        counts[failure] = counts.get(failure, 0) + 1
    failures = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    fit = len(trace.nodes) - len(trace.failed)
    text = f"{fit}/{len(trace.nodes)} nodes are available"
    if failures:
        text += ": " + ", ".join(f"{n} {plugin}: {reason}" for (plugin, reason), n in failures)
    return {
        "nodes": len(trace.nodes),
        "fit": fit,
        "failures": [
            {"plugin": plugin, "reason": reason, "nodes": n} for (plugin, reason), n in failures
        ],
        "summary": text,
    }


Spared = list[tuple[str, str, str, Reason, datetime]]
"""(verb, plugin, evictor, reason, at) of the eviction answers that spared a task."""


def _holds_back(verdict: Verdict) -> bool:
    return Outcome(verdict.answer).holds_back


SAYS = {Outcome.REJECT: "rejects", Outcome.NOT_READY: "holds back",
        Outcome.OVERUSED: "finds overused"}  # fmt: skip


def _line(verdict: Verdict, subject: str) -> str:
    says = SAYS.get(verdict.answer, Outcome(verdict.answer).said)
    why = f": {verdict.reason.message}" if verdict.reason is not None else ""
    return f"{verdict.plugin} {says} {subject} ({verdict.verb}){why}"


class DecisionRecord:
    """The last ``sessions`` sessions' logs, newest last."""

    def __init__(self, sessions: int = DEFAULT_SESSIONS, entries: int = DEFAULT_ENTRIES) -> None:
        self.entries = entries
        self.logs: deque[SessionLog] = deque(maxlen=max(sessions, 1))
        self.enabled = sessions > 0 and entries > 0

    def open(self, number: int, opened_at: datetime) -> SessionLog | None:
        if not self.enabled:
            return None
        log = SessionLog(number, opened_at, self.entries)
        self.logs.append(log)
        return log

    def describe(self) -> dict[str, Any]:
        return {
            "sessionsKept": self.logs.maxlen if self.enabled else 0,
            "entriesPerSession": self.entries,
            "sessions": [
                {"session": log.number, "openedAt": log.opened_at.isoformat(),
                 "jobs": len(log.jobs), "tasks": len(log.tasks), "queues": len(log.queues),
                 "entries": log.size, "dropped": log.dropped}
                for log in self.logs
            ],
        }  # fmt: skip

    def _newest(self, has: Any) -> SessionLog | None:
        for log in reversed(self.logs):
            if has(log):
                return log
        return None

    def _resolve_job(self, key: str) -> str | None:
        """``key`` as a PodGroup, or the vcjob of that name, whose PodGroup Volcano names
        ``<job>-<uid>``."""
        if self._newest(
            lambda log: key in log.jobs or key in log.job_tasks or key in log.job_faults
        ):
            return key
        pattern = re.compile(re.escape(key) + r"-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")
        for log in reversed(self.logs):
            for job in (*log.jobs, *log.job_tasks):
                if pattern.match(job):
                    return job
        return None

    def explain_job(self, key: str) -> dict[str, Any] | None:
        job = self._resolve_job(key)
        if job is None:
            return None
        log = self._newest(
            lambda log: job in log.jobs or job in log.job_tasks or job in log.job_faults
        )
        assert log is not None
        verdicts = sorted(log.jobs.get(job, {}).values(), key=lambda v: not _holds_back(v))
        queue = log.job_queue.get(job, "")
        queue_verdicts = sorted(
            log.queues.get(queue, {}).values(), key=lambda v: not _holds_back(v)
        )
        tasks = [(k, log.tasks[k]) for k in log.job_tasks.get(job, [])]
        tasks.sort(key=lambda kt: len(kt[1].nodes) - len(kt[1].failed) > 0 or not kt[1].nodes)
        faults = [*log.job_faults.get(job, {}).values(), *log.queue_faults.get(queue, {}).values()]
        summary = [
            f"{f.line()} (asked about job {job})" for f in log.job_faults.get(job, {}).values()
        ]
        summary += [f"{f.line()} (asked about queue {queue})"
                    for f in log.queue_faults.get(queue, {}).values()]  # fmt: skip
        summary += [_line(v, f"job {job}") for v in verdicts if _holds_back(v)]
        summary += [_line(v, f"queue {queue}") for v in queue_verdicts if _holds_back(v)]
        for k, trace in tasks:
            if trace.nodes and len(trace.failed) == len(trace.nodes):
                summary.append(f"task {k}: {predicate_summary(trace)['summary']}")
            summary += [f"{f.line()} (asked about task {k})" for f in trace.faults.values()]
        if not summary:
            summary.append(f"no plugin hosted by Caldera holds job {job} back")
        out: dict[str, Any] = {
            "job": job,
            "session": {"session": log.number, "openedAt": log.opened_at.isoformat()},
            "summary": summary,
            "verdicts": [v.describe() for v in verdicts],
        }
        if faults:
            out["faults"] = [{"plugin": f.plugin, **f.describe()} for f in faults]
        if queue:
            out["queue"] = queue
            out["queueVerdicts"] = [v.describe() for v in queue_verdicts]
        out["tasks"] = [log.describe_task(k, t, log.spared(k)) for k, t in tasks[:TASKS_SHOWN]]
        out["tasksNotShown"] = max(0, len(tasks) - TASKS_SHOWN)
        return out

    def explain_task(self, key: str) -> dict[str, Any] | None:
        for log in reversed(self.logs):  # the newest session that decided anything about it
            spared = log.spared(key)
            if key in log.tasks or spared:
                break
        else:
            return None
        trace = log.tasks.get(key)
        out = log.describe_task(key, trace, spared)
        summary = [out[Verb.PREDICATE]["summary"]] if Verb.PREDICATE in out else []
        latest: dict[tuple[str, str], tuple[str, Reason]] = {}
        for verb, plugin, evictor, reason, _ in spared:
            latest[(verb, plugin)] = (evictor, reason)
        for (verb, plugin), (evictor, reason) in latest.items():
            summary.append(f"{plugin} spares it from {evictor} ({verb}): {reason.message}")
        if trace is not None:
            summary += [fault.line() for fault in trace.faults.values()]
        for e in out.get("evictions", ()):
            if e["vetoes"]:
                summary.append(
                    f"{e['plugin']} vetoed {e['vetoed']} of {e['evictees']} evictees"
                    f" ({e['verb']}), e.g. {e['vetoes'][0]['message']}"
                )
        return {
            "session": {"session": log.number, "openedAt": log.opened_at.isoformat()},
            "summary": summary or [f"no plugin hosted by Caldera holds task {key} back"],
            **out,
        }
