"""``caldera check-plugin NAME [--config FILE]``: drive every hook a plugin implements with the
request bodies Volcano really sent (``plugins/api/captured``) and with generated ones, and
report what Caldera would have to refuse at run time.

A problem is a hook that raised, an answer outside the hook's declared type (the contract the
framework checks, :func:`app.contract.check_answer`), victims that are not elements of the
evictees given, a score that is not finite, a hook that changed the objects it was given, and a
hook whose 99th-percentile time exceeds the
plugin's time budget (its entry's ``timeBudget``). The plugin is built as the server builds
it, from its entry in the configuration (its arguments and flags; with no ``--config``, a
configuration of that plugin alone), once per session: a session on each captured snapshot, on a generated one and on an
empty one, each opened with ``on_session_open`` and closed with ``on_session_close`` as a
scheduling cycle would.

Hooks are called directly, not through the framework, so a problem is the plugin's own answer,
attributed to the input that produced it.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.config import (
    CalderaConfig,
    ConfigError,
    PluginEntry,
    load_config,
    load_config_text,
    unknown_plugin,
)
from app.contract import check_answer
from app.plugin_faults import DEFAULT_TIME_BUDGET
from plugins.api import registry, testing
from plugins.api.base import Plugin, Session, hook_name, implemented_hooks
from plugins.api.extension_points import BY_HOOK, BY_VERB, Rule, Verb
from plugins.api.reasons import answer_of
from plugins.support.resources import total_allocatable
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from schemas.requests import (
    EventHandlerRequest,
    EvictRequest,
    JobRequest,
    OnSessionOpenRequest,
    PredicateRequest,
    PrioritizeRequest,
    QueueOverusedRequest,
)

EXIT_PROBLEMS = 1
BACKGROUND_SECONDS = 5.0
"""How long a background data source (pdb's budgets) is waited for."""
CALLS_PER_HOOK = 200
"""Calls per hook and session at least, cycling through its inputs: enough for a p99."""


@dataclass(frozen=True, slots=True)
class Call:
    """One input of a hook: its arguments and where they came from."""

    source: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A session: what ``on_session_open`` sees and the calls made within it."""

    source: str
    session: Session
    calls: dict[str, list[Call]]


@dataclass
class Problem:
    hook: str
    kind: str
    """"raised", "wrong type", "mutated", "over budget", "constructor", "session open"."""
    message: str
    first: str
    """The input that first showed it."""
    count: int = 1


@dataclass
class Report:
    plugin: str
    hooks: tuple[str, ...]
    budget_seconds: float
    scenarios: int = 0
    times: dict[str, list[float]] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    """A hook's name as the plugin's author wrote it (``node_score`` for ``node_order``)."""
    problems: dict[tuple[str, str, str], Problem] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, hook: str, kind: str, message: str, source: str) -> None:
        key = (hook, kind, message)
        if key in self.problems:
            self.problems[key].count += 1
        else:
            self.problems[key] = Problem(hook, kind, message, source)

    def p99(self, hook: str) -> float:
        times = sorted(self.times.get(hook, []))
        return times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)] if times else 0.0

    @property
    def clean(self) -> bool:
        return not self.problems


# --- inputs ------------------------------------------------------------------------------


def _captured(release: str, verb: str, kind: type[Any]) -> Any | None:
    try:
        body = testing.captured_body(release, verb)
    except KeyError:
        return None
    return msgspec.json.decode(body, type=kind)


def _generated_tasks() -> list[tuple[str, TaskInfo]]:
    return [
        ("a pending task", testing.task()),
        (
            "a running task with labels and annotations",
            testing.task(
                "running",
                status=TaskStatus.Running,
                node="node-1",
                labels={"app": "x"},
                annotations={"example.com/key": "value"},
            ),
        ),
        ("a high-priority task of another job", testing.task("urgent", job="job-2", priority=1000)),
        ("a task asking nothing", testing.task("empty", milli_cpu=0)),
    ]


def _generated_nodes(tasks: Sequence[TaskInfo]) -> list[tuple[str, NodeInfo]]:
    return [
        ("an empty node", testing.node()),
        (
            "a labelled node running tasks",
            testing.node("node-2", labels={"zone": "a"}, tasks=list(tasks)),
        ),
        ("a full node", testing.node("node-3", milli_cpu=0, memory=0)),
    ]


def _generated_jobs(tasks: Sequence[TaskInfo]) -> list[tuple[str, JobInfo]]:
    return [
        ("a job without tasks", testing.job()),
        ("a job with tasks", testing.job("job-2", tasks=list(tasks), min_available=2)),
        (
            "a running job with minimum resources in another queue",
            testing.job("job-3", queue="other", phase="Running", min_resources={"cpu": "4"}),
        ),
    ]


def _generated_queues() -> list[tuple[str, QueueInfo]]:
    return [
        ("the default queue", testing.queue()),
        (
            "a queue with capability and allocation",
            testing.queue("other", capability={"cpu": "10"}, allocated={"cpu": "12"}),
        ),
    ]


def _calls(
    hooks: Sequence[str], tasks: list[tuple[str, TaskInfo]], nodes: list[tuple[str, NodeInfo]],
    jobs: list[tuple[str, JobInfo]], queues: list[tuple[str, QueueInfo]],
) -> dict[str, list[Call]]:  # fmt: skip
    """Generated calls for each hook."""
    node_list = [n for _, n in nodes]
    task_list = [t for _, t in tasks]
    by_verb: dict[Verb, list[Call]] = {
        Verb.PREDICATE: [
            Call(f"generated: {tn} on {nn}", (t, n)) for tn, t in tasks for nn, n in nodes
        ],
        Verb.PRIORITIZE: [
            Call(f"generated: {tn} over {len(node_list)} nodes", (t, node_list)) for tn, t in tasks
        ]
        + [Call("generated: no candidate nodes", (task_list[0], []))],
        Verb.JOB_ENQUEUEABLE: [Call(f"generated: {name}", (j,)) for name, j in jobs],
        Verb.JOB_ENQUEUED: [Call(f"generated: {name}", (j,)) for name, j in jobs],
        Verb.JOB_READY: [Call(f"generated: {name}", (j,)) for name, j in jobs],
        Verb.QUEUE_OVERUSED: [Call(f"generated: {name}", (q,)) for name, q in queues],
        Verb.ALLOCATE: [Call(f"generated: {name}", (t,)) for name, t in tasks],
        Verb.DEALLOCATE: [Call(f"generated: {name}", (t,)) for name, t in tasks],
    }
    for verb in (Verb.PREEMPTABLE, Verb.RECLAIMABLE):
        by_verb[verb] = [Call(f"generated: {tn}, no evictees", (t, [])) for tn, t in tasks[:1]] + [
            Call(f"generated: {tn}, {len(task_list)} evictees", (t, list(task_list)))
            for tn, t in tasks
        ]
    by_hook = {BY_VERB[verb].hook: calls for verb, calls in by_verb.items()}
    return {hook: by_hook[hook] for hook in hooks}


def _captured_calls(release: str, hooks: Sequence[str]) -> dict[str, list[Call]]:
    source = f"captured: Volcano {release}"
    calls: dict[str, list[Call]] = {hook: [] for hook in hooks}

    def add(verb: Verb, body: str, kind: type[Any], args: Callable[[Any], tuple[Any, ...]]) -> None:
        hook = BY_VERB[verb].hook
        if hook in calls and (request := _captured(release, body, kind)) is not None:
            calls[hook].append(Call(f"{source} {body} body", args(request)))

    add(Verb.PREDICATE, Verb.PREDICATE, PredicateRequest, lambda r: (r.task, r.node))
    add(Verb.PRIORITIZE, Verb.PRIORITIZE, PrioritizeRequest, lambda r: (r.task, r.nodes or []))
    for verb in (Verb.PREEMPTABLE, Verb.RECLAIMABLE):
        add(verb, verb, EvictRequest, _evict_args)
    for verb in (Verb.JOB_ENQUEUEABLE, Verb.JOB_ENQUEUED, Verb.JOB_READY):
        # jobEnqueued is never captured (1.16): its body is jobEnqueueable's
        body = Verb.JOB_ENQUEUEABLE if verb == Verb.JOB_ENQUEUED else verb
        add(verb, body, JobRequest, lambda r: (r.job,))
    add(Verb.QUEUE_OVERUSED, Verb.QUEUE_OVERUSED, QueueOverusedRequest, lambda r: (r.queue,))
    add(Verb.ALLOCATE, "allocateFunc", EventHandlerRequest, lambda r: (r.task,))
    add(Verb.DEALLOCATE, "deallocateFunc", EventHandlerRequest, lambda r: (r.task,))
    return calls


def _evict_args(request: EvictRequest) -> tuple[Any, ...]:
    decode = msgspec.json.Decoder(TaskInfo).decode
    return (request.evictor, [decode(raw) for raw in request.evictees or []])


def scenarios(config: CalderaConfig, hooks: Sequence[str]) -> Iterator[Scenario]:
    """A session per captured release (its snapshot and its bodies, plus the generated calls),
    one on a generated snapshot, and one on an empty snapshot."""
    release = config.release
    tasks = _generated_tasks()
    nodes = _generated_nodes([t for _, t in tasks[:2]])
    jobs = _generated_jobs([t for _, t in tasks[:2]])
    queues = _generated_queues()
    generated = _calls(hooks, tasks, nodes, jobs, queues)
    for captured in testing.CAPTURED_RELEASES:
        snapshot = _captured(captured, Verb.ON_SESSION_OPEN, OnSessionOpenRequest)
        assert snapshot is not None, f"the captured bodies of {captured} lost onSessionOpen"
        nodes_of = snapshot.Nodes or {}
        session = Session(
            jobs=snapshot.Jobs or {},
            nodes=nodes_of,
            queues=snapshot.Queues or {},
            namespace_info=snapshot.NamespaceInfo or {},
            total_resource=total_allocatable(nodes_of),
            has_snapshot=True,
            release=release,
        )
        calls = _captured_calls(captured, hooks)
        yield Scenario(
            f"captured: Volcano {captured} onSessionOpen body",
            session,
            {hook: calls[hook] + generated[hook] for hook in hooks},
        )
    session = testing.session(
        jobs=[j for _, j in jobs], nodes=[n for _, n in nodes], queues=[q for _, q in queues]
    )
    yield Scenario(
        "generated snapshot", _at_release(session, config), {h: generated[h] for h in hooks}
    )
    yield Scenario(
        "empty snapshot", _at_release(testing.session(), config), {h: generated[h] for h in hooks}
    )


def _at_release(session: Session, config: CalderaConfig) -> Session:
    session.release = config.release
    return session


# --- the check ---------------------------------------------------------------------------


def _checked(
    report: Report, hook: str, call: Call, result: object, plugin: type[Plugin] | None = None
) -> None:
    problem = check_answer(hook, result, plugin)
    if problem is not None:
        report.add(hook, "wrong type", problem, call.source)
        return
    answer: Any = answer_of(result)
    if BY_HOOK[hook].rule is Rule.VICTIMS:
        victims: Sequence[TaskInfo] = answer[0]
        given = {id(task) for task in call.args[1]}
        if any(id(victim) not in given for victim in victims):
            report.add(
                hook, "wrong type", "returned a victim that is not one of the evictees given",
                call.source,
            )  # fmt: skip
    elif hook == "node_order":
        scores: Mapping[str, float] = answer
        bad = sorted(name for name, score in scores.items() if not math.isfinite(score))
        if bad:
            report.add(hook, "wrong type", f"scored {bad[0]} {scores[bad[0]]!r}", call.source)


def _call(report: Report, plugin: Plugin, hook: str, call: Call) -> None:
    method = getattr(plugin, hook)
    before = [msgspec.json.encode(arg) for arg in call.args]
    started = time.perf_counter()
    try:
        result = method(*call.args)
    except Exception as exc:
        report.times[hook].append(time.perf_counter() - started)
        report.add(hook, "raised", f"raised {type(exc).__name__}: {exc}", call.source)
        _mutated(report, hook, call, before)
        return
    report.times[hook].append(time.perf_counter() - started)
    _mutated(report, hook, call, before)
    _checked(report, hook, call, result, type(plugin))


def _mutated(report: Report, hook: str, call: Call, before: list[bytes]) -> None:
    """A hook that changed what it was given (issue 47 item 9). Volcano's objects are shared by
    every plugin of the session and by the decision record, which then files the answer under
    the changed name: a plugin must read its inputs, never write them. Compared as encoded
    before and after the call (a lazily decoded part, ``NodeInfo.Tasks``, is a fresh copy at
    each read, so only what the body carries counts)."""
    for position, (arg, old) in enumerate(zip(call.args, before, strict=True)):
        new = msgspec.json.encode(arg)
        if new == old:
            continue
        where = _first_difference(json.loads(old), json.loads(new))
        report.add(
            hook, "mutated",
            f"changed its argument {position + 1} ({_kind(arg)}) at {where}: a hook must not"
            " modify its inputs (every plugin of the session and the decision record share them)",
            call.source,
        )  # fmt: skip


def _kind(arg: object) -> str:
    if isinstance(arg, list):
        return f"list of {type(arg[0]).__name__}" if arg else "list"
    return type(arg).__name__


def _first_difference(old: Any, new: Any, path: str = "") -> str:
    """The path of the first value that differs, as ``[0].Pod.metadata.name``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            if old.get(key) != new.get(key):
                return _first_difference(old.get(key), new.get(key), f"{path}.{key}")
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return path.lstrip(".") or "the whole value"


def check(entry: PluginEntry, config: CalderaConfig, budget_seconds: float | None = None) -> Report:
    """Drive ``entry``'s plugin through every scenario; the report of what it did. The p99 of
    each hook is held to ``budget_seconds``, by default the entry's ``timeBudget`` (as the
    framework holds each call)."""
    from app.config import build_backgrounds

    backgrounds, _ = build_backgrounds(config)
    background = backgrounds.get((entry.tier, entry.index))
    hooks = tuple(sorted(implemented_hooks(entry.cls)))
    if budget_seconds is None:
        budget_seconds = entry.option.timeBudget or DEFAULT_TIME_BUDGET
    report = Report(entry.name, hooks, budget_seconds)
    report.shown = {hook: hook_name(entry.cls, hook) for hook in hooks}
    if background is not None and testing.load_backgrounds([background], BACKGROUND_SECONDS):
        report.notes.append(
            f"its background data source was not ready after {BACKGROUND_SECONDS:g}s"
            f" ({background.describe()}): the hooks were checked without its data"
        )
    for hook in hooks:
        report.times[hook] = []
    for scenario in scenarios(config, hooks):
        report.scenarios += 1
        try:
            plugin = entry.cls(entry.arguments, background)
        except Exception as exc:
            report.add("__init__", "constructor", f"raised {type(exc).__name__}: {exc}", "build")
            return report
        try:
            plugin.on_session_open(scenario.session)
        except Exception as exc:
            report.add(
                "on_session_open", "session open", f"raised {type(exc).__name__}: {exc}",
                scenario.source,
            )  # fmt: skip
            continue
        active = plugin.hooks()
        for hook in hooks:
            if hook not in active or not scenario.calls[hook]:
                continue
            inputs = scenario.calls[hook]
            for index in range(max(CALLS_PER_HOOK, len(inputs))):
                call = inputs[index % len(inputs)]
                _call(report, plugin, hook, Call(f"{call.source} ({scenario.source})", call.args))
        try:
            plugin.on_session_close()
        except Exception as exc:
            report.add(
                "on_session_close", "raised", f"raised {type(exc).__name__}: {exc}",
                scenario.source,
            )  # fmt: skip
    for hook in hooks:
        p99 = report.p99(hook)
        if p99 > budget_seconds:
            report.add(
                hook, "over budget",
                f"p99 {p99 * 1000:.1f} ms over the budget of {budget_seconds * 1000:g} ms",
                f"{len(report.times[hook])} calls",
            )  # fmt: skip
    return report


def render(report: Report) -> list[str]:
    calls = sum(len(times) for times in report.times.values())
    shown = {hook: report.shown.get(hook, hook) for hook in report.hooks}
    lines = [
        f"caldera check-plugin {report.plugin}: {report.scenarios} sessions, {calls} calls of"
        f" {', '.join(shown.values()) or 'no hook'}"
    ]
    for hook in report.hooks:
        times = report.times[hook]
        counted = Counter(p.kind for p in report.problems.values() if p.hook == hook)
        verdict = ", ".join(f"{n} {kind}" for kind, n in counted.items()) or "ok"
        lines.append(
            f"  {shown[hook]:<16} {BY_HOOK[hook].verb:<15} {len(times):>5} calls"
            f"  p99 {report.p99(hook) * 1000:8.3f} ms"
            f" (budget {report.budget_seconds * 1000:g} ms)  {verdict}"
        )
    lines.extend(f"note: {note}" for note in report.notes)
    if report.problems:
        count = len(report.problems)
        lines.append(f"{count} problem{'' if count == 1 else 's'}:")
        for problem in report.problems.values():
            repeated = f" ({problem.count} times)" if problem.count > 1 else ""
            name = shown.get(problem.hook, problem.hook)
            lines.append(f"  {name}: {problem.message}{repeated}")
            lines.append(f"    first on {problem.first}")
    else:
        lines.append("no problems")
    return lines


def entry_of(name: str, config_path: str | None) -> tuple[CalderaConfig, PluginEntry]:
    """The configuration to check ``name`` in and its first entry of that plugin: the file's,
    or a configuration of the plugin alone. A usage error is a :class:`ConfigError`."""
    if config_path is None:
        source = f"<the plugin {name} alone>"
        if registry.get(name) is None:
            raise ConfigError(source, "", unknown_plugin(name, ", ".join(registry.names())))
        config = load_config_text(f"tiers: [{{plugins: [{{name: {json.dumps(name)}}}]}}]\n", source)
    else:
        config = load_config(config_path)
    for entry in config.entries:
        if entry.name == name:
            return config, entry
    named = ", ".join(entry.name for entry in config.entries)
    raise ConfigError(str(config_path), "tiers", f"no entry names {name!r} (it names: {named})")
