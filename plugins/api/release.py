"""The Volcano release that calls Caldera, asked by name rather than by version tuples.

One Caldera process serves one scheduler, so the release is fixed by ``volcanoVersion`` and
built once. The wire rules (which verbs exist, the predicate answer's shape, the 1.6–1.7 shared
URL) are its properties; every behaviour a plugin or a payload shape changed in some release is
one row of :data:`CHANGES`, asked as ``release.has(CDP_RECLAIMABLE)``. Nothing else compares
version numbers (``tests/plugins/api/test_release_changes.py`` checks the plugins and app). When
Volcano ships a release, docs/new-volcano-release.md says what to touch.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from plugins.api.extension_points import BY_VERB, Verb


class PredicateShape(StrEnum):
    """The predicate answer's JSON shape (protocol reference §3.2)."""

    ERROR_MESSAGE = "errorMessage"
    """1.6–1.7: ``{"errorMessage": "..."}``."""
    STATUS_LIST = "status-list"
    """1.8–1.9: ``{"status": [{"Code": n, "Reason": "..."}]}``."""
    STATUS_CODE = "status-code"
    """1.10 and later: ``{"status": "...", "code": n}``."""


SHARED_RECLAIMABLE_PATH_VERBS = (Verb.JOB_ENQUEUEABLE, Verb.QUEUE_OVERUSED)
"""Verbs that 1.6–1.7 post to the reclaimable verb's URL, told apart by their body."""


@dataclass(frozen=True, slots=True)
class Release:
    """A Volcano release line such as 1.15, or one patch release of it such as 1.14.1.

    ``patch`` is None for an unqualified ``volcanoVersion: "1.15"``: the newest patch release of
    that line, so fixes backported to it apply. Naming the patch matters only where Volcano
    changed behaviour in a patch release (``has_change``)."""

    major: int
    minor: int
    patch: int | None = None

    @classmethod
    def of(cls, version: tuple[int, int] | tuple[int, int, int]) -> Release:
        return cls(*version)

    @property
    def version(self) -> tuple[int, int]:
        """The release line, ``(major, minor)``: what the wire protocol depends on."""
        return (self.major, self.minor)

    @property
    def name(self) -> str:
        line = f"{self.major}.{self.minor}"
        return line if self.patch is None else f"{line}.{self.patch}"

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        """Whether this release is ``major.minor.patch`` or newer (a line without a patch is
        its newest patch release)."""
        if self.version != (major, minor):
            return self.version > (major, minor)
        return self.patch is None or self.patch >= patch

    def has_change(self, *first: tuple[int, int, int]) -> bool:
        """Whether this release has a change that first shipped in each listed patch release
        (the newest line's, plus backports to older lines): every later line has it, an older
        listed line from that patch on, an unlisted older line not at all."""
        newest = max(first)
        if self.version > newest[:2]:
            return True
        return any(
            self.version == (major, minor) and self.at_least(major, minor, patch)
            for major, minor, patch in first
        )

    def has(self, change: Change) -> bool:
        """Whether this release behaves as ``change`` describes (a row of :data:`CHANGES`)."""
        return self.has_change(*change.first)

    def has_verb(self, verb: str) -> bool:
        """Whether this release's extender plugin can send ``verb`` (on its own URL or, for
        1.6–1.7, on the reclaimable verb's)."""
        point = BY_VERB.get(verb)
        return point is not None and self.at_least(*point.since)

    @property
    def predicate_shape(self) -> PredicateShape:
        if not self.at_least(1, 8):
            return PredicateShape.ERROR_MESSAGE
        if not self.at_least(1, 10):
            return PredicateShape.STATUS_LIST
        return PredicateShape.STATUS_CODE

    @property
    def shares_reclaimable_path(self) -> bool:
        """1.6–1.7 post jobEnqueueable and queueOverused bodies to the reclaimable verb (and to
        the bare prefix when ``reclaimableVerb`` is empty)."""
        return not self.at_least(1, 8)

    @property
    def has_managed_resources(self) -> bool:
        """``extender.managedResources`` exists from 1.13."""
        return self.at_least(1, 13)

    @property
    def admission_follows_vote(self) -> bool:
        """Whether an admitted job is announced by a jobEnqueued call. When not (before 1.16),
        the framework tells the plugins itself right after a vote that was not a Reject: that is
        exactly when Volcano's enqueue action admits the job and calls ``JobEnqueued`` in-tree."""
        return self.has_verb(Verb.JOB_ENQUEUED)

    @property
    def is_stable(self) -> bool:
        """Whether this release has a stable (non-alpha) tag."""
        return self.version <= NEWEST_STABLE_VERSION

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Change:
    """A behaviour Volcano changed: what it is, the first release(s) carrying it, and where."""

    what: str
    first: tuple[tuple[int, int, int], ...]
    """The first patch release of the newest line with it, plus each backport to an older line
    (``Release.has_change``): ``((1, 15, 1), (1, 14, 3))``; one entry for a new line's change."""
    upstream: str
    """The upstream commit or file that made the change, for a reader checking it."""

    @property
    def since(self) -> tuple[int, int]:
        """The oldest release line that carries the change (the bound a wire key or shape puts
        on the release that sent it: the line before does not have it)."""
        return min(self.first)[:2]

    @property
    def before(self) -> tuple[int, int]:
        """The newest release line without the change (the line before :attr:`since`)."""
        major, minor = self.since
        return (major, minor - 1)


ARGUMENTS_PARSE_BOOL_STRINGS = Change(
    "framework.Arguments.GetBool parses a string value with strconv.ParseBool (before: a"
    " string is ignored with a warning and the default stays)",
    ((1, 15, 0),),
    "volcano 5ba79f316, pkg/scheduler/framework/arguments.go (v1.15.0)",
)
NODEGROUP_AS_PORTED = Change(
    "nodegroup as Caldera ports it: strict, enableHierarchy, the affinity sets of"
    " initQueueAttrs (v1.9-v1.12 ship an earlier plugin that decides differently)",
    ((1, 13, 0),),
    "volcano pkg/scheduler/plugins/nodegroup/nodegroup.go, v1.13.0 (rewritten since v1.12)",
)
USAGE_AS_PORTED = Change(
    "usage as Caldera ports it: its predicate fails with an api.FitError carrying the status"
    " (v1.6-v1.9 return statuses and an error of their own)",
    ((1, 10, 0),),
    "volcano pkg/scheduler/plugins/usage/usage.go, v1.10.0 (unchanged to v1.15.1)",
)
CDP_RECLAIMABLE = Change(
    "cdp registers a ReclaimableFn (before, it protected pods from preemption only)",
    ((1, 12, 0),),
    "volcano pkg/scheduler/plugins/cdp/cdp.go, v1.12.0",
)
NESTED_OBJECT_SHAPE = Change(
    "PodGroup and Queue marshal as metadata/spec/status (before: flattened ObjectMeta and"
    " untagged Spec/Status; schemas/legacy.py)",
    ((1, 14, 0),),
    "volcano pkg/scheduler/api/job_info.go, queue_info.go, v1.14.0",
)
QUEUE_ALLOCATION_GATE_NOT_GATED = Change(
    "a task whose only scheduling gate is scheduling.volcano.sh/queue-allocation-gate is not"
    " deducted as gated (HasOnlyVolcanoSchedulingGate)",
    ((1, 15, 0),),
    "volcano pkg/scheduler/api/job_info.go DeductSchGatedResources, v1.15.0",
)
OVERCOMMIT_SCALAR_MILLI_UNITS = Change(
    "overcommit reserves a Running job's scalar resources (GPUs) in milli-units and its pods"
    " (before: whole units compared with milli-unit allocations, no pods)",
    ((1, 15, 1), (1, 14, 3)),
    "volcano e945225f3 (v1.15.1), backported as f3f05e2a6 (v1.14.3)",
)
NODEGROUP_PREFERRED_ORDER = Change(
    "nodegroup's enablePreferredOrder argument and job-not-found predicate",
    ((1, 15, 0),),
    "volcano 0a56ed331, pkg/scheduler/plugins/nodegroup/nodegroup.go",
)
NODEGROUP_RESOURCE_LIMITS = Change(
    "nodegroup's per-group resource limits (volcano.sh/nodegroup-resource-limits) and the"
    " allocate/deallocate accounting of each queue's use per group",
    ((1, 16, 0),),
    "volcano f3a1bf1ff 'feat: add nodegroup resource limits' (v1.16.0-alpha.0)",
)
RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED = Change(
    "resourcequota records an admitted job's usage in JobEnqueued (before: in its enqueueable"
    " vote)",
    ((1, 16, 0),),
    "volcano 5be98af37 (v1.16.0-alpha.0)",
)
USAGE_ESTIMATOR = Change(
    "usage's load estimator: shadow load of pods placed since the last sample, composite"
    " utilization, estimator arguments, allocate/deallocate handlers",
    ((1, 16, 0),),
    "volcano 895281e64 'Enhancement of Usage-Based Scheduling' (v1.16.0-alpha.0)",
)
NODE_CAPACITY_KEY = Change(
    "NodeInfo marshals the node's capacity as Capacity (before: Capability)",
    ((1, 8, 0),),
    "volcano pkg/scheduler/api/node_info.go, v1.8.0 (protocol reference, NodeInfo)",
)
TASK_ROLE_FIELD = Change(
    "TaskInfo marshals TaskRole (and EvictionOccurred, HasRestartableInitContainer, SchGated)",
    ((1, 10, 0),),
    "volcano pkg/scheduler/api/job_info.go TaskInfo, v1.10.0 (protocol reference §3.4)",
)
TASK_JOB_ALLOCATED_HYPERNODE_FIELD = Change(
    "TaskInfo marshals JobAllocatedHyperNode (and no longer PodVolumes)",
    ((1, 12, 0),),
    "volcano pkg/scheduler/api/job_info.go TaskInfo, v1.12.0 (protocol reference §3.4)",
)
TASK_DRA_RESREQ_FIELD = Change(
    "TaskInfo marshals DRAResreq, ResourceClaimKeys and ResourceClaimDRAResreq",
    ((1, 15, 0),),
    "volcano pkg/scheduler/api/job_info.go TaskInfo, v1.15.0 (protocol reference §3.4)",
)
TASK_POD_ANNOTATIONS_FIELD = Change(
    "TaskInfo marshals PodAnnotations",
    ((1, 16, 0),),
    "volcano pkg/scheduler/api/job_info.go TaskInfo, v1.16.0-alpha.0 (protocol reference §3.4)",
)
NODE_SHARDING = Change(
    "vc-scheduler has --scheduler-sharding-mode (none, hard, soft) and --scheduler-sharding-name,"
    " and watches NodeShards (shard.volcano.sh/v1alpha1) in hard and soft mode",
    ((1, 14, 0),),
    "volcano cmd/scheduler/app/options/options.go, pkg/scheduler/cache/shard_coordinator.go"
    " (v1.14.0)",
)

CHANGES: tuple[Change, ...] = (
    NODE_CAPACITY_KEY,
    TASK_ROLE_FIELD,
    USAGE_AS_PORTED,
    TASK_JOB_ALLOCATED_HYPERNODE_FIELD,
    CDP_RECLAIMABLE,
    NODEGROUP_AS_PORTED,
    ARGUMENTS_PARSE_BOOL_STRINGS,
    NESTED_OBJECT_SHAPE,
    NODE_SHARDING,
    QUEUE_ALLOCATION_GATE_NOT_GATED,
    TASK_DRA_RESREQ_FIELD,
    OVERCOMMIT_SCALAR_MILLI_UNITS,
    NODEGROUP_PREFERRED_ORDER,
    NODEGROUP_RESOURCE_LIMITS,
    TASK_POD_ANNOTATIONS_FIELD,
    RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED,
    USAGE_ESTIMATOR,
)
"""Every per-release behaviour Caldera follows, oldest first. A new one is a row here and a
``release.has(ROW)`` where it matters, with a unit test for a release on each side."""


SUPPORTED_VERSIONS: tuple[tuple[int, int], ...] = tuple((1, minor) for minor in range(6, 17))
"""The extender protocol exists from 1.6; 1.16 exists only as alpha tags (v1.16.0-alpha.0/1)."""
NEWEST_STABLE_VERSION = (1, 15)
"""The release assumed when ``volcanoVersion`` is not set: the newest stable one (v1.15.1).
Alpha releases are served only when named explicitly."""
