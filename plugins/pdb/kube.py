"""List and watch of one Kubernetes collection, on lightkube, for plugins that read cluster objects.

Volcano's plugins read such objects from client-go informers (the pdb plugin's
``PodDisruptionBudgets().Lister()``). lightkube (https://lightkube.readthedocs.io) loads the
credentials (in-cluster service account, kubeconfig with CA, client certificates, token, tokenFile,
exec plugins), speaks the wire protocol and pages the LIST; this module keeps what it leaves to its
caller, the loop of client-go's reflector (``k8s.io/client-go/tools/cache/reflector.go``):

* LIST all pages; the list's ``metadata.resourceVersion`` is where the watch starts. The new set
  replaces the old one in a single step, so readers never see half a list.
* WATCH from that resourceVersion, which every event moves forward; after a failure the loop
  watches again from the last one, missing and replaying nothing. lightkube resumes a stream the
  server ended by itself, but sets no read timeout on a watch: each watch gets a deadline on our
  clock (random in a range, as client-go's ``timeoutSeconds``, so replicas do not expire
  together), which also ends a connection that died without a word.
* ``410 Gone`` (an ERROR event or an HTTP status) means the resourceVersion is older than the
  server keeps: list again from scratch. (lightkube's own retry would watch again without a
  resourceVersion, which never reports the objects deleted meanwhile.) lightkube asks for no
  bookmarks, so after a quiet stretch that outlived the server's watch cache (an API server
  restart) the resume point is too old more often than client-go's: a relist, cheap for PDBs.
* Any other failure, a refused connection included, is recorded and retried after an exponential
  backoff with equal jitter. The loop only stops when its task is cancelled.

A rotated service-account token or ``tokenFile`` is re-read when the server answers 401.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import httpx2
import msgspec
import yaml
from lightkube import ALL_NS, ApiError, AsyncClient, ConfigError, KubeConfig, SingleConfig
from lightkube.core.resource import ApiInfo, ResourceDef
from lightkube.generic_resource import GenericNamespacedResource

logger = logging.getLogger("caldera.kube")

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class KubeconfigError(Exception):
    """The cluster connection cannot be configured (no cluster found, unreadable kubeconfig…)."""


# --- connection configuration ---------------------------------------------------------------


@dataclass
class ClusterConfig:
    """lightkube's configuration of the chosen context, and what it does not read itself."""

    config: SingleConfig
    proxy: str | None = None
    """The cluster's ``proxy-url`` (lightkube takes the proxy as a client argument)."""
    origin: str = ""
    """Where the config came from (``in-cluster`` or the kubeconfig path), for status pages."""
    memory_files: tuple[int, ...] = ()
    """Descriptors of the in-memory files holding the kubeconfig's ``*-data`` certificates and
    key, until the client has loaded them (:meth:`release`)."""

    @property
    def server(self) -> str:
        return self.config.cluster.server

    def release(self) -> None:
        fds, self.memory_files = self.memory_files, ()
        for fd in fds:
            os.close(fd)


def default_config(
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
    service_account_dir: str = SERVICE_ACCOUNT_DIR,
    setting: str = "the plugin's kubeconfig argument",
) -> ClusterConfig:
    """No kubeconfig named: in a pod, the service account (``rest.InClusterConfig``); outside
    one (``caldera replay`` on a workstation), client-go's default loading rules — the first
    file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = os.environ if environ is None else environ
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_config(service_account_dir)
    candidates = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    candidates.append(os.path.join(home or os.path.expanduser("~"), ".kube", "config"))
    for path in candidates:
        if os.path.isfile(path):
            return kubeconfig_config(path)
    raise KubeconfigError(
        "no cluster: not in a pod (KUBERNETES_SERVICE_HOST unset), $KUBECONFIG names no file"
        f" and ~/.kube/config does not exist; name a kubeconfig file in {setting}"
    )


def named_or_default_config(
    kubeconfig: str | None, setting: str = "the plugin's kubeconfig argument"
) -> ClusterConfig:
    """The kubeconfig file ``setting`` names, else :func:`default_config`."""
    return kubeconfig_config(kubeconfig) if kubeconfig else default_config(setting=setting)


def connect(config: ClusterConfig, request_timeout: float) -> AsyncClient:
    """lightkube's client for ``config``. The TLS context is built here (the certificate files
    are read now), after which the in-memory copies of the kubeconfig's data are released."""
    try:
        return AsyncClient(
            config.config,
            timeout=httpx2.Timeout(request_timeout),
            proxy=config.proxy,
            trust_env=False,  # no HTTP(S)_PROXY from the environment, as before
        )
    finally:
        config.release()


def in_cluster_config(service_account_dir: str = SERVICE_ACCOUNT_DIR) -> ClusterConfig:
    """The service's ``KUBERNETES_SERVICE_HOST``/``_PORT`` and the mounted account."""
    try:
        kubeconfig = KubeConfig.from_service_account(service_account_dir)
    except KeyError as exc:
        raise KubeconfigError(f"not running in a cluster: {exc.args[0]} is not set") from exc
    except ConfigError as exc:
        raise KubeconfigError(f"service account {service_account_dir}: {exc}") from exc
    return ClusterConfig(_current(kubeconfig, service_account_dir), origin="in-cluster")


def kubeconfig_config(path: str) -> ClusterConfig:
    """The ``current-context`` of a kubeconfig file (relative paths are relative to the file)."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    try:
        kubeconfig = KubeConfig.from_dict(doc, fname=Path(path).resolve())
    except KeyError as exc:
        raise KubeconfigError(f"kubeconfig {path} has no {exc.args[0]!r}") from exc
    except (TypeError, AttributeError, msgspec.ValidationError) as exc:
        raise KubeconfigError(f"kubeconfig {path} is malformed: {exc}") from exc
    config = _current(kubeconfig, path)
    # What lightkube leaves out: the cluster's proxy-url; no server means a broken file (lightkube
    # would take http://localhost:8080); client-go resolves tokenFile against the file's directory.
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == config.context.cluster)
    if not cluster.get("server"):
        raise KubeconfigError(
            f"kubeconfig {path}: cluster {config.context.cluster!r} has no server"
        )
    if config.user is not None and config.user.token_file:
        config.user.token_file = str(config.abs_file(config.user.token_file))
    return ClusterConfig(
        config,
        proxy=cluster.get("proxy-url") or None,
        origin=path,
        memory_files=_data_in_memory(config, path),
    )


def _data_in_memory(config: SingleConfig, path: str) -> tuple[int, ...]:
    """``ssl`` loads certificates and keys from files only, and lightkube writes the ``*-data``
    fields to temporary files: on Linux hand it in-memory files instead, so the client key never
    touches a disk and a read-only root filesystem with no writable /tmp works."""
    if not hasattr(os, "memfd_create"):
        return ()  # macOS (caldera replay on a workstation): lightkube's temporary files
    fds: list[int] = []

    def in_memory(name: str, data: str) -> str:
        try:
            content = base64.b64decode(data, validate=True)
        except ValueError as exc:
            raise KubeconfigError(f"kubeconfig {path}: {name}-data is not base64: {exc}") from exc
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
        fds.append(fd)
        os.write(fd, content)
        return f"/proc/self/fd/{fd}"

    cluster, user = config.cluster, config.user
    try:
        if cluster.certificate_auth_data:
            cluster.certificate_auth = in_memory(
                "certificate-authority", cluster.certificate_auth_data
            )
            cluster.certificate_auth_data = None
        if user is not None and user.client_cert_data:
            user.client_cert = in_memory("client-certificate", user.client_cert_data)
            user.client_cert_data = None
        if user is not None and user.client_key_data:
            user.client_key = in_memory("client-key", user.client_key_data)
            user.client_key_data = None
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return tuple(fds)


def _current(kubeconfig: KubeConfig, origin: str) -> SingleConfig:
    try:
        config = kubeconfig.get()
    except ConfigError as exc:
        raise KubeconfigError(f"{origin}: {exc}") from exc
    except KeyError as exc:  # the context names a cluster or user the file does not have
        raise KubeconfigError(f"{origin}: cluster or user {exc.args[0]!r} not found") from exc
    assert config is not None  # get() without a default returns one or raises
    return config


# --- the reflector --------------------------------------------------------------------------


def namespaced_collection(
    group: str, version: str, kind: str, plural: str
) -> type[GenericNamespacedResource]:
    """A resource lightkube lists and watches across namespaces as plain dicts: each object is
    decoded by the reflector on its own, so one malformed object cannot hide the others."""

    class Collection(GenericNamespacedResource):
        _api_info = ApiInfo(
            resource=ResourceDef(group, version, kind),
            plural=plural,
            verbs=["global_list", "global_watch", "list", "watch"],
        )

    Collection.__name__ = Collection.__qualname__ = kind
    return Collection


class Store(Protocol[T_contra]):
    """Where the reflector puts what it reads. Called from the reflector's task only."""

    def replace(self, items: Mapping[str, T_contra]) -> None: ...

    def upsert(self, key: str, obj: T_contra) -> None: ...

    def delete(self, key: str) -> None: ...


@dataclass
class Backoff:
    """Exponential backoff with equal jitter: the wait is uniform in ``[cap/2, cap]``, the cap
    doubling from ``initial`` to ``maximum``. Not full jitter (``[0, cap]``): after an API
    server restart every sidecar relists at once, and a wait near zero would retry straight
    into the same overload; half the cap spreads them without hammering."""

    initial: float = 0.5
    maximum: float = 30.0
    _cap: float = field(default=0.0, init=False)

    def reset(self) -> None:
        self._cap = 0.0

    def next(self) -> float:
        self._cap = self.initial if self._cap <= 0 else min(self._cap * 2, self.maximum)
        return random.uniform(self._cap / 2, self._cap)


@dataclass
class ReflectorStatus:
    synced: bool = False
    """True once the first LIST completed (it stays true: the store keeps the last known set)."""
    resource_version: str = ""
    last_error: str | None = None
    lists: int = 0
    watch_restarts: int = 0
    events: int = 0
    errors_in_a_row: int = 0
    """Failures since the watch last worked (a list, an event or bookmark, a watch that ran to
    its deadline): a quiet watch has none, a broken one keeps counting."""
    failing_since: float | None = None
    """``time.monotonic()`` of the first of those failures; None while the watch works."""
    errors: dict[str, int] = field(default_factory=dict)
    """Failures by kind (:func:`error_kind`) since the start."""


_STATUS_KINDS = {401: "unauthorized", 403: "forbidden", 404: "not_found", 410: "gone",
                 429: "throttled"}  # fmt: skip
"""The API server's statuses an operator acts on by name; any other is a client or server
error."""


def error_kind(exc: BaseException) -> str:
    """A failure's kind, a bounded label: what an operator does about it differs by kind."""
    code: int | None = None
    if isinstance(exc, ApiError):
        code = exc.status.code
    elif isinstance(exc, httpx2.HTTPStatusError):
        code = exc.response.status_code
    if code is not None:
        return _STATUS_KINDS.get(code, "server_error" if code >= 500 else "client_error")
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout):
        return "connect"
    if isinstance(exc, httpx2.TransportError):
        return "stream"  # the connection broke or timed out after it was made
    if isinstance(exc, ConfigError | OSError):
        return "config"
    return "other"


def object_key(obj: Mapping[str, Any]) -> str:
    """client-go's ``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` when cluster-scoped."""
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace", "")
    return f"{namespace}/{name}" if namespace else name


def _is_gone(exc: Exception) -> bool:
    """Our resourceVersion is too old (410): a Status in an ERROR event or a failed LIST, or a
    watch's HTTP status lightkube raises without decoding its body (:func:`error_kind`)."""
    return error_kind(exc) == "gone"


class Reflector(Generic[T]):
    """List, then watch, one collection forever, feeding a :class:`Store`."""

    def __init__(
        self,
        *,
        resource: type[GenericNamespacedResource],
        decode: Callable[[Mapping[str, Any]], T],
        store: Store[T],
        load_config: Callable[[], ClusterConfig],
        page_limit: int = 500,
        watch_timeout_seconds: tuple[float, float] = (300, 600),
        backoff: Backoff | None = None,
        request_timeout: float = 30.0,
        on_error: Callable[[str, str], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resource = resource
        self._on_error = on_error
        """Told (collection, kind) of each failure: ``caldera_session_state_watch_errors_total``."""
        self._monotonic = monotonic
        self._decode = decode
        self._store = store
        self._load_config = load_config
        """Called (again after a failure) until the first client is built."""
        self.page_limit = page_limit
        self.watch_timeout_seconds = watch_timeout_seconds
        self.backoff = backoff or Backoff()
        self.request_timeout = request_timeout
        self.status = ReflectorStatus()
        self.config: ClusterConfig | None = None
        self._client: AsyncClient | None = None

    @property
    def name(self) -> str:
        return self.resource._api_info.plural

    async def run(self) -> None:
        """The reflector loop; returns only when cancelled."""
        need_list = True
        recovering = False
        try:
            while True:
                watching = False
                try:
                    client = self._ensure_client()
                    if need_list:
                        await self._list(client)
                        need_list = False
                        self.backoff.reset()
                    elif recovering:
                        await self._probe(client)
                    recovering = False
                    watching = True
                    await self._watch(client)
                    self.status.watch_restarts += 1  # the deadline passed: watch again
                    self._working()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if watching:
                        self.status.watch_restarts += 1
                    if _is_gone(exc):
                        need_list = True
                        if watching:  # our resourceVersion is too old: list again, at once
                            logger.info("%s: watch expired (%s); listing again", self.name, exc)
                            continue
                    recovering = True
                    await self._failed(exc)
        finally:
            await self.close()

    async def _probe(self, client: AsyncClient) -> None:
        """After a failure, before the watch resumes from its resourceVersion: a list of one
        object. A resumed watch that stays quiet proves nothing (a healthy collection can go
        minutes without an event), so this is what shows the collection is reachable and
        readable again, at the cost of one object, not a relist."""
        async for _ in client.list(self.resource, namespace=ALL_NS, chunk_size=1):
            break
        self._working()

    def _working(self) -> None:
        self.status.errors_in_a_row = 0
        self.status.failing_since = None

    async def _failed(self, exc: Exception) -> None:
        kind = error_kind(exc)
        status = self.status
        status.errors[kind] = status.errors.get(kind, 0) + 1
        status.errors_in_a_row += 1
        if status.failing_since is None:
            status.failing_since = self._monotonic()
        if self._on_error is not None:
            self._on_error(self.name, kind)
        self.status.last_error = f"{type(exc).__name__}: {exc}"
        delay = self.backoff.next()
        logger.warning("%s: %s; retrying in %.1fs", self.name, self.status.last_error, delay)
        await asyncio.sleep(delay)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def _ensure_client(self) -> AsyncClient:
        if self._client is None:
            self.config = self._load_config()
            self._client = connect(self.config, self.request_timeout)
        return self._client

    async def _list(self, client: AsyncClient) -> None:
        items: dict[str, T] = {}
        listing = client.list(self.resource, namespace=ALL_NS, chunk_size=self.page_limit)
        async for obj in listing:
            self._ingest(obj, items)
        resource_version = listing.resourceVersion
        self._store.replace(items)
        self.status.resource_version = resource_version
        self.status.lists += 1
        self.status.synced = True
        self.status.last_error = None
        self._working()
        logger.info(
            "%s: listed %d objects at resourceVersion %s", self.name, len(items), resource_version
        )

    def _ingest(self, obj: Mapping[str, Any], into: dict[str, T]) -> None:
        try:
            into[object_key(obj)] = self._decode(obj)
        except msgspec.ValidationError as exc:  # one malformed object must not hide the others
            logger.error("%s: skipping an undecodable object: %s", self.name, exc)

    async def _watch(self, client: AsyncClient) -> None:
        """Watch until the deadline passes (returns) or the stream fails (raises)."""
        low, high = self.watch_timeout_seconds
        # Typed as an AsyncIterable, it is an async generator: closing it closes the stream.
        events = cast(
            AsyncGenerator[tuple[str, GenericNamespacedResource], None],
            client.watch(
                self.resource, namespace=ALL_NS, resource_version=self.status.resource_version
            ),
        )
        with contextlib.suppress(TimeoutError):
            async with contextlib.aclosing(events), asyncio.timeout(random.uniform(low, high)):
                async for kind, obj in events:
                    self._apply(kind, obj)

    def _apply(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            try:
                decoded = self._decode(obj)
            except msgspec.ValidationError as exc:
                logger.error("%s: skipping an undecodable %s event: %s", self.name, kind, exc)
            else:
                self._store.upsert(object_key(obj), decoded)
        elif kind == "DELETED":
            self._store.delete(object_key(obj))
        elif kind != "BOOKMARK":
            logger.warning("%s: ignoring a watch event of type %r", self.name, kind)
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            self.status.resource_version = resource_version
        self.status.events += 1
        self.backoff.reset()  # the stream works: a later break retries quickly
        if self.status.failing_since is not None:
            self._working()
