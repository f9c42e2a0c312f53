"""The plugin API: what a Caldera plugin is and which extension points it may implement.

A plugin reads like one of Volcano's ``pkg/scheduler/plugins/<name>/<name>.go``: a small class
with a ``name``, its arguments parsed in ``__init__``, a session-open hook, and the extension
points it implements. Caldera builds a fresh instance for every scheduling session, exactly as
Volcano's ``OpenSession`` calls each plugin builder every cycle, so no state leaks across cycles.

An extension point is implemented by overriding its method; the framework only consults plugins
that override it (Volcano's "function registered" test) and whose ``enableXxx`` flag is on. The
methods, their verbs, flags and combination rules are listed once, in
:mod:`plugins.api.extension_points`.

Node scoring comes in two forms, as in Volcano: ``node_score`` (``NodeOrderFn``, one node at a
time; the framework builds the batch answer) or ``node_order`` (``BatchNodeOrderFn``, when the
plugin needs the whole candidate list). A predicate failure is a value (:class:`FitError`);
an exception is a plugin bug, answered as HTTP 500 naming the plugin and the verb.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from plugins.api.arguments import Arguments
from plugins.api.extension_points import PLUGIN_HOOKS
from plugins.api.reasons import Explained
from plugins.api.release import NEWEST_STABLE_VERSION, Change, Release
from schemas.api import JobInfo, NamespaceInfo, NodeInfo, QueueInfo, Resource, TaskInfo


class OnError(StrEnum):
    """What a plugin's fault (an exception, a wrong type, a call over its time budget) does to
    the verb: ``Plugin.on_error`` by default, ``onError`` of its tiers entry when set
    (``app/plugin_faults.py``)."""

    FAIL = "fail"
    """Answer the verb with an error."""
    ABSTAIN = "abstain"
    """Drop only this plugin's answer."""


class Vote(IntEnum):
    """``plugins/util``: Permit 1, Abstain 0, Reject -1."""

    PERMIT = 1
    ABSTAIN = 0
    REJECT = -1


class StatusCode(IntEnum):
    """``api.Status`` codes a predicate failure carries."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class FitError:
    """A predicate failure. Code 2 lets preempt/reclaim still try the node; 3 excludes it."""

    reason: str
    code: StatusCode = StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE


def utc_now() -> datetime:
    return datetime.now(UTC)


def _ignore_clamp(plugin: str, resource: str) -> None:
    return None


@dataclass(slots=True)
class Session:
    """What a plugin sees of the scheduling session (Volcano's ``ssn``).

    The maps are the onSessionOpen snapshot: ``jobs`` keyed ``namespace/podgroup``, ``nodes`` and
    ``queues`` by name, ``namespace_info`` by namespace. ``total_resource`` is the sum of the
    nodes' ``Allocatable`` (``ssn.TotalResource``). ``has_snapshot`` is false when a verb arrived
    with no open session; plugins with ``needs_snapshot`` are then not consulted at all.
    ``release`` is the Volcano release calling (``volcanoVersion``): ask it named questions.
    """

    jobs: Mapping[str, JobInfo] = field(default_factory=dict)
    nodes: Mapping[str, NodeInfo] = field(default_factory=dict)
    queues: Mapping[str, QueueInfo] = field(default_factory=dict)
    namespace_info: Mapping[str, NamespaceInfo] = field(default_factory=dict)
    total_resource: Resource = field(default_factory=Resource)
    has_snapshot: bool = False
    release: Release = field(default_factory=lambda: Release.of(NEWEST_STABLE_VERSION))
    now: Callable[[], datetime] = utc_now
    """The wall clock (injectable in tests); sla and cdp compare against it."""
    clamped: Callable[[str, str], None] = _ignore_clamp
    """``clamped(plugin, resource)``: the plugin's accounting of ``resource`` would have gone
    negative and was floored at zero (see ``plugins.support.resources.sub_clamped_in_place``).
    The server logs it once per plugin and resource and counts it in
    ``caldera_resource_clamped_total``."""


@runtime_checkable
class Background(Protocol):
    """Long-lived work a plugin needs across sessions, such as pdb's PodDisruptionBudget watch.

    Created once per configured plugin entry when the server starts, started in the app's
    lifespan, handed to every session's plugin instance, and stopped on shutdown.
    """

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def ready(self) -> bool:
        """True once the data it provides can be trusted (``/readyz`` waits for it)."""
        ...

    def describe(self) -> dict[str, Any]:
        """A small JSON-able status for ``/readyz`` and ``/debug/session``."""
        ...


EvictResult = tuple[Sequence[TaskInfo], Vote]
"""``(victims, vote)``: victims must be elements of the evictees the hook received."""


@dataclass(frozen=True)
class Upstream:
    """What a plugin ports: the upstream ``repository`` (GitHub owner/name), the ``files`` it
    follows (paths in that repository), the ``commit`` it was ported at, and the ``releases``
    whose in-tree plugin it answers as. The module docstring says the same at length;
    tests/plugins/api/test_registry.py keeps the two in step."""

    repository: str
    files: tuple[str, ...]
    commit: str
    releases: str


class Plugin:
    """Base class of every Caldera plugin.

    Subclasses set ``name`` (the name used in the tiers), parse their arguments in ``__init__``
    with the getters of :class:`~plugins.api.arguments.Arguments`, and override the hooks they
    implement. ``needs_snapshot`` marks plugins that read the onSessionOpen snapshot: with no
    open session they abstain (or pass) instead of answering from nothing.
    ``in_tree_only`` lists the upstream hooks the extender protocol cannot carry, for the docs.
    ``requires_verbs`` lists the verbs without which the plugin would answer wrongly (state
    kept from allocate/deallocate events, say): configuring it for a release that cannot send
    them is a configuration error, and ``caldera volcano-config`` always enables them. A plugin
    whose need depends on the release overrides :meth:`required_verbs`. ``ported_from`` is the
    first release whose upstream plugin the port follows (a row of ``release.CHANGES``); an
    older release is refused, since its in-tree plugin would decide differently. ``upstream``
    names what the plugin ports (every built-in declares it; a plugin of its own may not).
    ``on_error`` (:class:`OnError`) is what a fault of the plugin (an exception, a wrong type, a call over its
    time budget) does when its tiers entry sets no ``onError``: ``"fail"`` answers the verb
    with an error, ``"abstain"`` drops only this plugin's answer (``app/plugin_faults.py``).
    ``"fail"`` unless dropping the answer is safe: a plugin that protects pods from eviction
    or jobs from admission must fail, since without its answer the others' decide.
    ``snapshot_only`` says why the plugin's session state cannot come from the cluster (what it
    reads is in Volcano's snapshot only): ``sessionState: cluster`` refuses the plugin with that
    reason; None, the default, when the derived state carries everything it reads.
    """

    name: ClassVar[str] = ""
    needs_snapshot: ClassVar[bool] = False
    in_tree_only: ClassVar[tuple[str, ...]] = ()
    requires_verbs: ClassVar[tuple[str, ...]] = ()
    ported_from: ClassVar[Change | None] = None
    upstream: ClassVar[Upstream | None] = None
    on_error: ClassVar[OnError | Literal["fail", "abstain"]] = OnError.FAIL
    """:class:`OnError`; the plain strings ``"fail"`` and ``"abstain"`` are accepted too (a
    ``StrEnum`` equals its value), for plugins written before the enum."""
    snapshot_only: ClassVar[str | None] = None

    @classmethod
    def required_verbs(cls, release: Release) -> tuple[str, ...]:
        """The verbs this plugin needs when ``release`` calls (``requires_verbs`` by default)."""
        return cls.requires_verbs

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        self.arguments = arguments
        self.background = background

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        """Problems Volcano's getter rules cannot absorb, by argument name (argument key to
        message): an unknown choice, a missing companion argument. Any makes the configuration
        invalid (exit 2 at startup); a mere wrong type keeps the default with a warning, as in
        Volcano. An answer of another type, or an exception, is a configuration error naming
        the plugin."""
        return {}

    @classmethod
    def path_problems(cls, arguments: Arguments) -> dict[str, str]:
        """Files the plugin will read that do not exist on this machine (argument key to
        problem). Not configuration errors: a file may exist only where the configuration is
        deployed (a ConfigMap mount); ``check-config`` warns, ``serve`` logs an error."""
        return {}

    @classmethod
    def create_background(cls, arguments: Arguments) -> Background | None:
        """Return the plugin's long-lived helper, if it needs one (called once at startup)."""
        return None

    def hooks(self) -> frozenset[str]:
        """The extension points this instance implements: by default every overridden hook."""
        return implemented_hooks(type(self))

    # --- lifecycle -------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        """Called once per session, in tier order, before any verb of that session."""

    def on_session_close(self) -> None:
        """Called when the session ends."""

    # --- extension points: override the ones the plugin implements ------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """``PredicateFn``: None when ``task`` fits ``node``."""
        raise NotImplementedError

    def node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """``BatchNodeOrderFn``: scores added to the other plugins' per node (missing = 0).
        By default, :meth:`node_score` of each node."""
        score = self.node_score
        return {node.Name: score(task, node) for node in nodes}

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """``NodeOrderFn``: the score of one node. Override this or :meth:`node_order`."""
        raise NotImplementedError

    # A hook may wrap its answer in Explained (plugins/api/reasons.py) to say why.

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> EvictResult | Explained[EvictResult]:
        """``PreemptableFn``: which preemptees may be evicted for ``preemptor``."""
        raise NotImplementedError

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> EvictResult | Explained[EvictResult]:
        """``ReclaimableFn``: which reclaimees may be evicted for ``reclaimer``."""
        raise NotImplementedError

    def job_enqueueable(self, job: JobInfo) -> Vote | Explained[Vote]:
        """``JobEnqueueableFn``: may ``job`` move from Pending to Inqueue."""
        raise NotImplementedError

    def job_enqueued(self, job: JobInfo) -> None:
        """``JobEnqueuedFn``: ``job`` was admitted; account for it within the session."""
        raise NotImplementedError

    def overused(self, queue: QueueInfo) -> bool | Explained[bool]:
        """``OverusedFn``: true skips the queue."""
        raise NotImplementedError

    def job_ready(self, job: JobInfo) -> bool | Explained[bool]:
        """``JobReadyFn``: false keeps the job's statement from being committed."""
        raise NotImplementedError

    def allocate(self, task: TaskInfo) -> str | None:
        """``EventHandler.AllocateFunc``: an error message rolls the allocation back."""
        raise NotImplementedError

    def deallocate(self, task: TaskInfo) -> str | None:
        """``EventHandler.DeallocateFunc``: an error message is reported (Volcano ignores it)."""
        raise NotImplementedError


_hook_cache: dict[type[Plugin], frozenset[str]] = {}


def _overrides(cls: type[Plugin], method: str) -> bool:
    return getattr(cls, method) is not getattr(Plugin, method)


def hook_name(cls: type[Plugin], hook: str) -> str:
    """The name of ``hook`` as ``cls``'s author wrote it: ``node_score`` for a plugin that scores
    node by node (the default ``node_order`` asks it), the hook itself otherwise. Messages a
    plugin author reads use it (issue 47 item 9)."""
    if hook == "node_order" and _overrides(cls, "node_score") and not _overrides(cls, hook):
        return "node_score"
    return hook


def implemented_hooks(cls: type[Plugin]) -> frozenset[str]:
    """The extension points ``cls`` takes part in: the hooks it overrides (``node_order`` also
    when only ``node_score`` is)."""
    cached = _hook_cache.get(cls)
    if cached is None:
        hooks = {hook for hook in PLUGIN_HOOKS if _overrides(cls, hook)}
        if _overrides(cls, "node_score"):
            hooks.add("node_order")
        cached = frozenset(hooks)
        _hook_cache[cls] = cached
    return cached
