"""A minimal Kubernetes list/watch client on httpx, for plugins that read cluster objects.

Volcano's plugins read such objects from client-go informers (the pdb plugin's
``PodDisruptionBudgets().Lister()``). Caldera has no client-go, and pulling in the kubernetes SDK
for one resource is not worth its weight, so this module speaks the API server's wire protocol
directly, the way client-go's reflector does (``k8s.io/client-go/tools/cache/reflector.go``):

* LIST ``<path>?limit=N`` and follow ``metadata.continue`` until it is empty; the list's
  ``metadata.resourceVersion`` is the point the watch resumes from. The new set replaces the old
  one in a single step, so readers never see half a list.
* WATCH ``<path>?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T``: a chunked
  stream of newline-delimited ``{"type": ..., "object": ...}`` events (ADDED, MODIFIED, DELETED,
  BOOKMARK, ERROR). Every event moves RV forward (a BOOKMARK carries only that), so a stream that
  ends or breaks is resumed from the last RV without missing or replaying anything.
* ``410 Gone`` (as the HTTP status of a watch or list page, or as an ERROR event whose ``Status``
  has ``code: 410``) means RV is older than the server keeps: list again from scratch.
* Any other failure is recorded, then retried after an exponential backoff with equal jitter
  (half the cap plus up to half again). The loop never ends on an error: it only stops when its
  task is cancelled.

Credentials come from the pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT``, the token
re-read on every request so a rotated token is picked up, ``ca.crt``) or from a kubeconfig file
(``current-context``; ``server``, ``certificate-authority[-data]``,
``insecure-skip-tls-verify``, ``client-certificate[-data]``/``client-key[-data]``, ``token``,
``tokenFile``, ``proxy-url``). Exec and auth-provider credential plugins are not supported.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import random
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import urlencode

import httpx
import msgspec
import yaml

logger = logging.getLogger("caldera.kube")

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class KubeconfigError(Exception):
    """The cluster connection cannot be configured (missing env, unreadable kubeconfig…)."""


class ApiError(Exception):
    """The API server answered with an error status (HTTP or a watch ERROR event)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else str(code))
        self.code = code


class GoneError(ApiError):
    """410 Gone: the resourceVersion is too old; the client must list again."""


# --- connection configuration ---------------------------------------------------------------


@dataclass(frozen=True)
class ClusterConfig:
    """Where the API server is and how to authenticate to it."""

    server: str
    """Base URL, such as ``https://10.96.0.1:443``."""
    ssl_context: ssl.SSLContext | None = None
    """None for a plain-http server (tests); otherwise the verified TLS context."""
    token: str | None = None
    token_file: str | None = None
    """Read on every request (it wins over ``token``, as in client-go), so rotation works."""
    proxy: str | None = None
    origin: str = ""
    """Where the config came from (``in-cluster`` or the kubeconfig path), for status pages."""

    def auth_headers(self) -> dict[str, str]:
        token = self.token
        if self.token_file:
            try:
                token = Path(self.token_file).read_text().strip()
            except OSError as exc:
                raise KubeconfigError(f"cannot read token file {self.token_file}: {exc}") from exc
        return {"Authorization": f"Bearer {token}"} if token else {}


def default_config(
    environ: Mapping[str, str] | None = None, home: str | None = None
) -> ClusterConfig:
    """No kubeconfig named: in a pod, the service account (``rest.InClusterConfig``); outside
    one (``caldera replay`` on a workstation), client-go's default loading rules — the first
    file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = os.environ if environ is None else environ
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_config(env)
    candidates = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    candidates.append(os.path.join(home or os.path.expanduser("~"), ".kube", "config"))
    for path in candidates:
        if os.path.isfile(path):
            return kubeconfig_config(path)
    raise KubeconfigError(
        "no cluster: not in a pod (KUBERNETES_SERVICE_HOST unset), $KUBECONFIG names no file"
        " and ~/.kube/config does not exist; give the plugin a kubeconfig argument"
    )


def in_cluster_config(
    environ: Mapping[str, str] | None = None, service_account_dir: str = SERVICE_ACCOUNT_DIR
) -> ClusterConfig:
    """client-go's ``rest.InClusterConfig``: the service's env vars and the mounted account."""
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError(
            "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"
            " must be set (or give the plugin a kubeconfig)"
        )
    if ":" in host and not host.startswith("["):  # an IPv6 address needs brackets in a URL
        host = f"[{host}]"
    sa = Path(service_account_dir)
    token_file = sa / "token"
    if not token_file.is_file():
        raise KubeconfigError(f"service account token {token_file} is missing")
    context = ssl.create_default_context()
    ca_file = sa / "ca.crt"
    try:
        context.load_verify_locations(cafile=str(ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise KubeconfigError(f"cannot load the cluster CA {ca_file}: {exc}") from exc
    return ClusterConfig(
        server=f"https://{host}:{port}",
        ssl_context=context,
        token_file=str(token_file),
        origin="in-cluster",
    )


def _named(entries: Any, name: str, what: str, path: str) -> dict[str, Any]:
    for entry in entries or ():
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(what)
            return body if isinstance(body, dict) else {}
    raise KubeconfigError(f"kubeconfig {path}: {what} {name!r} not found")


def _load_client_cert(
    context: ssl.SSLContext, cert_file: str | None, key_file: str | None, cert: bytes, key: bytes
) -> None:
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
        return
    # ``load_cert_chain`` only reads files: spill inline data to private temporary files.
    with tempfile.TemporaryDirectory(prefix="caldera-kube-") as tmp:
        if not cert_file:
            cert_file = os.path.join(tmp, "client.crt")
            with open(os.open(cert_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(cert)
        if not key_file:
            key_file = os.path.join(tmp, "client.key")
            with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(key)
        context.load_cert_chain(cert_file, key_file)


def kubeconfig_config(path: str) -> ClusterConfig:
    """The ``current-context`` of a kubeconfig file (relative paths are relative to the file)."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    context_name = doc.get("current-context")
    if not context_name:
        raise KubeconfigError(f"kubeconfig {path} has no current-context")
    ctx = _named(doc.get("contexts"), context_name, "context", path)
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster", path)
    user = _named(doc.get("users"), ctx.get("user", ""), "user", path) if ctx.get("user") else {}
    base = Path(path).resolve().parent

    def resolve(value: Any) -> str | None:
        return str(base / value) if isinstance(value, str) and value else None

    def data(value: Any) -> bytes:
        try:
            return base64.b64decode(value) if isinstance(value, str) and value else b""
        except ValueError as exc:
            raise KubeconfigError(f"kubeconfig {path}: bad base64 data: {exc}") from exc

    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"kubeconfig {path}: cluster has no server")
    server = server.rstrip("/")
    context: ssl.SSLContext | None = None
    if server.startswith("https://"):
        try:
            ca_file = resolve(cluster.get("certificate-authority"))
            ca_data = data(cluster.get("certificate-authority-data"))
            context = ssl.create_default_context(
                cafile=ca_file, cadata=ca_data.decode() if ca_data else None
            )
            if cluster.get("insecure-skip-tls-verify") is True:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            cert_file = resolve(user.get("client-certificate"))
            key_file = resolve(user.get("client-key"))
            cert_data = data(user.get("client-certificate-data"))
            key_data = data(user.get("client-key-data"))
            if (cert_file or cert_data) and (key_file or key_data):
                _load_client_cert(context, cert_file, key_file, cert_data, key_data)
        except (OSError, ssl.SSLError, UnicodeDecodeError) as exc:
            raise KubeconfigError(f"kubeconfig {path}: TLS setup failed: {exc}") from exc
    if "exec" in user or "auth-provider" in user:
        logger.warning(
            "kubeconfig %s: exec and auth-provider credentials are not supported; "
            "only token, tokenFile and client certificates are used",
            path,
        )
    token = user.get("token")
    proxy = cluster.get("proxy-url")
    return ClusterConfig(
        server=server,
        ssl_context=context,
        token=token if isinstance(token, str) and token else None,
        token_file=resolve(user.get("tokenFile")),
        proxy=proxy if isinstance(proxy, str) and proxy else None,
        origin=path,
    )


# --- wire format ----------------------------------------------------------------------------


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # ``continue`` is a Python keyword.
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


class _ObjectMeta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _Object(msgspec.Struct):
    metadata: _ObjectMeta = msgspec.field(default_factory=_ObjectMeta)


class _Status(msgspec.Struct):
    """``metav1.Status``, the object of an ERROR event and the body of an error answer."""

    code: int = 0
    reason: str = ""
    message: str = ""


class _WatchEvent(msgspec.Struct):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


_decode_list = msgspec.json.Decoder(_List).decode
_decode_object = msgspec.json.Decoder(_Object).decode
_decode_status = msgspec.json.Decoder(_Status).decode
_decode_event = msgspec.json.Decoder(_WatchEvent).decode


def object_key(meta: _ObjectMeta) -> str:
    """client-go's ``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` when cluster-scoped."""
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _error_from(response_status: int, body: bytes) -> ApiError:
    message = ""
    with contextlib.suppress(msgspec.DecodeError):
        message = _decode_status(body).message
    if not message:
        message = body[:200].decode(errors="replace").strip()
    cls = GoneError if response_status == 410 else ApiError
    return cls(response_status, message)


# --- the reflector --------------------------------------------------------------------------


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


class Reflector(Generic[T]):
    """List, then watch, one collection path forever, feeding a :class:`Store`."""

    def __init__(
        self,
        *,
        path: str,
        decode: msgspec.json.Decoder[T],
        store: Store[T],
        load_config: Callable[[], ClusterConfig],
        page_limit: int = 500,
        watch_timeout_seconds: tuple[int, int] = (300, 600),
        backoff: Backoff | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        self.path = path
        self._decode = decode
        self._store = store
        self._load_config = load_config
        """Called (again after a failure) until the first client is built."""
        self.page_limit = page_limit
        self.watch_timeout_seconds = watch_timeout_seconds
        """Each watch asks for a random timeout in this range, as client-go does, so the
        watches of many replicas do not all expire together."""
        self.backoff = backoff or Backoff()
        self.request_timeout = request_timeout
        self.status = ReflectorStatus()
        self.config: ClusterConfig | None = None
        self._client: httpx.AsyncClient | None = None

    async def run(self) -> None:
        """The reflector loop; returns only when cancelled."""
        need_list = True
        try:
            while True:
                watching = False
                try:
                    client = self._ensure_client()
                    if need_list:
                        await self._list(client)
                        need_list = False
                        self.backoff.reset()
                    watching = True
                    await self._watch(client)
                    self.status.watch_restarts += 1  # the server ended the stream (timeout)
                except asyncio.CancelledError:
                    raise
                except GoneError as exc:
                    need_list = True
                    if watching:  # our resourceVersion is too old: list again, at once
                        self.status.watch_restarts += 1
                        logger.info("%s: watch expired (%s); listing again", self.path, exc)
                        continue
                    await self._failed(exc)
                except Exception as exc:
                    if watching:
                        self.status.watch_restarts += 1
                    await self._failed(exc)
        finally:
            await self.close()

    async def _failed(self, exc: Exception) -> None:
        self.status.last_error = f"{type(exc).__name__}: {exc}"
        delay = self.backoff.next()
        logger.warning("%s: %s; retrying in %.1fs", self.path, self.status.last_error, delay)
        await asyncio.sleep(delay)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _ensure_client(self) -> httpx.AsyncClient:
        if self._client is None:
            config: ClusterConfig = self._load_config()
            self.config = config
            self._client = httpx.AsyncClient(
                base_url=config.server,
                verify=config.ssl_context if config.ssl_context is not None else True,
                proxy=config.proxy,
                trust_env=False,
                timeout=httpx.Timeout(self.request_timeout),
                headers={"Accept": "application/json", "User-Agent": "caldera"},
            )
        return self._client

    def _headers(self) -> dict[str, str]:
        assert self.config is not None
        return self.config.auth_headers()

    async def _list(self, client: httpx.AsyncClient) -> None:
        items: dict[str, T] = {}
        resource_version = ""
        continue_token = ""
        while True:
            params: dict[str, str | int] = {"limit": self.page_limit}
            if continue_token:
                params["continue"] = continue_token
            response = await client.get(self.path, params=params, headers=self._headers())
            if response.status_code == 410 and continue_token:
                # The continue token expired between pages: start the list over.
                logger.info("%s: list continuation expired; listing from the start", self.path)
                items.clear()
                continue_token = ""
                continue
            if response.status_code != 200:
                raise _error_from(response.status_code, response.content)
            page = _decode_list(response.content)
            if not continue_token:  # every page of one list shares the first page's snapshot
                resource_version = page.metadata.resourceVersion
            for raw in page.items or ():
                self._ingest(raw, items)
            continue_token = page.metadata.continue_
            if not continue_token:
                break
        self._store.replace(items)
        self.status.resource_version = resource_version
        self.status.lists += 1
        self.status.synced = True
        self.status.last_error = None
        logger.info(
            "%s: listed %d objects at resourceVersion %s", self.path, len(items), resource_version
        )

    def _ingest(self, raw: msgspec.Raw, into: dict[str, T]) -> None:
        try:
            meta = _decode_object(raw).metadata
            into[object_key(meta)] = self._decode.decode(raw)
        except msgspec.DecodeError as exc:  # one malformed object must not hide the others
            logger.error("%s: skipping an undecodable object: %s", self.path, exc)

    async def _watch(self, client: httpx.AsyncClient) -> None:
        low, high = self.watch_timeout_seconds
        timeout_seconds = random.randint(low, high)
        query = urlencode(
            {
                "watch": "1",
                "resourceVersion": self.status.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(timeout_seconds),
            }
        )
        # The server ends the stream after timeoutSeconds; reading may idle that long.
        timeout = httpx.Timeout(self.request_timeout, read=timeout_seconds + 30.0)
        async with client.stream(
            "GET", f"{self.path}?{query}", headers=self._headers(), timeout=timeout
        ) as response:
            if response.status_code != 200:
                raise _error_from(response.status_code, await response.aread())
            async for line in response.aiter_lines():
                if line.strip():
                    self._apply(line)

    def _apply(self, line: str) -> None:
        event = _decode_event(line)
        if event.type == "ERROR":
            status = _decode_status(event.object)
            cls = GoneError if status.code == 410 else ApiError
            raise cls(status.code, status.message or status.reason)
        meta = _decode_object(event.object).metadata
        if event.type in ("ADDED", "MODIFIED"):
            try:
                obj = self._decode.decode(event.object)
            except msgspec.DecodeError as exc:
                logger.error("%s: skipping an undecodable %s event: %s", self.path, event.type, exc)
            else:
                self._store.upsert(object_key(meta), obj)
        elif event.type == "DELETED":
            self._store.delete(object_key(meta))
        elif event.type != "BOOKMARK":
            logger.warning("%s: ignoring a watch event of type %r", self.path, event.type)
        if meta.resourceVersion:
            self.status.resource_version = meta.resourceVersion
        self.status.events += 1
        self.backoff.reset()  # the stream works: a later break retries quickly
