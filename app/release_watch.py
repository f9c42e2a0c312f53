"""Noticing when what arrives contradicts the configured ``volcanoVersion`` — or, with
``volcanoVersion: auto``, inferring the release from it.

The release decides answers, not only the wire shape: configured for 1.16, overcommit and
resourcequota wait for jobEnqueued calls that a 1.15 scheduler never sends, and admit more than
the in-tree plugins would. So Caldera watches for evidence of another release and says so loudly:
an error log line once per session and signal, ``caldera_release_mismatch_total{signal}``, and
the latest evidence in ``/readyz``. It keeps answering as configured.

Each signal is one row: what was seen, and which releases it proves. With ``auto`` the same rows
are bounds: every key, shape and verb narrows the releases that could have sent the body, and
Caldera follows the oldest of them (the older behaviour, said in the log and ``/debug/session``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.metrics import Metrics
from plugins.api.extension_points import BY_VERB
from plugins.api.release import (
    NESTED_OBJECT_SHAPE,
    NODE_CAPACITY_KEY,
    SUPPORTED_VERSIONS,
    TASK_DRA_RESREQ_FIELD,
    TASK_JOB_ALLOCATED_HYPERNODE_FIELD,
    TASK_POD_ANNOTATIONS_FIELD,
    TASK_ROLE_FIELD,
    Change,
    Release,
)
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.release")


@dataclass(frozen=True, slots=True)
class TaskField:
    """A ``TaskInfo`` key that Volcano's ``json.Marshal`` writes from ``change`` on (a row of
    the release table, plugins/api/release.py)."""

    key: str
    change: Change

    @property
    def since(self) -> tuple[int, int]:
        return self.change.since

    @property
    def needle(self) -> bytes:
        return f'"{self.key}":'.encode()


TASK_FIELDS: tuple[TaskField, ...] = (
    TaskField("PodAnnotations", TASK_POD_ANNOTATIONS_FIELD),
    TaskField("DRAResreq", TASK_DRA_RESREQ_FIELD),
    TaskField("JobAllocatedHyperNode", TASK_JOB_ALLOCATED_HYPERNODE_FIELD),
    TaskField("TaskRole", TASK_ROLE_FIELD),
)
"""Protocol reference §3.4: fields added to ``TaskInfo`` by a release (never removed since)."""

TASK_MARKER = b'"Resreq":'
"""Written for every task by every release: a window holding it holds a whole task's keys."""

PROBE_WINDOW = 256 << 10
"""How much of an onSessionOpen body is searched for task keys: the jobs come first, so the
first task is within it in any cluster that has one. Searching 75 MiB would cost tens of ms."""


def first_task_keys(body: bytes | bytearray) -> frozenset[str] | None:
    """Which of :data:`TASK_FIELDS` the first task in ``body`` carries; None when the start of
    the body holds no task."""
    window = bytes(body[:PROBE_WINDOW])
    start = window.find(TASK_MARKER)
    if start < 0:
        return None
    # The keys of one TaskInfo surround its Resreq; look at a stretch around it.
    task = window[max(0, start - 4096) : start + 16384]
    return frozenset(spec.key for spec in TASK_FIELDS if spec.needle in task)


def task_fields_signals(body: bytes | bytearray, release: Release) -> list[tuple[str, str]]:
    """Signals from the keys of the first task in ``body``: a key the configured release cannot
    write, or a key it always writes that is missing."""
    keys = first_task_keys(body)
    if keys is None:
        return []
    found: list[tuple[str, str]] = []
    for spec in TASK_FIELDS:
        present = spec.key in keys
        expected = release.has(spec.change)
        if present and not expected:
            found.append(
                (
                    "task_field_from_newer_release",
                    f"tasks carry {spec.key}, which Volcano writes only from"
                    f" {spec.since[0]}.{spec.since[1]}",
                )
            )
        elif expected and not present:
            found.append(
                (
                    "task_field_missing",
                    f"tasks lack {spec.key}, which Volcano {release} always writes (a release"
                    f" before {spec.since[0]}.{spec.since[1]} is calling)",
                )
            )
    return found


def nested_objects(request: OnSessionOpenRequest) -> bool | None:
    """Whether PodGroup and Queue objects come in the 1.14+ ``metadata/spec/status`` shape
    (False: the flattened shape of 1.13 and before; None: no object to tell)."""
    for job in (request.Jobs or {}).values():
        pg = job.PodGroup
        if pg is not None and (pg.Spec is not None or pg.metadata.name):
            return pg.Spec is None
    for queue in (request.Queues or {}).values():
        q = queue.Queue
        if q is not None and (q.Spec is not None or q.metadata.name):
            return q.Spec is None
    return None


def node_capacity_key(request: OnSessionOpenRequest) -> str | None:
    """``Capability`` (1.6–1.7) or ``Capacity`` (1.8 on): what the nodes' capacity is called."""
    for node in (request.Nodes or {}).values():
        if node.Capability is not None:
            return "Capability"
        if node.Capacity is not None:
            return "Capacity"
    return None


def infer_release(
    body: bytes | bytearray, request: OnSessionOpenRequest
) -> tuple[tuple[int, int], tuple[int, int], list[str]] | None:
    """The oldest and newest release that could have sent this snapshot, and the evidence;
    None when the snapshot holds nothing that tells (no task, node, PodGroup or Queue)."""
    low, high = SUPPORTED_VERSIONS[0], SUPPORTED_VERSIONS[-1]
    evidence: list[str] = []
    keys = first_task_keys(body)
    if keys is not None:
        for spec in TASK_FIELDS:
            if spec.key in keys:
                low = max(low, spec.since)
                evidence.append(f"tasks carry {spec.key}")
            else:
                high = min(high, spec.change.before)
    nested = nested_objects(request)
    if nested is not None:
        if nested:
            low = max(low, NESTED_OBJECT_SHAPE.since)
        else:
            high = min(high, NESTED_OBJECT_SHAPE.before)
        evidence.append("PodGroup/Queue " + ("nested" if nested else "flattened"))
    capacity = node_capacity_key(request)
    if capacity == "Capability":
        high = min(high, NODE_CAPACITY_KEY.before)
    elif capacity == "Capacity":
        low = max(low, NODE_CAPACITY_KEY.since)
    if capacity is not None:
        evidence.append(f"nodes carry {capacity}")
    if not evidence:
        return None
    if low > high:  # contradictory evidence: trust the newest thing seen
        high = low
    return low, high, evidence


def object_shape_signals(request: OnSessionOpenRequest, release: Release) -> list[tuple[str, str]]:
    """PodGroup and Queue changed JSON shape in 1.14: flattened ``ObjectMeta`` and untagged
    ``Spec``/``Status`` before, ``metadata``/``spec``/``status`` from it."""
    nested_expected = release.has(NESTED_OBJECT_SHAPE)
    found: list[tuple[str, str]] = []
    for job in (request.Jobs or {}).values():
        pg = job.PodGroup
        if pg is None or not (pg.Spec is not None or pg.metadata.name):
            continue
        flattened = pg.Spec is not None
        if flattened == nested_expected:
            found.append(_shape_signal("PodGroup", flattened, release))
        break  # every PodGroup of one snapshot has the same shape
    for queue in (request.Queues or {}).values():
        q = queue.Queue
        if q is None or not (q.Spec is not None or q.metadata.name):
            continue
        flattened = q.Spec is not None
        if flattened == nested_expected:
            found.append(_shape_signal("Queue", flattened, release))
        break
    return found


def _shape_signal(kind: str, flattened: bool, release: Release) -> tuple[str, str]:
    if flattened:
        return (
            f"{kind.lower()}_shape",
            f"{kind} objects arrive in the flattened shape of Volcano 1.13 and earlier, but"
            f" volcanoVersion is {release}",
        )
    return (
        f"{kind.lower()}_shape",
        f"{kind} objects arrive in the metadata/spec/status shape of Volcano 1.14 and later,"
        f" but volcanoVersion is {release}",
    )


def verb_signal(verb: str, release: Release) -> tuple[str, str] | None:
    """A call of a verb the configured release cannot send."""
    if release.has_verb(verb):
        return None
    return (
        f"{verb}_verb",
        f"Volcano sent {verb}, which Volcano {release} cannot send: a newer release is calling",
    )


@dataclass
class ReleaseWatch:
    """Collects the signals, logs each once per session, counts every one. With ``infer`` it
    infers the release instead, and reports what it inferred."""

    release: Release
    metrics: Metrics
    infer: bool = False
    evidence: dict[str, str] = field(default_factory=dict)
    """The latest detail per signal, for ``/readyz``."""
    inferred: str = ""
    """With ``infer``: what the release was inferred from, for ``/debug/session``."""
    _logged: set[str] = field(default_factory=set)
    _verb_floor: tuple[int, int] = SUPPORTED_VERSIONS[0]

    def new_session(self) -> None:
        self._logged.clear()

    def report(self, signal: str, detail: str) -> None:
        self.evidence[signal] = detail
        self.metrics.release_mismatch.labels(signal).inc()
        if signal not in self._logged:
            self._logged.add(signal)
            logger.error(
                "release mismatch (%s): %s; set volcanoVersion to the release you run,"
                " Caldera keeps answering as %s",
                signal,
                detail,
                self.release,
            )

    def check_session(self, body: bytes | bytearray, request: OnSessionOpenRequest) -> Release:
        """Look at a new session's snapshot; returns the release to answer it as."""
        self.new_session()
        if self.infer:
            return self._infer(body, request)
        for signal, detail in task_fields_signals(body, self.release):
            self.report(signal, detail)
        for signal, detail in object_shape_signals(request, self.release):
            self.report(signal, detail)
        return self.release

    def check_verb(self, verb: str) -> Release:
        """Look at a call of ``verb``; returns the release to answer it as."""
        if self.release.has_verb(verb):
            return self.release
        since = BY_VERB[verb].since
        if self.infer:
            # The open session's plugins keep their release; the wire follows at once.
            self._verb_floor = max(self._verb_floor, since)
            self._adopt(
                Release.of(since), f"Volcano sent {verb}, which exists from {since[0]}.{since[1]}"
            )
            return self.release
        found = verb_signal(verb, self.release)
        if found is not None:
            self.report(*found)
        return self.release

    def _infer(self, body: bytes | bytearray, request: OnSessionOpenRequest) -> Release:
        found = infer_release(body, request)
        if found is None:
            return self.release  # an empty snapshot tells nothing: keep what was known
        low, high, evidence = found
        low = max(low, self._verb_floor)  # a verb seen earlier may prove more (allocate: 1.13)
        high = max(high, low)
        why = ", ".join(evidence)
        if low != high:
            why += (
                f"; Volcano {low[0]}.{low[1]} to {high[0]}.{high[1]} send the same shape, so"
                f" Caldera follows the oldest, {low[0]}.{low[1]}"
            )
        self._adopt(Release.of(low), why)
        return self.release

    def _adopt(self, release: Release, why: str) -> None:
        changed = release != self.release or not self.inferred
        self.release = release
        self.inferred = why
        if changed:
            logger.info("volcanoVersion auto: answering as Volcano %s (%s)", release, why)
