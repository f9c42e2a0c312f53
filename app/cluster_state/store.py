"""The watched collections in memory, and one frozen view of them per session.

Each collection is listed and watched by the reflector pdb already runs
(``plugins.pdb.kube.Reflector``: resourceVersion carried from the LIST into the WATCH and moved by
every event, a relist from scratch on ``410 Gone``, backoff on other failures), which feeds a
:class:`DecodingStore`: it decodes each object into the compact view the derivation reads
(:mod:`app.cluster_state.objects`) and drops the rest of it.

A session needs one consistent view (plugins keep per-session state; the decision record is per
session), frozen at the session's first call. A freeze is O(1): the store hands out its current
maps and copies a map only when the next event would change it (copy on write), so a session
that starts while nothing changes costs nothing, and a busy one at most one copy per collection.

Each store also logs which keys changed, in order (:class:`ChangeMark`): a freeze marks the
log, and the derivation rebuilds only what changed between two marks
(:mod:`app.cluster_state.incremental`).

A relist (the watch expired with ``410 Gone``, or the reflector reconnected) hands the store the
whole collection again. Most of it has not changed, so the store applies it as the events it
stands for: an object whose ``metadata.uid`` and ``metadata.resourceVersion`` are the ones it
holds keeps its decoded form, unlogged (both are read from the listed mapping before anything is
decoded); a changed one is decoded and logged as an update, a vanished one as a delete, a new one
as an add. The next session then rebuilds only what changed, as after watch events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import msgspec

from app.cluster_state.derive import Derived, Settings
from app.cluster_state.incremental import IncrementalDerivation
from app.cluster_state.objects import (
    ChangeMark,
    ClusterObjects,
    decode_node,
    decode_pod,
    decode_podgroup,
    decode_priority_class,
    decode_queue,
    decode_quota,
)
from app.cluster_state.overlay import AllocationOverlay
from plugins.pdb.kube import ClusterConfig, Reflector, namespaced_collection
from schemas.api import TaskInfo

logger = logging.getLogger("caldera.cluster_state")

T = TypeVar("T")

CHANGE_LOG_MIN = 1024
"""A change log restarts (its readers then compare the views object by object) past this many
entries or twice the collection's size, whichever is more: it stays bounded when no session
reads it."""


def object_version(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """An API object's ``(uid, resourceVersion)``, read from its mapping without decoding it;
    None when it lacks either (then it cannot be told unchanged)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if isinstance(uid, str) and isinstance(version, str) and uid and version:
        return uid, version
    return None


class DecodingStore(Generic[T]):
    """One collection, keyed ``namespace/name`` (or ``name``): the reflector's ``Store``."""

    def __init__(self, name: str, decode: Callable[[Mapping[str, Any]], T]) -> None:
        self.name = name
        self._decode = decode
        self._items: dict[str, T] = {}
        self._shared = False
        """The current map was handed to a frozen view: copy it before the next change."""
        self.undecodable = 0
        self.seen: Callable[[T], None] | None = None
        """Called with every object decoded (what outlives the object's deletion)."""
        self._log: list[tuple[str, bool]] = []
        """Each change since the log (re)started: the key, and whether it is present after."""
        self._versions: dict[str, tuple[str, str]] = {}
        """Each held object's ``(uid, resourceVersion)``, when it had both: what a relist
        compares to keep an unchanged object without decoding it again."""

    def _convert(self, obj: Mapping[str, Any]) -> T | None:
        try:
            value = self._decode(obj)
        except msgspec.ValidationError as exc:  # one malformed object must not hide the others
            self.undecodable += 1
            logger.error("%s: skipping an undecodable object: %s", self.name, exc)
            return None
        if self.seen is not None:
            self.seen(value)
        return value

    def _writable(self) -> dict[str, T]:
        if self._shared:
            self._items = dict(self._items)
            self._shared = False
        return self._items

    def _logged(self, key: str, present: bool) -> None:
        if len(self._log) >= max(CHANGE_LOG_MIN, 2 * len(self._items)):
            self._log = []  # a new list: a mark on the old one no longer reaches now
        self._log.append((key, present))

    def replace(self, items: Mapping[str, Mapping[str, Any]]) -> None:
        """A (re)list: the collection is now ``items``. Applied as the changes it stands for,
        so an unchanged object is neither decoded nor logged (see the module's docstring);
        the held objects keep their order, new ones come last (as watch events would leave
        them)."""
        versions = self._versions
        for key, obj in items.items():
            version = object_version(obj)
            if version is not None and versions.get(key) == version:
                continue  # the object this store holds: nothing to decode, nothing changed
            self.upsert(key, obj, version)
        gone = [key for key in self._items if key not in items]
        for key in gone:
            self.delete(key)

    def upsert(
        self, key: str, obj: Mapping[str, Any], version: tuple[str, str] | None = None
    ) -> None:
        value = self._convert(obj)
        if value is None:
            self._versions.pop(key, None)
            self._writable().pop(key, None)  # what the object was before is no longer true
            self._logged(key, False)
            return
        version = version or object_version(obj)
        if version is None:
            self._versions.pop(key, None)
        else:
            self._versions[key] = version
        self._writable()[key] = value
        self._logged(key, True)

    def delete(self, key: str) -> None:
        self._versions.pop(key, None)
        if key in self._items:
            self._writable().pop(key)
            self._logged(key, False)

    def freeze(self) -> Mapping[str, T]:
        self._shared = True
        return MappingProxyType(self._items)

    def mark(self) -> ChangeMark:
        """Where the change log stands: taken with :meth:`freeze`, it says what changed
        between two frozen views."""
        return ChangeMark(self._log, len(self._log))

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class Collection:
    """A watched collection: API group, version, kind and plural (cluster-scoped ones are
    listed through the same all-namespaces path, which has no namespace segment)."""

    group: str
    version: str
    kind: str
    plural: str


COLLECTIONS = {
    "pods": Collection("", "v1", "Pod", "pods"),
    "nodes": Collection("", "v1", "Node", "nodes"),
    "podgroups": Collection("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),
    "queues": Collection("scheduling.volcano.sh", "v1beta1", "Queue", "queues"),
    "quotas": Collection("", "v1", "ResourceQuota", "resourcequotas"),
    "priority_classes": Collection("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses"),
}
"""What Volcano's cache informs on for the snapshot (cache.go ``addEventHandler``), which
vc-scheduler's ClusterRole already lets it list and watch."""


class ClusterStore:
    """The six collections, the allocate/deallocate overlay, and the per-session view."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.pods = DecodingStore("pods", decode_pod)
        self.nodes = DecodingStore("nodes", decode_node)
        self.podgroups = DecodingStore("podgroups", decode_podgroup)
        self.queues = DecodingStore("queues", decode_queue)
        self.quotas = DecodingStore("resourcequotas", decode_quota)
        self.priority_classes = DecodingStore("priorityclasses", decode_priority_class)
        self.overlay = AllocationOverlay()
        self.derivation = IncrementalDerivation(self.settings)
        """Each session's state, rebuilt from the previous one's where objects changed."""
        self._quota_namespaces: set[str] = set()
        """Every namespace a quota was seen in since the start (``ClusterObjects``)."""
        self.quotas.seen = lambda quota: self._quota_namespaces.add(quota.namespace)

    def stores(self) -> dict[str, DecodingStore[Any]]:
        return {name: getattr(self, name) for name in COLLECTIONS}

    def freeze(self) -> ClusterObjects:
        """One consistent view of every collection as of now, with the marks of the change
        logs at that moment."""
        stores = self.stores()
        return ClusterObjects(
            quota_namespaces=frozenset(self._quota_namespaces),
            pods=self.pods.freeze(),
            nodes=self.nodes.freeze(),
            podgroups=self.podgroups.freeze(),
            queues=self.queues.freeze(),
            quotas=self.quotas.freeze(),
            priority_classes=self.priority_classes.freeze(),
            marks={name: store.mark() for name, store in stores.items()},
        )

    def open_session(self) -> Derived:
        """Freeze, derive with the committed placements (incrementally: what the previous
        session derived is reused where nothing changed), and forget those the cluster shows."""
        derived = self.derivation.derive(self.freeze(), self.overlay.placements())
        self.overlay.settle(derived.settled)
        return derived

    def allocate(self, task: TaskInfo) -> None:
        self.overlay.allocate(task)

    def deallocate(self, task: TaskInfo) -> None:
        self.overlay.deallocate(task)

    def close_session(self) -> None:
        self.overlay.close_session()

    def reflectors(
        self,
        load_config: Callable[[], ClusterConfig],
        on_error: Callable[[str, str], None] | None = None,
    ) -> list[Reflector[Any]]:
        """One reflector per collection; each object reaches its store as a plain dict.
        ``on_error`` is told (collection, kind) of each failure."""
        return [
            Reflector(
                resource=namespaced_collection(c.group, c.version, c.kind, c.plural),
                decode=dict,
                store=self.stores()[name],
                load_config=load_config,
                on_error=on_error,
            )
            for name, c in COLLECTIONS.items()
        ]

    def sizes(self) -> dict[str, int]:
        return {name: len(store) for name, store in self.stores().items()}
