"""Compare mode: every difference between the snapshot Volcano sent and the derived one, in what
the hosted plugins read.

What a plugin can read is exactly what ``schemas.api``/``schemas.k8s`` declare, so the
comparison walks those typed views field by field (the raw ``NodeInfo.Tasks`` bytes through
their decoded property; the v1.6–v1.13 spellings folded into the canonical fields are skipped).
A difference names its kind (``<section>.<field>``: ``job.Allocated``, ``task.Status``,
``node.Idle``; ``<section>.missing`` for an object only Volcano sent, ``<section>.extra`` for one
only the cluster shows), the object, the path below it, and both values. Kinds are bounded by
the schemas' fields, so they can label a metric.

A difference is **in flight** when an object it derives from was seen at another version by each
side (its ``metadata.resourceVersion``), or by one side only: Volcano's snapshot and Caldera's
freeze are two instants, each informer delivers events at its own pace, and an object that
changed between them differs for that reason alone (a pod bound, marked Succeeded or deleted
since Volcano's cache last heard of it, or before Caldera's watch did). A task derives from its
pod; a job from its PodGroup and its tasks; a node from the Node and the tasks on it; a queue
from the Queue; a namespace's quotas from the pods of the namespace (the API server's quota
admission moves ``used`` as they come and go). A difference that is not in flight is one both
sides saw the same objects for: the derivation's. At quiescence every object is at one version
on both sides, so nothing is in flight and any difference is the derivation's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from schemas.api import NodeInfo, PodGroup, Queue, TaskInfo
from schemas.k8s import ObjectMeta
from schemas.requests import OnSessionOpenRequest

LEGACY_METADATA = (
    "v1.6-v1.13 flattened key, folded into metadata/spec/status by __post_init__ and compared there"
)
SKIPPED: dict[type, dict[str, str]] = {
    NodeInfo: {
        "TasksRaw": "the node's tasks as raw bytes: compared decoded, as the Tasks property",
        "Capability": "v1.6-v1.7 name of Capacity, folded into it and compared there",
    },
    PodGroup: dict.fromkeys(
        ("name", "namespace", "uid", "creationTimestamp", "labels", "annotations"),
        LEGACY_METADATA,
    )
    | dict.fromkeys(("Spec", "Status"), LEGACY_METADATA),
    Queue: dict.fromkeys(
        ("name", "uid", "creationTimestamp", "labels", "annotations", "Spec", "Status"),
        LEGACY_METADATA,
    ),
    # An object's version bookkeeping: Volcano's informer and Caldera's watch see the same
    # object at versions a few events apart, and no scheduling rule reads them.
    ObjectMeta: {
        "resourceVersion": "version bookkeeping: tells what is in flight, read by no plugin",
        "generation": "version bookkeeping, read by no plugin",
        "managedFieldsRaw": "the API server's field ownership, read by no plugin",
    },
}
"""Every field of the typed views that compare mode does not compare, with the reason: none is
what a plugin reads. Every other field of every view an onSessionOpen body holds is compared
(tests/app/cluster_state/test_compare_fields.py proves each one, and pins this table), and
that is what cluster mode guarantees a plugin (docs/plugin-author-guide.md)."""
_SKIPPED: dict[type, frozenset[str]] = {kind: frozenset(why) for kind, why in SKIPPED.items()}

_EXTRA_FIELDS: dict[type, tuple[str, ...]] = {NodeInfo: ("Tasks",)}


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str
    object: str
    """``namespace/podgroup`` for jobs, ``job/taskUID`` for tasks, the node, queue or namespace."""
    path: str
    """Below the object's field (``.ScalarResources.pods``), empty for the field itself."""
    sent: Any
    derived: Any
    in_flight: bool = False
    """An object it derives from changed between the two instants (module docstring)."""

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "object": self.object,
            "path": self.path,
            "sent": _plain(self.sent),
            "derived": _plain(self.derived),
            "inFlight": self.in_flight,
        }


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value) if value is not None else None


_MISSING = object()


def _fields(obj: msgspec.Struct) -> Iterator[str]:
    skipped = _SKIPPED.get(type(obj), frozenset())
    for name in obj.__struct_fields__:
        if name not in skipped:
            yield name
    yield from _EXTRA_FIELDS.get(type(obj), ())


def _equal_numbers(a: float, b: float) -> bool:
    # Sums taken in another order differ in the last bits; Volcano's own comparisons allow 0.1.
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _walk(sent: Any, derived: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, sent, derived) for every leaf that differs; None and an empty map or list are
    the same to a plugin only where Go writes both (they are not: kept distinct)."""
    if isinstance(sent, msgspec.Raw) and isinstance(derived, msgspec.Raw):
        if sent == derived:  # the same bytes: nothing to decode
            return
        # A field kept as its JSON until read (schemas/lazy.py): compared by its value.
        sent, derived = msgspec.json.decode(sent), msgspec.json.decode(derived)
    if isinstance(sent, msgspec.Struct) and type(sent) is type(derived):
        # Equal structs (msgspec compares every field, in C) hold no difference: the walk
        # below is for finding one, and would find none (its numbers' tolerance only widens
        # equality). Most objects of a session are equal on both sides.
        if sent == derived:
            return
        for name in _fields(sent):
            yield from _walk(getattr(sent, name), getattr(derived, name), f"{path}.{name}")
        return
    if isinstance(sent, Mapping) and isinstance(derived, Mapping):
        for key in sorted(set(sent) | set(derived), key=str):
            yield from _walk(sent.get(key, _MISSING), derived.get(key, _MISSING), f"{path}.{key}")
        return
    if isinstance(sent, list) and isinstance(derived, list) and len(sent) == len(derived):
        for index, (a, b) in enumerate(zip(sent, derived, strict=True)):
            yield from _walk(a, b, f"{path}[{index}]")
        return
    numbers = (int, float)
    if (
        isinstance(sent, numbers)
        and isinstance(derived, numbers)
        and not isinstance(sent, bool)
        and not isinstance(derived, bool)
    ):
        if not _equal_numbers(float(sent), float(derived)):
            yield path, sent, derived
        return
    if sent != derived:
        yield path, None if sent is _MISSING else sent, None if derived is _MISSING else derived


def _object_differences(
    section: str, name: str, sent: msgspec.Struct, derived: msgspec.Struct
) -> Iterator[Difference]:
    if sent == derived:  # before any lazy field (a node's Tasks) is decoded to be walked
        return
    for field in _fields(sent):
        a, b = getattr(sent, field), getattr(derived, field)
        if section == "job" and field == "Tasks":
            yield from _tasks(name, a or {}, b or {})
            continue
        for path, x, y in _walk(a, b, ""):
            yield Difference(f"{section}.{field}", name, path, x, y)


def _tasks(
    job: str, sent: Mapping[str, TaskInfo], derived: Mapping[str, TaskInfo]
) -> Iterator[Difference]:
    yield from _collection("task", sent, derived, prefix=f"{job}/")


def _collection(
    section: str,
    sent: Mapping[str, Any],
    derived: Mapping[str, Any],
    prefix: str = "",
) -> Iterator[Difference]:
    for key in sorted(set(sent) | set(derived)):
        name = prefix + key
        if key not in derived:
            yield Difference(f"{section}.missing", name, "", "present", None)
        elif key not in sent:
            yield Difference(f"{section}.extra", name, "", None, "present")
        else:
            yield from _object_differences(section, name, sent[key], derived[key])


def _version(obj: Any) -> str | None:
    meta = getattr(obj, "metadata", None)
    return meta.resourceVersion if isinstance(meta, ObjectMeta) else None


@dataclass
class _Seen:
    """One side's view, as far as telling what moved needs: each object's version, which tasks
    belong to each job and node, and each task's namespace."""

    tasks: dict[str, str | None]
    task_namespace: dict[str, str]
    job_tasks: dict[str, set[str]]
    node_tasks: dict[str, set[str]]
    jobs: dict[str, str | None]
    nodes: dict[str, str | None]
    queues: dict[str, str | None]

    @classmethod
    def of(cls, snapshot: OnSessionOpenRequest) -> _Seen:
        seen = cls({}, {}, {}, {}, {}, {}, {})
        for uid, job in (snapshot.Jobs or {}).items():
            seen.jobs[uid] = _version(job.PodGroup)
            members = seen.job_tasks.setdefault(uid, set())
            for task in (job.Tasks or {}).values():
                members.add(task.UID)
                seen.tasks[task.UID] = _version(task.Pod)
                seen.task_namespace[task.UID] = task.Namespace
        for name, node in (snapshot.Nodes or {}).items():
            seen.nodes[name] = _version(node.Node)
            members = seen.node_tasks.setdefault(name, set())
            for task in (node.Tasks or {}).values():
                members.add(task.UID)
                seen.tasks.setdefault(task.UID, _version(task.Pod))
                seen.task_namespace[task.UID] = task.Namespace
        for name, queue in (snapshot.Queues or {}).items():
            seen.queues[name] = _version(queue.Queue)
        return seen


def _moved(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> set[str]:
    """Keys on one side only, or at another version on each."""
    return {k for k in set(a) | set(b) if k not in a or k not in b or a[k] != b[k]}


class InFlight:
    """Which objects changed between Volcano's snapshot and Caldera's freeze."""

    def __init__(self, sent: OnSessionOpenRequest, derived: OnSessionOpenRequest) -> None:
        a, b = _Seen.of(sent), _Seen.of(derived)
        self.tasks = _moved(a.tasks, b.tasks)
        self.jobs = _moved(a.jobs, b.jobs) | {
            job
            for side in (a, b)
            for job, members in side.job_tasks.items()
            if members & self.tasks
        }
        self.nodes = _moved(a.nodes, b.nodes) | {
            node
            for side in (a, b)
            for node, members in side.node_tasks.items()
            if members & self.tasks
        }
        self.queues = _moved(a.queues, b.queues)
        self.namespaces = {
            side.task_namespace[uid]
            for side in (a, b)
            for uid in self.tasks
            if uid in side.task_namespace
        } | {job.partition("/")[0] for job in self.jobs}

    def __call__(self, difference: Difference) -> bool:
        section = difference.kind.partition(".")[0]
        name = difference.object
        if section == "task":
            return name.rpartition("/")[2] in self.tasks
        moved = {
            "job": self.jobs,
            "node": self.nodes,
            "queue": self.queues,
            "namespace": self.namespaces,
        }.get(section, set())
        return name in moved


def compare(sent: OnSessionOpenRequest, derived: OnSessionOpenRequest) -> list[Difference]:
    """Every difference, jobs (and their tasks) first, then nodes, queues and namespaces, each
    told whether it is in flight (:class:`InFlight`)."""
    sections: tuple[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None], ...] = (
        ("job", sent.Jobs, derived.Jobs),
        ("node", sent.Nodes, derived.Nodes),
        ("queue", sent.Queues, derived.Queues),
        ("namespace", sent.NamespaceInfo, derived.NamespaceInfo),
    )
    found: list[Difference] = []
    for section, a, b in sections:
        found.extend(_collection(section, a or {}, b or {}))
    if not found:
        return found
    in_flight = InFlight(sent, derived)
    return [replace(d, in_flight=True) if in_flight(d) else d for d in found]


def counts_by_kind(differences: list[Difference], in_flight_only: bool = False) -> dict[str, int]:
    counts: dict[str, int] = {}
    for difference in differences:
        if in_flight_only and not difference.in_flight:
            continue
        counts[difference.kind] = counts.get(difference.kind, 0) + 1
    return counts
