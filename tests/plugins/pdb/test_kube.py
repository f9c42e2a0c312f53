"""pdb's Kubernetes source (``plugins/pdb/kube.py`` on lightkube) against a loopback fake API
server.

The fake server is a raw asyncio HTTP/1.1 server, so the wire format is exactly what the test
writes: paged LIST answers with ``metadata.resourceVersion`` and ``continue``, and chunked WATCH
streams of newline-delimited events (with events split across chunks), which end cleanly, break
mid-chunk, or hang until the test releases them. Each WATCH waits for the test to queue its
answer, so every step is driven by the test, and every wait is bounded. The same source against a
real kube-apiserver: the ``preemption`` scenario of tests/e2e.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import os
import shutil
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import answer_of
from plugins.pdb.kube import (
    Backoff,
    KubeconfigError,
    in_cluster_config,
    kubeconfig_config,
)
from plugins.pdb.pdb import PdbPlugin
from plugins.pdb.sources import KubePdbSource
from schemas.api import TaskInfo
from schemas.k8s import ObjectMeta, Pod
from tests.certificates import self_contained

WAIT = 5.0
"""Upper bound of every wait: the steps themselves take milliseconds."""

PDB_PATH = "/apis/policy/v1/poddisruptionbudgets"


# --- the fake API server ----------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    peer_cert: Any = None


@dataclass
class Reply:
    status: int
    body: Any


@dataclass
class Stream:
    events: list[dict[str, Any]]
    end: str = "close"
    """``close`` (the server's timeout), ``break`` (connection dropped mid-stream) or ``hang``."""


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


REASONS = {200: "OK", 401: "Unauthorized", 410: "Gone", 500: "Internal Server Error"}


def is_watch(query: dict[str, str]) -> bool:
    return query.get("watch") in ("1", "true")


@dataclass
class FakeApiServer:
    """Answers LISTs from ``lists`` (one reply per request, in order) and WATCHes from ``watches``."""

    lists: asyncio.Queue[Reply] = field(default_factory=asyncio.Queue)
    watches: asyncio.Queue[Reply | Stream] = field(default_factory=asyncio.Queue)
    requests: list[Request] = field(default_factory=list)
    rejected_tokens: set[str] = field(default_factory=set)
    """Authorization headers answered with 401, as after a token's expiry."""
    url: str = ""
    _server: asyncio.Server | None = None
    _handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl_context)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def of(self, kind: str) -> list[Request]:
        watching = kind == "watch"
        return [r for r in self.requests if is_watch(r.query) == watching]

    async def wait_requests(self, kind: str, count: int) -> Request:
        await wait_until(lambda: len(self.of(kind)) >= count)
        return self.of(kind)[count - 1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            method, target, _ = (await reader.readline()).decode().split(" ", 2)
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, value = line.decode().split(":", 1)
                headers[name.strip().lower()] = value.strip()
            url = urlsplit(target)
            request = Request(
                method,
                url.path,
                dict(parse_qsl(url.query, keep_blank_values=True)),
                headers,
                writer.get_extra_info("peercert"),
            )
            self.requests.append(request)
            if url.path != PDB_PATH:
                reply: Reply | Stream = Reply(404, status_body(404, "NotFound", url.path))
            elif request.headers.get("authorization") in self.rejected_tokens:
                reply = Reply(401, status_body(401, "Unauthorized", "Unauthorized"))
            elif is_watch(request.query):
                reply = await self.watches.get()
            else:
                reply = await self.lists.get()
            await self._write(writer, reply)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _write(self, writer: asyncio.StreamWriter, reply: Reply | Stream) -> None:
        if isinstance(reply, Reply):
            body = json.dumps(reply.body).encode()
            writer.write(
                f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'X')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        for event in reply.events:
            line = json.dumps(event).encode() + b"\n"
            half = len(line) // 2  # split each event across two chunks
            for part in (line[:half], line[half:]):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
        if reply.end == "close":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        elif reply.end == "break":
            writer.write(b'40\r\n{"type": "ADD')  # half a chunk, then the connection drops
            await writer.drain()
            writer.transport.abort()
        else:
            await asyncio.Event().wait()  # hang until the client goes away or the test ends


async def wait_until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), timeout)


def pdb(name: str, rv: str, allowed: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": rv,
            # As the API server sends every object: the lazy managedFields must decode from a
            # list item and from a watch event alike (msgspec.convert cannot fill a Raw field).
            "managedFields": [
                {
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "policy/v1",
                    "time": "2026-11-27T08:44:50Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:minAvailable": {}}},
                }
            ],
        },
        "spec": {"selector": {"matchLabels": {"app": name}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "observedGeneration": 1},
    }


def page(items: list[dict[str, Any]], rv: str, cont: str = "") -> Reply:
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        metadata["continue"] = cont
        metadata["remainingItemCount"] = 1
    return Reply(
        200,
        {
            "kind": "PodDisruptionBudgetList",
            "apiVersion": "policy/v1",
            "metadata": metadata,
            "items": items,
        },
    )


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return event(
        "BOOKMARK",
        {
            "kind": "PodDisruptionBudget",
            "apiVersion": "policy/v1",
            "metadata": {"resourceVersion": rv},
        },
    )


def task(app: str) -> TaskInfo:
    return TaskInfo(
        UID=app,
        Name=app,
        Namespace="default",
        Pod=Pod(metadata=ObjectMeta(name=app, namespace="default", labels={"app": app})),
    )


def victims(source: KubePdbSource, *apps: str) -> list[str]:
    """Which of one pod per app the plugin lets go (each app's PDB selects its own pod)."""
    plugin = PdbPlugin(Arguments({}, plugin="pdb"), source)
    plugin.on_session_open(Session())
    chosen, vote = answer_of(plugin.preemptable(TaskInfo(), [task(a) for a in apps]))
    assert vote is Vote.PERMIT
    return [t.Name for t in chosen]


def write_kubeconfig(path: Path, server: str, user: dict[str, Any], cluster: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "test",
        "contexts": [
            {"name": "other", "context": {"cluster": "nowhere", "user": "nobody"}},
            {"name": "test", "context": {"cluster": "local", "user": "tester"}},
        ],
        "clusters": [
            {"name": "nowhere", "cluster": {"server": "https://192.0.2.1:6443"}},
            {"name": "local", "cluster": {"server": server, **cluster}},
        ],
        "users": [
            {"name": "nobody", "user": {"token": "wrong"}},
            {"name": "tester", "user": user},
        ],
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return str(path)


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def running(source: KubePdbSource) -> AsyncIterator[KubePdbSource]:
    await source.start()
    try:
        yield source
    finally:
        await asyncio.wait_for(source.stop(), WAIT)


def fast_source(kubeconfig: str, **kwargs: Any) -> KubePdbSource:
    return KubePdbSource(
        kubeconfig,
        backoff=Backoff(initial=0.01, maximum=0.02),
        watch_timeout_seconds=(60, 60),
        **kwargs,
    )


# --- tests --------------------------------------------------------------------------------------


async def test_paged_list_then_watch_events(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    config = write_kubeconfig(tmp_path / "kc", url, {"token": "secret-token"}, {})
    source = fast_source(config, page_limit=2)
    api.lists.put_nowait(page([pdb("a", "90", 0), pdb("b", "91", 0)], "100", cont="tok-1"))
    api.lists.put_nowait(page([pdb("c", "95", 1)], "100"))
    async with running(source):
        first_watch = await api.wait_requests("watch", 1)
        assert source.ready()
        lists = api.of("list")
        assert [r.query for r in lists] == [{"limit": "2"}, {"limit": "2", "continue": "tok-1"}]
        assert first_watch.query["resourceVersion"] == "100"
        assert "timeoutSeconds" not in first_watch.query  # the deadline is ours (see below)
        assert all(r.headers["authorization"] == "Bearer secret-token" for r in api.requests)
        assert source.describe()["count"] == 3
        assert victims(source, "a", "b", "c") == ["c"]

        api.watches.put_nowait(
            Stream(
                [
                    event("ADDED", pdb("d", "101", 0)),
                    event("MODIFIED", pdb("a", "102", 1)),
                    event("DELETED", pdb("b", "103", 0)),
                    bookmark("110"),
                ],
                end="close",
            )
        )
        # The server ended the stream: lightkube watches again from the last resourceVersion.
        second_watch = await api.wait_requests("watch", 2)
        assert second_watch.query["resourceVersion"] == "110"  # the bookmark moved it
        assert victims(source, "a", "b", "c", "d") == ["a", "b", "c"]
        assert source.describe()["resourceVersion"] == "110"
        assert source.metrics() == {
            "synced": 1.0,
            "objects": 3.0,
            "watch_restarts": 0.0,  # lightkube's own resumption, not a restart of ours
            "relists": 0.0,
        }
        assert len(api.of("list")) == 2  # no relist


async def test_a_silent_watch_is_restarted_at_its_deadline(
    api: FakeApiServer, tmp_path: Path
) -> None:
    """lightkube sets no read timeout on a watch: a connection that died without a word (or a
    server that never ends the stream) would hang it for good. Each watch has a deadline."""
    url = await api.start()
    source = KubePdbSource(
        write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}),
        backoff=Backoff(initial=0.01, maximum=0.02),
        watch_timeout_seconds=(0.2, 0.3),
    )
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    api.watches.put_nowait(Stream([event("MODIFIED", pdb("a", "7", 1))], end="hang"))
    async with running(source):
        again = await api.wait_requests("watch", 2)
        assert again.query["resourceVersion"] == "7"
        assert source.metrics()["watch_restarts"] == 1.0
        assert source.describe()["lastError"] is None  # a deadline is no failure
        assert len(api.of("list")) == 1
        assert victims(source, "a") == ["a"]


async def test_broken_stream_resumes_from_last_resource_version(
    api: FakeApiServer, tmp_path: Path
) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        api.lists.put_nowait(page([pdb("z", "1", 0)], "99"))  # the probe's one object
        api.watches.put_nowait(
            Stream([event("ADDED", pdb("b", "6", 0)), bookmark("9")], end="break")
        )
        resumed = await api.wait_requests("watch", 2)
        assert resumed.query["resourceVersion"] == "9"
        # Resumed, not relisted: one object listed first, to prove the collection answers.
        assert [r.query.get("limit") for r in api.of("list")] == ["500", "1"]
        assert victims(source, "a", "b") == []  # the probe's object reaches no store
        assert source.describe()["lastError"]  # the break was recorded
        assert source.metrics()["watch_restarts"] == 1.0
        assert source.ready()

        # A line that is not JSON is treated like a break: resume from the last good event.
        api.lists.put_nowait(page([], "99"))
        api.watches.put_nowait(
            Stream([event("MODIFIED", pdb("a", "12", 1)), {"oops": 1}], end="close")
        )
        api.watches.put_nowait(Stream([], end="hang"))
        assert (await api.wait_requests("watch", 3)).query["resourceVersion"] == "12"
        assert victims(source, "a", "b") == ["a"]


async def test_http_410_on_watch_relists(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        api.lists.put_nowait(page([pdb("b", "18", 0)], "20"))
        api.watches.put_nowait(Reply(410, status_body(410, "Gone", "too old resource version")))
        after = await api.wait_requests("watch", 2)
        relist = api.of("list")[1]
        assert relist.query == {"limit": "500"}  # a fresh list, not a continuation
        assert after.query["resourceVersion"] == "20"
        assert victims(source, "a", "b") == ["a"]  # the relist replaced the whole set
        assert source.metrics()["relists"] == 1.0


async def test_error_event_410_relists(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        api.lists.put_nowait(page([pdb("c", "28", 1)], "30"))
        api.watches.put_nowait(
            Stream(
                [
                    event("ADDED", pdb("b", "6", 0)),
                    event("ERROR", status_body(410, "Expired", "too old resource version: 5 (6)")),
                ],
                end="hang",
            )
        )
        after = await api.wait_requests("watch", 2)
        assert len(api.of("list")) == 2
        assert after.query["resourceVersion"] == "30"
        assert victims(source, "a", "b", "c") == ["a", "b", "c"]
        assert source.describe()["count"] == 1
        assert source.metrics()["relists"] == 1.0


async def test_other_errors_back_off_and_resume(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    api.lists.put_nowait(Reply(500, status_body(500, "InternalError", "etcd is down")))
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        assert len(api.of("list")) == 2
        assert source.ready()
        assert source.describe()["lastError"] is None  # cleared by the successful list
        # A non-410 ERROR event: retry the watch from the same resourceVersion, no relist
        # (one object listed first: the probe that the collection answers again).
        api.lists.put_nowait(page([], "7"))
        api.watches.put_nowait(
            Stream([event("ERROR", status_body(500, "InternalError", "boom"))], end="hang")
        )
        again = await api.wait_requests("watch", 2)
        assert again.query["resourceVersion"] == "5"
        assert [r.query.get("limit") for r in api.of("list")] == ["500", "500", "1"]
        assert "boom" in (source.describe()["lastError"] or "")


async def test_not_ready_until_first_list(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    async with running(source):
        await api.wait_requests("list", 1)  # the list hangs: nothing queued yet
        assert not source.ready()
        assert victims(source, "a") == []  # cannot prove the disruption is allowed
        api.lists.put_nowait(page([], "1"))
        await api.wait_requests("watch", 1)
        assert source.ready()
        assert victims(source, "a") == ["a"]


async def test_undecodable_objects_are_skipped(api: FakeApiServer, tmp_path: Path) -> None:
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    bad = pdb("bad", "2", 0)
    bad["status"]["disruptionsAllowed"] = "lots"
    api.lists.put_nowait(page([bad, pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        assert source.describe()["count"] == 1
        assert victims(source, "a", "bad") == ["bad"]


async def test_unreadable_kubeconfig_is_retried(tmp_path: Path) -> None:
    source = fast_source(str(tmp_path / "missing"))
    async with running(source):
        await wait_until(lambda: source.describe()["lastError"] is not None)
        assert "cannot read kubeconfig" in source.describe()["lastError"]
        assert not source.ready()


# --- TLS, the service account and kubeconfig credentials ------------------------------------


async def test_in_cluster_https_and_token_rotation(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_contained(tmp_path, "apiserver")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    url = await api.start(server_tls)
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("token-1\n")
    (sa / "namespace").write_text("volcano-system")
    shutil.copy(cert, sa / "ca.crt")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", url.rsplit(":", 1)[1])
    source = KubePdbSource(
        load_config=lambda: in_cluster_config(str(sa)),
        backoff=Backoff(initial=0.01, maximum=0.02),
    )
    api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        assert api.of("list")[0].headers["authorization"] == "Bearer token-1"
        assert source.describe()["server"] == url
        # The kubelet rotated the token, and the old one expired: the next request is refused,
        # the file read again and the request sent again, unseen by the reflector.
        (sa / "token").write_text("token-2\n")
        api.rejected_tokens.add("Bearer token-1")
        api.watches.put_nowait(Stream([bookmark("7")], end="close"))
        refused, again = await api.wait_requests("watch", 2), await api.wait_requests("watch", 3)
        assert refused.headers["authorization"] == "Bearer token-1"
        assert again.headers["authorization"] == "Bearer token-2"
        assert again.query["resourceVersion"] == "7"
        assert source.describe()["lastError"] is None


async def test_kubeconfig_inline_ca_and_client_certificate(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``*-data`` fields reach ``ssl`` through in-memory files (Linux): no temporary file
    holds the client key, and a read-only root filesystem needs no writable /tmp."""
    if hasattr(os, "memfd_create"):

        def read_only_root(*args: Any, **kwargs: Any) -> Any:
            raise OSError(errno.EROFS, "no temporary file may be written")

        monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only_root)
    server_cert, server_key = self_contained(tmp_path, "apiserver")
    client_cert, client_key = self_contained(tmp_path, "client")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(server_cert, server_key)
    server_tls.verify_mode = ssl.CERT_REQUIRED  # client certificate authentication
    server_tls.load_verify_locations(client_cert)
    url = await api.start(server_tls)

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    config = write_kubeconfig(
        tmp_path / "kc",
        url,
        {"client-certificate-data": b64(client_cert), "client-key-data": b64(client_key)},
        {"certificate-authority-data": b64(server_cert)},
    )
    source = fast_source(config)
    api.lists.put_nowait(page([pdb("a", "3", 1)], "5"))
    async with running(source):
        await api.wait_requests("watch", 1)
        listed = api.of("list")[0]
        assert "authorization" not in listed.headers
        assert dict(x[0] for x in listed.peer_cert["subject"])["commonName"] == "client"
        assert victims(source, "a") == ["a"]
        assert source.reflector.config is not None
        assert source.reflector.config.memory_files == ()  # released once the client had them


async def test_https_with_an_unknown_ca_fails_and_retries(
    api: FakeApiServer, tmp_path: Path
) -> None:
    server_cert, server_key = self_contained(tmp_path, "apiserver")
    other_ca, _ = self_contained(tmp_path, "other")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(server_cert, server_key)
    url = await api.start(server_tls)
    config = write_kubeconfig(
        tmp_path / "kc", url, {"token": "t"}, {"certificate-authority": str(other_ca)}
    )
    source = fast_source(config)
    async with running(source):
        await wait_until(
            lambda: "CERTIFICATE_VERIFY_FAILED" in (source.describe()["lastError"] or "")
        )
        assert not source.ready()


def test_kubeconfig_proxy_url_and_relative_token_file(tmp_path: Path) -> None:
    config = kubeconfig_config(
        write_kubeconfig(
            tmp_path / "kc",
            "http://127.0.0.1:1",
            {"token": "inline", "tokenFile": "token"},
            {"proxy-url": "http://proxy:3128"},
        )
    )
    assert config.server == "http://127.0.0.1:1"
    assert config.proxy == "http://proxy:3128"
    assert config.config.user is not None
    # Beside the kubeconfig, as client-go resolves it, not in the working directory.
    assert config.config.user.token_file == str((tmp_path / "token").resolve())


async def test_token_file_wins_over_token(api: FakeApiServer, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    url = await api.start()
    user = {"token": "inline", "tokenFile": "token"}
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, user, {}))
    api.lists.put_nowait(page([], "1"))
    async with running(source):
        await api.wait_requests("watch", 1)
        assert api.of("list")[0].headers["authorization"] == "Bearer from-file"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("[]", "not a mapping"),
        ("{}", "has no 'clusters'"),
        ('{"clusters": [], "contexts": []}', "No current context"),
        ('{"current-context": "x", "contexts": [], "clusters": []}', "Context 'x' not found"),
        (
            '{"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c"}}],'
            ' "clusters": []}',
            "cluster or user 'c' not found",
        ),
        (
            '{"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c"}}],'
            ' "clusters": [{"name": "c", "cluster": {}}]}',
            "no server",
        ),
    ],
    ids=[
        "not a mapping",
        "no clusters",
        "no current context",
        "missing context",
        "missing cluster",
        "no server",
    ],
)
def test_kubeconfig_errors(tmp_path: Path, doc: str, message: str) -> None:
    path = tmp_path / "kc"
    path.write_text(doc)
    with pytest.raises(KubeconfigError, match=message):
        kubeconfig_config(str(path))


def test_in_cluster_config_needs_the_environment_and_the_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeconfigError, match="token"):
        in_cluster_config(str(tmp_path))
    (tmp_path / "token").write_text("t")
    (tmp_path / "namespace").write_text("volcano-system")
    assert in_cluster_config(str(tmp_path)).server == "https://[fd00::1]:443"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(KubeconfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_config(str(tmp_path))


def test_backoff_doubles_its_cap_and_waits_between_half_and_all_of_it() -> None:
    backoff = Backoff(initial=1.0, maximum=8.0)
    for cap in (1.0, 2.0, 4.0, 8.0, 8.0, 8.0):
        wait = backoff.next()
        assert cap / 2 <= wait <= cap, (cap, wait)
    backoff.reset()
    assert 0.5 <= backoff.next() <= 1.0


KUBECONFIG_TEXT = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def test_no_kubeconfig_outside_a_pod_follows_client_gos_default_rules(tmp_path: Path) -> None:
    """Issue 24: caldera replay of a source: kubernetes recording on a workstation waited 30 s
    for an in-cluster config that cannot exist; $KUBECONFIG, then ~/.kube/config, as kubectl."""
    from plugins.pdb.kube import KubeconfigError, default_config

    named = tmp_path / "named"
    named.write_text(KUBECONFIG_TEXT)
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(KUBECONFIG_TEXT.replace("10.0.0.1", "10.0.0.2"))
    from_env = default_config({"KUBECONFIG": f"{tmp_path / 'missing'}:{named}"}, str(home))
    assert from_env.server == "https://10.0.0.1:6443"
    assert default_config({}, str(home)).server == "https://10.0.0.2:6443"
    with pytest.raises(KubeconfigError, match="no cluster"):
        default_config({}, str(tmp_path / "nobody"))


async def test_a_failing_collection_counts_its_errors_until_it_answers_again(
    api: FakeApiServer, tmp_path: Path
) -> None:
    """What cluster mode's staleness reads (issue 49): errors in a row and since when, by
    kind; a quiet watch is no failure, and after one the collection is proven reachable by a
    list of one object, not by waiting for an event."""
    url = await api.start()
    source = fast_source(write_kubeconfig(tmp_path / "kc", url, {"token": "t"}, {}))
    status = source.reflector.status
    api.lists.put_nowait(Reply(500, status_body(500, "InternalError", "etcd is down")))
    api.lists.put_nowait(Reply(403, status_body(403, "Forbidden", "no list on pdbs")))
    async with running(source):
        await api.wait_requests("list", 2)
        await wait_until(lambda: status.errors_in_a_row == 2)
        assert status.failing_since is not None
        assert status.errors == {"server_error": 1, "forbidden": 1}
        api.lists.put_nowait(page([pdb("a", "3", 0)], "5"))
        await api.wait_requests("watch", 1)
        assert (status.errors_in_a_row, status.failing_since) == (0, None)
        # The watch breaks: failing until the probe's list of one object answers.
        api.watches.put_nowait(Stream([], end="break"))
        await wait_until(lambda: status.errors_in_a_row == 1)
        assert status.errors["stream"] == 1
        api.lists.put_nowait(page([], "6"))
        await api.wait_requests("watch", 2)
        await wait_until(lambda: status.failing_since is None)
