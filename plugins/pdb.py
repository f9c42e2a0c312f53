"""``pdb``: keep preemption and reclaim within the cluster's PodDisruptionBudgets.

Follows ``pkg/scheduler/plugins/pdb/pdb.go`` at Volcano ``ed72c7c81`` (v1.16.0-alpha.1-42); the
file is byte-identical from v1.9.0 (commit ``3165c7820``, where the plugin was added) to that
commit, so there is no version branch. v1.6 to v1.8 have no pdb plugin (Volcano logs "Failed to
get plugin" and skips the entry); hosted by Caldera it behaves as in v1.9. Reference:
plugins-part1.md §6.

The filter (``pdbFilterFn``) is called with the candidate victims and returns those whose
eviction keeps every budget at or above zero:

* budgets start from each PDB's ``status.disruptionsAllowed``, afresh on every call, and are
  consumed in the order the candidates arrive (the order matters);
* a pod without labels is passed over: it is never a victim (an upstream quirk, kept);
* a PDB applies to a pod when it is in the pod's namespace, its selector converts with
  ``metav1.LabelSelectorAsSelector`` (an invalid one makes the PDB ignored), the selector is not
  ``Empty()`` and matches the pod's labels, and the pod is not in ``status.disruptedPods``. A
  null selector is ``labels.Nothing()`` and ``{}`` is ``labels.Everything()``, whose ``Empty()`` is
  true, so both match nothing (unlike policy/v1, where ``{}`` selects the whole namespace);
* every applicable PDB is decremented, even after another one is already exhausted; one that
  goes below zero makes the pod a non-victim.

``preemptable`` and ``reclaimable`` both answer ``(filter(candidates), Permit)``: an empty answer
therefore ends the tier with no victims, as upstream.

Upstream reads the budgets from client-go's PDB informer on every call. Caldera keeps them in the
plugin's :class:`~plugins.api.base.Background`, chosen by the plugin arguments:

* ``source: kubernetes`` (default): list and watch ``policy/v1`` PodDisruptionBudgets of all
  namespaces (``plugins/support/kube.py``), with the pod's service account or ``kubeconfig: <path>``.
  The service account needs ``list`` and ``watch`` on ``poddisruptionbudgets.policy``.
* ``source: file`` with ``file: <path>``: a YAML or JSON file holding PodDisruptionBudget objects
  (a list, a ``kind: List``/``PodDisruptionBudgetList`` with ``items``, or ``---``-separated
  documents); it is re-read when its modification time or size changes (polled every second).
  An object without ``metadata.namespace`` is in ``default``, as ``kubectl apply`` would put it.
  A file that fails to parse keeps the last good set and is reported in ``/readyz``.

Until the first list or load completes the plugin cannot prove that any disruption is allowed,
so it keeps every candidate (``([], Permit)``). Upstream in that state would read an empty
informer cache and let every labelled pod go; Caldera prefers to protect them, and ``/readyz``
stays false meanwhile. Upstream's feature gate ``PodDisruptionBudgetsSupport`` (default on) has
no equivalent: enabling the plugin here means the budgets are read.

Not carried by the extender: ``AddVictimTasksFns`` (the ``shuffle`` action's victim selection).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml

from plugins.api.arguments import Arguments
from plugins.api.base import Background, EvictResult, Plugin, Vote
from plugins.api.registry import register
from plugins.support.kube import (
    Backoff,
    ClusterConfig,
    Reflector,
    in_cluster_config,
    kubeconfig_config,
)
from schemas.api import TaskInfo
from schemas.k8s import LabelSelector, PodDisruptionBudget

logger = logging.getLogger("caldera.plugins.pdb")

PDB_PATH = "/apis/policy/v1/poddisruptionbudgets"

# --- label selectors (k8s.io/apimachinery: metav1.LabelSelectorAsSelector, labels.Requirement)

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class SelectorError(ValueError):
    """``LabelSelectorAsSelector`` returned an error: the PDB is ignored."""


def _check_key(key: str) -> None:
    """``validation.IsQualifiedName``: ``[prefix/]name``, prefix a DNS-1123 subdomain."""
    parts = key.split("/")
    if len(parts) > 2:
        raise SelectorError(f"invalid label key {key!r}")
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            raise SelectorError(f"invalid label key prefix in {key!r}")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        raise SelectorError(f"invalid label key {key!r}")


def _check_value(key: str, value: str) -> None:
    """``validation.IsValidLabelValue``: empty, or up to 63 alphanumerics, ``-``, ``_``, ``.``."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise SelectorError(f"invalid value {value!r} for label key {key!r}")


@dataclass(frozen=True, slots=True)
class Requirement:
    """``labels.Requirement`` for the operators a LabelSelector can produce."""

    key: str
    operator: str
    """``=`` (from matchLabels), ``in``, ``notin``, ``exists`` or ``!``."""
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "notin":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "exists":
            return self.key in labels
        return self.key not in labels  # "!" (DoesNotExist)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _requirement(key: str, operator: str, values: Sequence[str]) -> Requirement:
    """``labels.NewRequirement``: validates the key, the value count and every value."""
    _check_key(key)
    if operator in ("in", "notin") and not values:
        raise SelectorError(f"{key!r}: 'in' and 'notin' need at least one value")
    if operator == "=" and len(values) != 1:
        raise SelectorError(f"{key!r}: an exact match needs one value")
    if operator in ("exists", "!") and values:
        raise SelectorError(f"{key!r}: 'exists' and 'does not exist' take no values")
    for value in values:
        _check_value(key, value)
    return Requirement(key, operator, frozenset(values))


@dataclass(frozen=True, slots=True)
class Selector:
    """``labels.Selector``: ``Nothing()``, ``Everything()`` or ANDed requirements."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def empty(self) -> bool:
        """``Empty()``: true for ``Everything()`` only (``Nothing()`` is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError` where Go errs."""
    if selector is None:
        return Selector(nothing=True)
    match_labels = selector.matchLabels or {}
    match_expressions = selector.matchExpressions or []
    if not match_labels and not match_expressions:
        return Selector()
    requirements = [_requirement(k, "=", [v]) for k, v in match_labels.items()]
    for expr in match_expressions:
        operator = _OPERATORS.get(expr.operator)
        if operator is None:
            raise SelectorError(f"{expr.operator!r} is not a valid label selector operator")
        requirements.append(_requirement(expr.key, operator, expr.values or []))
    return Selector(tuple(requirements))


# --- budgets --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class CompiledPdb:
    """A PDB that can apply to some pod: its selector converted once, when it arrives.

    Compared by identity: the filter keys its per-call budgets by the object itself.
    """

    namespace: str
    name: str
    selector: Selector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]


def compile_pdb(pdb: PodDisruptionBudget) -> CompiledPdb | None:
    """None for a PDB the filter would always skip (invalid or empty selector)."""
    meta = pdb.metadata
    namespace = meta.namespace if meta else ""
    name = meta.name if meta else ""
    try:
        selector = label_selector_as_selector(pdb.spec.selector if pdb.spec else None)
    except SelectorError as exc:
        logger.warning("PodDisruptionBudget %s/%s is ignored: %s", namespace, name, exc)
        return None
    if selector.empty() or selector.nothing:  # Nothing() is never Matched either
        return None
    status = pdb.status
    return CompiledPdb(
        namespace=namespace,
        name=name,
        selector=selector,
        disruptions_allowed=status.disruptionsAllowed if status else 0,
        disrupted_pods=frozenset(status.disruptedPods or ()) if status else frozenset(),
    )


@dataclass(frozen=True, slots=True)
class PdbSnapshot:
    """An immutable view of the budgets, swapped in whole whenever they change."""

    by_namespace: Mapping[str, tuple[CompiledPdb, ...]]
    count: int
    """How many PDB objects the source holds (including those that can never apply)."""

    @classmethod
    def build(cls, compiled: Iterable[CompiledPdb | None]) -> PdbSnapshot:
        by_namespace: dict[str, list[CompiledPdb]] = {}
        count = 0
        for pdb in compiled:
            count += 1
            if pdb is not None:
                by_namespace.setdefault(pdb.namespace, []).append(pdb)
        return cls({ns: tuple(pdbs) for ns, pdbs in by_namespace.items()}, count)

    @classmethod
    def of(cls, pdbs: Iterable[PodDisruptionBudget]) -> PdbSnapshot:
        return cls.build(compile_pdb(pdb) for pdb in pdbs)


def pdb_filter(tasks: Sequence[TaskInfo], snapshot: PdbSnapshot) -> list[TaskInfo]:
    """``pdbFilterFn``: the tasks that may be evicted, in input order."""
    budgets: dict[CompiledPdb, int] = {}  # only the PDBs this call touches; fresh every call
    victims: list[TaskInfo] = []
    for task in tasks:
        meta = task.Pod.metadata if task.Pod is not None else None
        if meta is None or not meta.labels:
            continue  # upstream: "a pod with no labels will not match any PDB" (never a victim)
        violated = False
        for pdb in snapshot.by_namespace.get(meta.namespace or task.Namespace, ()):
            if not pdb.selector.matches(meta.labels) or meta.name in pdb.disrupted_pods:
                continue  # an already disrupted pod was counted by the disruption controller
            left = budgets.get(pdb, pdb.disruptions_allowed) - 1
            budgets[pdb] = left
            if left < 0:
                violated = True  # keep going: every matching budget is consumed
        if not violated:
            victims.append(task)
    return victims


# --- sources --------------------------------------------------------------------------------


class PdbSource:
    """The plugin's background: where the PodDisruptionBudgets come from."""

    kind = ""

    def __init__(self) -> None:
        self._snapshot: PdbSnapshot | None = None
        self.last_error: str | None = None

    def error(self) -> str | None:
        """The last failure to read the budgets, if the last attempt failed."""
        return self.last_error

    def snapshot(self) -> PdbSnapshot | None:
        """The current budgets, or None until the first complete list or load."""
        return self._snapshot

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def ready(self) -> bool:
        return self._snapshot is not None

    def describe(self) -> dict[str, Any]:
        snapshot = self._snapshot
        return {
            "source": self.kind,
            "synced": snapshot is not None,
            "count": snapshot.count if snapshot is not None else 0,
            "lastError": self.error(),
        }

    def metrics(self) -> dict[str, float]:
        """Gauges for the app to export: ``synced`` (0/1), ``objects``, ``watch_restarts`` and
        ``relists`` (lists or loads after the first)."""
        snapshot = self._snapshot
        return {
            "synced": 1.0 if snapshot is not None else 0.0,
            "objects": float(snapshot.count) if snapshot is not None else 0.0,
            "watch_restarts": 0.0,
            "relists": 0.0,
        }


class StaticPdbSource(PdbSource):
    """A fixed set of budgets (tests, or an embedding application that manages them itself)."""

    kind = "static"

    def __init__(self, pdbs: Iterable[PodDisruptionBudget] = ()) -> None:
        super().__init__()
        self.set(pdbs)

    def set(self, pdbs: Iterable[PodDisruptionBudget]) -> None:
        self._snapshot = PdbSnapshot.of(pdbs)


class MisconfiguredPdbSource(PdbSource):
    """Bad plugin arguments: never ready, so the plugin keeps every candidate and /readyz says why."""

    kind = "invalid"

    def __init__(self, error: str) -> None:
        super().__init__()
        self.last_error = error


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class KubePdbSource(PdbSource):
    """List and watch PodDisruptionBudgets from the API server (``plugins/support/kube.py``)."""

    kind = "kubernetes"

    def __init__(
        self,
        kubeconfig: str | None = None,
        *,
        load_config: Callable[[], ClusterConfig] | None = None,
        page_limit: int = 500,
        watch_timeout_seconds: tuple[int, int] = (300, 600),
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__()
        self.kubeconfig = kubeconfig
        if load_config is None:
            path = kubeconfig
            load_config = (lambda: kubeconfig_config(path)) if path else in_cluster_config
        self._compiled: dict[str, CompiledPdb | None] = {}
        self.reflector: Reflector[PodDisruptionBudget] = Reflector(
            path=PDB_PATH,
            decode=msgspec.json.Decoder(PodDisruptionBudget),
            store=self,
            load_config=load_config,
            page_limit=page_limit,
            watch_timeout_seconds=watch_timeout_seconds,
            backoff=backoff,
        )
        self._task: asyncio.Task[None] | None = None

    # Store protocol: called from the reflector's task only; readers see whole snapshots.
    def replace(self, items: Mapping[str, PodDisruptionBudget]) -> None:
        self._compiled = {key: compile_pdb(pdb) for key, pdb in items.items()}
        self._snapshot = PdbSnapshot.build(self._compiled.values())

    def upsert(self, key: str, obj: PodDisruptionBudget) -> None:
        self._compiled[key] = compile_pdb(obj)
        self._snapshot = PdbSnapshot.build(self._compiled.values())

    def delete(self, key: str) -> None:
        if self._compiled.pop(key, 0) != 0:
            self._snapshot = PdbSnapshot.build(self._compiled.values())

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.reflector.run(), name="pdb-reflector")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await _cancel(task)

    def error(self) -> str | None:
        return self.reflector.status.last_error

    def describe(self) -> dict[str, Any]:
        status = self.reflector.status
        config = self.reflector.config
        return {
            **super().describe(),
            "config": self.kubeconfig or "in-cluster",
            "server": config.server if config is not None else None,
            "resourceVersion": status.resource_version,
            "watchRestarts": status.watch_restarts,
            "relists": max(status.lists - 1, 0),
        }

    def metrics(self) -> dict[str, float]:
        status = self.reflector.status
        return {
            **super().metrics(),
            "watch_restarts": float(status.watch_restarts),
            "relists": float(max(status.lists - 1, 0)),
        }


class PdbFileError(ValueError):
    """The file does not hold PodDisruptionBudgets."""


def parse_pdb_file(text: str) -> list[PodDisruptionBudget]:
    """PodDisruptionBudgets from YAML or JSON text (JSON is YAML); see the module docstring."""
    items: list[Any] = []
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        if isinstance(doc, list):
            items.extend(doc)
        elif isinstance(doc, dict) and (
            "items" in doc or str(doc.get("kind", "")).endswith("List")
        ):
            listed = doc.get("items") or []
            if not isinstance(listed, list):
                raise PdbFileError("'items' is not a list")
            items.extend(listed)
        elif isinstance(doc, dict):
            items.append(doc)
        else:
            raise PdbFileError(f"expected an object or a list, found {type(doc).__name__}")
    pdbs: list[PodDisruptionBudget] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PdbFileError(f"item {i} is not an object")
        kind = item.get("kind", "PodDisruptionBudget")
        if kind != "PodDisruptionBudget":
            raise PdbFileError(f"item {i} is a {kind}, not a PodDisruptionBudget")
        try:
            pdb = msgspec.convert(item, PodDisruptionBudget)
        except msgspec.ValidationError as exc:
            raise PdbFileError(f"item {i}: {exc}") from exc
        if pdb.metadata is None or not pdb.metadata.name:
            raise PdbFileError(f"item {i} has no metadata.name")
        if not pdb.metadata.namespace:
            pdb.metadata.namespace = "default"
        pdbs.append(pdb)
    return pdbs


class FilePdbSource(PdbSource):
    """PodDisruptionBudgets from a local file, reloaded when it changes."""

    kind = "file"

    def __init__(self, path: str, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.path = path
        self.poll_interval = poll_interval
        self.loads = 0
        self._signature: tuple[int, int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    def reload_if_changed(self) -> bool:
        """Stat the file and load it when its mtime, size or inode changed; True if loaded."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            error = f"cannot stat {self.path}: {exc.strerror}"
            if error != self.last_error:
                logger.error("pdb: %s; keeping the last good budgets", error)
            self.last_error = error
            self._signature = None
            return False
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        if signature == self._signature:
            return False
        self._signature = signature  # a bad file is reported once, not every poll
        try:
            with open(self.path, encoding="utf-8") as f:
                pdbs = parse_pdb_file(f.read())
        except (OSError, UnicodeDecodeError, yaml.YAMLError, PdbFileError) as exc:
            self.last_error = f"cannot load {self.path}: {exc}"
            logger.error("pdb: %s; keeping the last good budgets", self.last_error)
            return False
        by_key = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pdbs if p.metadata}
        self._snapshot = PdbSnapshot.of(by_key.values())
        self.last_error = None
        self.loads += 1
        logger.info("pdb: loaded %d PodDisruptionBudgets from %s", len(by_key), self.path)
        return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                self.reload_if_changed()
            except Exception:  # never let the poller die
                logger.exception("pdb: reloading %s failed", self.path)

    async def start(self) -> None:
        self.reload_if_changed()
        if self._task is None:
            self._task = asyncio.create_task(self._poll(), name="pdb-file-poll")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await _cancel(task)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "file": self.path, "loads": self.loads}

    def metrics(self) -> dict[str, float]:
        return {**super().metrics(), "relists": float(max(self.loads - 1, 0))}


# --- the plugin -----------------------------------------------------------------------------


@register
class PdbPlugin(Plugin):
    name = "pdb"
    needs_snapshot = False  # it reads the budgets, not the session snapshot
    in_tree_only = ("VictimTasksFns",)

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        source = arguments.get_string("source", "kubernetes")
        if source not in ("kubernetes", "file"):
            return {"source": f"unknown source {source!r} (expected 'kubernetes' or 'file')"}
        if source == "file" and not arguments.get_string("file", ""):
            return {"file": "source: file needs a 'file' argument: the path of the budgets"}
        return {}

    @classmethod
    def create_background(cls, arguments: Arguments) -> Background | None:
        # Configurations are validated by argument_errors; a source built without that check
        # (embedding, tests) still fails safe: never ready, no pod evicted.
        source = arguments.get_string("source", "kubernetes")
        if source == "kubernetes":
            kubeconfig = arguments.get_string("kubeconfig", "")
            return KubePdbSource(kubeconfig or None)
        if source == "file":
            path = arguments.get_string("file", "")
            if not path:
                return MisconfiguredPdbSource("source: file needs a 'file' argument")
            return FilePdbSource(path)
        return MisconfiguredPdbSource(
            f"unknown source {source!r} (expected 'kubernetes' or 'file')"
        )

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self._reported_unsynced = False

    def _filter(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        source = self.background
        snapshot = source.snapshot() if isinstance(source, PdbSource) else None
        if snapshot is None:
            if not self._reported_unsynced:  # once per session, not once per call
                self._reported_unsynced = True
                detail = source.describe() if source is not None else {"source": None}
                logger.warning(
                    "pdb: PodDisruptionBudgets are not loaded yet (%s); no pod is evicted",
                    detail,
                )
            return []
        return pdb_filter(tasks, snapshot)

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        return self._filter(preemptees), Vote.PERMIT

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> EvictResult:
        return self._filter(reclaimees), Vote.PERMIT
