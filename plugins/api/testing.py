"""Caldera's test kit for plugin authors: what a plugin package's own tests import.

```python
from plugins.api.testing import Harness, captured_body, job, node, session, task
```

- **Builders** (:func:`task`, :func:`node`, :func:`job`, :func:`queue`, :func:`session`): the
  typed views of ``schemas.api`` with the defaults a test does not care about filled in, the
  ones it does as keyword arguments. ``node(tasks=[...])`` hides how :class:`NodeInfo` keeps its
  tasks (raw bytes under ``TasksRaw``, decoded on first read of ``node.Tasks``); any other
  field of the view is passed through by name (``task(Preemptable=True)``).
- **Captured bodies** (:func:`captured_body`, :data:`CAPTURED_RELEASES`): the request bodies
  Volcano's own ``extender`` plugin marshalled and POSTed, per release and verb, shipped inside
  the package (``plugins/api/captured/volcano-<release>/``; each directory's README says how
  they were captured). Caldera's own tests read these same files.
- **Bodies** (:func:`request_body`, :func:`snapshot_body`): typed objects encoded the way Go's
  ``json.Marshal`` writes them (compact, Go field names), to post to a server or a harness.
- **The harness** (:class:`Harness`): a configuration text and request bodies in, the status
  and bytes Volcano would receive out, in process (Caldera's own request path without HTTP).
- **The server** (the pytest fixture ``caldera_serve``, ``plugins/api/pytest_plugin.py``): a
  real ``caldera serve`` process with the plugins installed in the test's environment.

The kit reaches Caldera's service (``app``) through one seam, :class:`_Service`: the few
entry points a :class:`Harness` needs (load a configuration, build its data sources, the
extender with its sessions, the routes' answer), imported when a harness is built, never when
this module is (``plugins.api`` must not import ``app``: ``app`` imports it). Nothing else here
imports ``app`` (tests/plugins/api/test_facade.py holds it to that); :func:`serve` runs the
installed ``caldera`` command. Importing this module costs no more than ``plugins.api`` and the
standard library.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from plugins.api.base import Background, Session
from plugins.api.extension_points import BY_VERB
from plugins.api.reasons import answer_of
from plugins.api.release import Release
from schemas.api import (
    JobInfo,
    NodeInfo,
    NodePhase,
    NodeState,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    Queue,
    QueueInfo,
    QueueSpec,
    QueueStatus,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.k8s import (
    Container,
    Node,
    NodeSpec,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    ResourceList,
    ResourceRequirements,
    Taint,
    Toleration,
)

if TYPE_CHECKING:
    from app.config import Backgrounds, CalderaConfig
    from app.extender import Extender

__all__ = [
    "CAPTURED",
    "CAPTURED_RELEASES",
    "GROUP_ANNOTATION",
    "T0",
    "Answer",
    "Harness",
    "Server",
    "answer_of",
    "captured_body",
    "captured_verbs",
    "job",
    "load_backgrounds",
    "node",
    "queue",
    "request_body",
    "serve",
    "session",
    "snapshot_body",
    "task",
]

CAPTURED = Path(__file__).resolve().with_name("captured")
"""The captured request bodies: ``volcano-<release>/<verb>.request.json``."""
CAPTURED_RELEASES: tuple[str, ...] = tuple(
    sorted(
        (p.name.removeprefix("volcano-") for p in CAPTURED.glob("volcano-*") if p.is_dir()),
        key=lambda name: tuple(int(part) for part in name.split(".")),
    )
)
"""The releases whose bodies were captured from Volcano itself, oldest first ("1.14", ...)."""

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""The pod annotation naming its PodGroup (what makes ``TaskInfo.Job``)."""
T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""The builders' default creation time: fixed, so a test's answers do not depend on the day."""


def captured_verbs(release: str) -> tuple[str, ...]:
    """The verbs captured for ``release`` ("1.15")."""
    directory = _captured_directory(release)
    return tuple(sorted(p.name.removesuffix(".request.json") for p in directory.glob("*.json")))


def captured_body(release: str, verb: str) -> bytes:
    """The body Volcano ``release`` POSTed for ``verb``, compact as ``json.Marshal`` writes it
    (the files are indented for reading)."""
    path = _captured_directory(release) / f"{verb}.request.json"
    if not path.is_file():
        raise KeyError(
            f"no captured {verb} body for Volcano {release} (captured: "
            f"{', '.join(captured_verbs(release))})"
        )
    data = json.loads(path.read_bytes())
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def _captured_directory(release: str) -> Path:
    if release not in CAPTURED_RELEASES:
        raise KeyError(
            f"no bodies captured from Volcano {release} (captured: {', '.join(CAPTURED_RELEASES)})"
        )
    return CAPTURED / f"volcano-{release}"


# --- builders ----------------------------------------------------------------------------


def task(
    name: str = "task-1",
    *,
    namespace: str = "default",
    job: str = "job-1",
    status: TaskStatus = TaskStatus.Pending,
    node: str = "",
    priority: int = 1,
    milli_cpu: float = 1000,
    memory: float = 0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    tolerations: Iterable[Toleration | Mapping[str, Any]] | None = None,
    **fields: Any,
) -> TaskInfo:
    """A pod of PodGroup ``namespace/job`` asking ``milli_cpu`` millicores and ``memory`` bytes,
    with the Pod Volcano embeds (its metadata, one container with those requests, the phase
    that goes with ``status``). ``UID`` defaults to ``uid-<namespace>-<name>``. ``tolerations``:
    the pod's ``spec.tolerations``, each a :class:`~schemas.k8s.Toleration` or a mapping in
    Kubernetes' JSON shape (``{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}``);
    read back as ``task.Pod.spec.tolerations``."""
    meta = ObjectMeta(
        name=name,
        namespace=namespace,
        uid=fields.get("UID", f"uid-{namespace}-{name}"),
        creationTimestamp=T0,
        labels=dict(labels or {}),
        annotations={GROUP_ANNOTATION: job, **(annotations or {})},
    )
    requests = {"cpu": f"{milli_cpu:g}m", "memory": f"{memory:g}"}
    running = status in (TaskStatus.Running, TaskStatus.Bound, TaskStatus.Binding)
    pod = Pod(
        metadata=meta,
        spec=PodSpec(
            containers=[Container(name="main", resources=ResourceRequirements(requests=requests))],
            tolerationsRaw=_listed(tolerations, Toleration),
        ),
        status=PodStatus(phase="Running" if running else "Pending"),
    )
    values: dict[str, Any] = {
        "UID": meta.uid,
        "Job": f"{namespace}/{job}",
        "Name": name,
        "Namespace": namespace,
        "Resreq": Resource(MilliCPU=float(milli_cpu), Memory=float(memory)),
        "NodeName": node,
        "Status": int(status),
        "Priority": priority,
        "Pod": pod,
        **fields,
    }
    return TaskInfo(**values)


def node(
    name: str = "node-1",
    *,
    labels: Mapping[str, str] | None = None,
    milli_cpu: float = 8000,
    memory: float = 32 << 30,
    tasks: Iterable[TaskInfo] = (),
    taints: Iterable[Taint | Mapping[str, Any]] | None = None,
    unschedulable: bool = False,
    **fields: Any,
) -> NodeInfo:
    """A Ready node with ``milli_cpu`` and ``memory`` allocatable, running ``tasks`` (their
    requests are its ``Used``, the rest its ``Idle``). ``node.Tasks`` holds them keyed
    ``namespace/name``, as Volcano sends them. ``taints`` (each a :class:`~schemas.k8s.Taint`
    or a mapping in Kubernetes' JSON shape, ``{"key": "gpu", "value": "h100", "effect":
    "NoSchedule"}``) and ``unschedulable`` (``kubectl cordon``) are the Node's ``spec``; read
    back as ``node.Node.spec.taints``."""
    bound = {f"{t.Namespace}/{t.Name}": t for t in tasks}
    used_cpu = float(sum(t.Resreq.MilliCPU for t in bound.values() if t.Resreq is not None))
    used_memory = float(sum(t.Resreq.Memory for t in bound.values() if t.Resreq is not None))
    milli_cpu, memory = float(milli_cpu), float(memory)
    allocatable = Resource(MilliCPU=milli_cpu, Memory=memory)
    values: dict[str, Any] = {
        "Name": name,
        "Node": Node(
            metadata=ObjectMeta(name=name, labels=dict(labels or {}), creationTimestamp=T0),
            specRaw=_node_spec(taints, unschedulable),
        ),
        "State": NodeState(Phase=int(NodePhase.Ready)),
        "Allocatable": allocatable,
        "Capacity": Resource(MilliCPU=milli_cpu, Memory=memory),
        "Used": Resource(MilliCPU=used_cpu, Memory=used_memory),
        "Idle": Resource(MilliCPU=milli_cpu - used_cpu, Memory=memory - used_memory),
        "TasksRaw": msgspec.Raw(msgspec.json.encode(bound)),
        **fields,
    }
    return NodeInfo(**values)


def _listed(items: Iterable[Any] | None, kind: type[Any]) -> msgspec.Raw:
    """``items`` as the raw JSON list of a lazy field, each checked against ``kind`` (a mapping
    with a misspelt key or a wrong type fails here, not in the plugin under test); absent when
    ``None``."""
    if items is None:
        return msgspec.Raw(b"null")
    listed = []
    for item in items:
        if not isinstance(item, kind):
            unknown = sorted(set(item) - set(kind.__struct_fields__))
            if unknown:
                raise TypeError(
                    f"{kind.__name__} has no field {unknown[0]!r} (its fields:"
                    f" {', '.join(kind.__struct_fields__)})"
                )
            item = msgspec.convert(dict(item), kind, strict=True)
        listed.append(item)
    return msgspec.Raw(msgspec.json.encode(listed))


def _node_spec(taints: Iterable[Any] | None, unschedulable: bool) -> msgspec.Raw:
    if taints is None and not unschedulable:
        return msgspec.Raw(b"null")  # as a node without a spec Volcano would send
    spec = NodeSpec(
        unschedulable=unschedulable,
        taints=msgspec.json.decode(_listed(taints, Taint), type=list[Taint] | None),
    )
    return msgspec.Raw(msgspec.json.encode(spec))


def job(
    name: str = "job-1",
    *,
    namespace: str = "default",
    queue: str = "default",
    tasks: Iterable[TaskInfo] = (),
    min_available: int = 1,
    priority: int = 0,
    phase: str = "Pending",
    min_resources: ResourceList | None = None,
    created: datetime = T0,
    annotations: Mapping[str, str] | None = None,
    **fields: Any,
) -> JobInfo:
    """A Volcano job (PodGroup ``namespace/name`` in ``queue``) holding ``tasks`` (keyed by
    UID), its PodGroup in the 1.14+ shape with ``minMember`` ``min_available``, ``phase`` and
    ``min_resources`` (``{"cpu": "4"}``). ``UID`` defaults to ``namespace/name``."""
    members = {t.UID: t for t in tasks}
    values: dict[str, Any] = {
        "UID": f"{namespace}/{name}",
        "PgUID": f"pg-{namespace}-{name}",
        "Name": name,
        "Namespace": namespace,
        "Queue": queue,
        "Priority": priority,
        "MinAvailable": min_available,
        "Tasks": members,
        "CreationTimestamp": created,
        "PodGroup": PodGroup(
            metadata=ObjectMeta(
                name=name,
                namespace=namespace,
                creationTimestamp=created,
                annotations=dict(annotations) if annotations else None,
            ),
            spec=PodGroupSpec(min_member=min_available, queue=queue, min_resources=min_resources),
            status=PodGroupStatus(phase=phase),
            Version="v1beta1",
        ),
        **fields,
    }
    return JobInfo(**values)


def queue(
    name: str = "default",
    *,
    weight: int = 1,
    capability: ResourceList | None = None,
    deserved: ResourceList | None = None,
    allocated: ResourceList | None = None,
    state: str = "Open",
    **fields: Any,
) -> QueueInfo:
    """An open queue of ``weight`` with its Queue object in the 1.14+ shape: ``capability``,
    ``deserved`` and ``allocated`` as resource lists (``{"cpu": "10"}``)."""
    values: dict[str, Any] = {
        "UID": name,
        "Name": name,
        "Weight": weight,
        "Queue": Queue(
            metadata=ObjectMeta(name=name, creationTimestamp=T0),
            spec=QueueSpec(weight=weight, capability=capability, deserved=deserved),
            status=QueueStatus(state=state, allocated=allocated),
        ),
        **fields,
    }
    return QueueInfo(**values)


def session(
    *,
    jobs: Iterable[JobInfo] = (),
    nodes: Iterable[NodeInfo] = (),
    queues: Iterable[QueueInfo] = (),
    now: datetime | Callable[[], datetime] = T0,
    release: str = "1.15",
) -> Session:
    """An open session holding a snapshot of ``jobs`` (keyed ``namespace/name``), ``nodes``
    and ``queues`` (by name), at the fixed time ``now`` (or a clock), for ``release``."""
    node_map = {n.Name: n for n in nodes}
    total = Resource(
        MilliCPU=sum(n.Allocatable.MilliCPU for n in node_map.values() if n.Allocatable),
        Memory=sum(n.Allocatable.Memory for n in node_map.values() if n.Allocatable),
    )
    major, minor = (int(part) for part in release.split(".")[:2])
    clock = now if callable(now) else (lambda: now)
    return Session(
        jobs={f"{j.Namespace}/{j.Name}": j for j in jobs},
        nodes=node_map,
        queues={q.Name: q for q in queues},
        total_resource=total,
        has_snapshot=True,
        release=Release(major, minor),
        now=clock,
    )


# --- bodies ------------------------------------------------------------------------------


def request_body(**parts: Any) -> bytes:
    """A verb's body from its parts, as ``json.Marshal`` writes it: ``request_body(task=t,
    node=n)`` for predicate, ``task`` and ``nodes`` for prioritize, ``evictor`` and
    ``evictees`` for preemptable/reclaimable, ``job``, ``queue`` or ``task`` for the others."""
    return msgspec.json.encode(parts)


def snapshot_body(
    *,
    jobs: Iterable[JobInfo] = (),
    nodes: Iterable[NodeInfo] = (),
    queues: Iterable[QueueInfo] = (),
) -> bytes:
    """An onSessionOpen body holding ``jobs``, ``nodes`` and ``queues``, keyed as Volcano keys
    them."""
    return msgspec.json.encode(
        {
            "Jobs": {f"{j.Namespace}/{j.Name}": j for j in jobs},
            "Nodes": {n.Name: n for n in nodes},
            "Queues": {q.Name: q for q in queues},
            "NamespaceInfo": {},
            "RevocableNodes": {},
            "NodeList": None,
        }
    )


# --- the harness -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """What Volcano would receive: the HTTP status and the body's bytes."""

    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Harness:
    """Caldera in process: built from a configuration text (the YAML ``caldera serve --config``
    reads), answering verbs from request bodies exactly as the server's routes do, errors
    included (a 400 for a body the configured plugins cannot read, a 500 naming the plugin
    that raised). Its plugins come from the same registry as the server's: built-ins and the
    ``caldera.plugins`` entry points installed in this environment.

    ``now`` fixes the sessions' clock (a datetime, or a callable); by default the wall clock.
    Plugins with a background data source (pdb) have it started, waited for as at server start,
    and stopped again: the harness answers from what the source held when it was built."""

    def __init__(
        self, config_text: str, *, now: datetime | Callable[[], datetime] | None = None
    ) -> None:
        service = self._service = _Service()
        self.config = service.load_config_text(config_text, "<harness configuration>")
        clock: Callable[[], datetime] = (
            now if callable(now) else (lambda: now) if now is not None else _utc_now
        )
        backgrounds, built = service.build_backgrounds(self.config)
        unready = load_backgrounds(built)
        if unready:
            raise RuntimeError(
                f"a plugin's background data source did not become ready in "
                f"{BACKGROUND_SYNC_SECONDS:g}s: " + "; ".join(str(b.describe()) for b in unready)
            )
        self.extender: Extender = service.extender(self.config, backgrounds, clock)

    def answer(self, verb: str, body: bytes | str | Mapping[str, Any]) -> Answer:
        """The answer to ``verb`` (``"predicate"``, ``"onSessionOpen"``...) for ``body``:
        bytes as Volcano posts them, a JSON text, or a mapping encoded as JSON."""
        if verb not in BY_VERB:
            raise KeyError(f"no verb {verb!r} (verbs: {', '.join(BY_VERB)})")
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, bytes | bytearray):
            body = msgspec.json.encode(body)
        status, answered = self._service.answer(self.extender, verb, body)
        return Answer(status, answered)


class _Service:
    """The test kit's one seam to Caldera's service: every ``app`` import of this module is
    here (or, for the type names, under ``TYPE_CHECKING``), made when a :class:`Harness` is
    built."""

    def __init__(self) -> None:
        from app.config import build_backgrounds, load_config_text
        from app.extender import Extender
        from app.metrics import Metrics
        from app.server.record import answer_of
        from app.session import SessionManager

        self.load_config_text = load_config_text
        self.build_backgrounds = build_backgrounds
        self.answer = answer_of
        """The status and bytes the server's route would send for a verb's body."""
        self._extender = Extender
        self._sessions = SessionManager
        self._metrics = Metrics

    def extender(
        self, config: CalderaConfig, backgrounds: Backgrounds, clock: Callable[[], datetime]
    ) -> Extender:
        """The server's extender for ``config``, its metrics on a registry of its own."""
        metrics = self._metrics()
        sessions = self._sessions(config, metrics, backgrounds, clock=clock)
        return self._extender(config, sessions, metrics)


def _utc_now() -> datetime:
    return datetime.now(UTC)


BACKGROUND_SYNC_SECONDS = 30.0


def load_backgrounds(
    backgrounds: Iterable[Background], timeout: float = BACKGROUND_SYNC_SECONDS
) -> list[Background]:
    """Start the backgrounds, wait until each is ready (at most ``timeout`` seconds), stop
    them: one load of their data, which the plugins built with them then read. Returns those
    that did not become ready."""
    started = list(backgrounds)
    if not started:
        return []
    import asyncio

    async def load() -> list[Background]:
        for background in started:
            await background.start()
        try:
            deadline = asyncio.get_running_loop().time() + timeout
            while not all(b.ready() for b in started):
                if asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.02)
            return [b for b in started if not b.ready()]
        finally:
            for background in reversed(started):
                await background.stop()

    return asyncio.run(load())


# --- a real server -----------------------------------------------------------------------

STARTUP_SECONDS = 20.0


def caldera_command() -> list[str]:
    """The ``caldera`` console script beside this interpreter, as an operator runs it."""
    script = Path(sys.executable).with_name("caldera")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.commands.cli"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running ``caldera serve`` on a loopback port (see :func:`serve`)."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def post(self, verb: str, body: bytes | str | Mapping[str, Any]) -> Answer:
        """POST ``body`` to ``/<verb>`` as Volcano does; any status is returned, not raised."""
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, bytes | bytearray):
            body = msgspec.json.encode(body)
        return self._request("POST", f"/{verb}", bytes(body))

    def get(self, path: str) -> Answer:
        return self._request("GET", path, None)

    def _request(self, method: str, path: str, body: bytes | None) -> Answer:
        request = urllib.request.Request(
            self.url + path, data=body, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Answer(response.status, response.read())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.read())

    def log(self) -> str:
        """Everything the server wrote (JSON log lines)."""
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, as Kubernetes stops it; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


def serve(
    config_text: str | None,
    directory: Path,
    *,
    env: Mapping[str, str] | None = None,
    args: Iterable[str] = (),
    cwd: Path | None = None,
) -> Server:
    """Start ``caldera serve`` with ``config_text`` (None: the embedded configuration) written
    into ``directory``, beside its log; return once ``/healthz`` answers. The server runs in
    this environment, so it finds the plugins installed here. ``args`` are more options of
    ``caldera serve`` (relative paths in them from ``cwd``, by default this process's); a server
    that exits or does not become healthy raises, with its log."""
    port = _free_port()
    command = [*caldera_command(), "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    if config_text is not None:
        config_path = directory / f"caldera-{port}.yaml"
        config_path.write_text(config_text)
        command += ["--config", str(config_path)]
    log_path = directory / f"caldera-{port}.log"
    environment = {**os.environ, "CALDERA_LOG_FORMAT": "json", **(env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=cwd
        )
    server = Server(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"caldera serve exited with {process.returncode}:\n{server.log()}")
        try:
            if server.get("/healthz").status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"caldera serve did not answer /healthz in {STARTUP_SECONDS:g}s")
