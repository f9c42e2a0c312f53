"""Where the pdb plugin's PodDisruptionBudgets come from: the Kubernetes API (list and watch
through :mod:`plugins.pdb.kube`), a file re-read when it changes, or a fixed set (tests).
Each source is a :class:`~plugins.api.base.Background`: started with the server, ready once its
first list or load completed, described in ``/readyz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import msgspec
import yaml

from plugins.pdb.budgets import CompiledPdb, PdbSnapshot, compile_pdb
from plugins.pdb.kube import (
    Backoff,
    ClusterConfig,
    Reflector,
    named_or_default_config,
    namespaced_collection,
)
from schemas.k8s import PodDisruptionBudget, decode_api_object

logger = logging.getLogger("caldera.plugins.pdb")

_encode = msgspec.json.Encoder().encode
_decode_list = msgspec.json.Decoder(list[PodDisruptionBudget]).decode
PDB_RESOURCE = namespaced_collection("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")


class PdbSource:
    """The plugin's background: where the PodDisruptionBudgets come from."""

    kind = ""

    def __init__(self) -> None:
        self._snapshot: PdbSnapshot | None = None
        self._objects: tuple[PodDisruptionBudget, ...] = ()
        """What ``_snapshot`` was built from, for a shadow's mirror: set before it, replaced
        whole (another thread reads it, app/shadow/sources.py)."""
        self.last_error: str | None = None

    def _publish(self, objects: Iterable[PodDisruptionBudget], snapshot: PdbSnapshot) -> None:
        self._objects = tuple(objects)
        self._snapshot = snapshot

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

    # A shadow configuration's pdb reads these budgets instead of a watch of its own
    # (app/shadow/sources.py): the snapshot is replaced whole on every change; what is sent is
    # the objects as JSON, which the shadow's process compiles (far cheaper here than pickling
    # the compiled budgets).
    def shared_version(self) -> PdbSnapshot | None:
        return self._snapshot

    def shared_state(self) -> bytes:
        return _encode(self._objects)

    def mirror(self) -> MirroredPdbSource:
        return MirroredPdbSource(self.kind)


class MirroredPdbSource(PdbSource):
    """The budgets of another process's source, as it last sent them: a shadow configuration's
    pdb beside a live one reading the same PodDisruptionBudgets (app/shadow/sources.py)."""

    kind = "shared"

    def __init__(self, origin: str) -> None:
        super().__init__()
        self.origin = origin
        self.received = 0

    def receive(self, state: bytes) -> None:
        objects = _decode_list(state)
        self._publish(objects, PdbSnapshot.of(objects))
        self.received += 1

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "sharedFrom": self.origin, "received": self.received}


class StaticPdbSource(PdbSource):
    """A fixed set of budgets (tests, or an embedding application that manages them itself)."""

    kind = "static"

    def __init__(self, pdbs: Iterable[PodDisruptionBudget] = ()) -> None:
        super().__init__()
        self.set(pdbs)

    def set(self, pdbs: Iterable[PodDisruptionBudget]) -> None:
        objects = tuple(pdbs)
        self._publish(objects, PdbSnapshot.of(objects))


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
    """List and watch PodDisruptionBudgets from the API server (``plugins/pdb/kube.py``)."""

    kind = "kubernetes"

    def __init__(
        self,
        kubeconfig: str | None = None,
        *,
        load_config: Callable[[], ClusterConfig] | None = None,
        page_limit: int = 500,
        watch_timeout_seconds: tuple[float, float] = (300, 600),
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__()
        self.kubeconfig = kubeconfig
        if load_config is None:
            load_config = partial(named_or_default_config, kubeconfig)
        self._compiled: dict[str, CompiledPdb | None] = {}
        self._by_key: dict[str, PodDisruptionBudget] = {}
        self.reflector: Reflector[PodDisruptionBudget] = Reflector(
            resource=PDB_RESOURCE,
            decode=partial(decode_api_object, kind=PodDisruptionBudget),
            store=self,
            load_config=load_config,
            page_limit=page_limit,
            watch_timeout_seconds=watch_timeout_seconds,
            backoff=backoff,
        )
        self._task: asyncio.Task[None] | None = None

    # Store protocol: called from the reflector's task only; readers see whole snapshots.
    def replace(self, items: Mapping[str, PodDisruptionBudget]) -> None:
        self._by_key = dict(items)
        self._compiled = {key: compile_pdb(pdb) for key, pdb in items.items()}
        self._publish(self._by_key.values(), PdbSnapshot.build(self._compiled.values()))

    def upsert(self, key: str, obj: PodDisruptionBudget) -> None:
        self._by_key[key] = obj
        self._compiled[key] = compile_pdb(obj)
        self._publish(self._by_key.values(), PdbSnapshot.build(self._compiled.values()))

    def delete(self, key: str) -> None:
        self._by_key.pop(key, None)
        if self._compiled.pop(key, 0) != 0:
            self._publish(self._by_key.values(), PdbSnapshot.build(self._compiled.values()))

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
            "config": self.kubeconfig
            or "default (in a pod: its service account; else $KUBECONFIG or ~/.kube/config)",
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
            pdb = decode_api_object(item, PodDisruptionBudget)
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
        self._publish(by_key.values(), PdbSnapshot.of(by_key.values()))
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
