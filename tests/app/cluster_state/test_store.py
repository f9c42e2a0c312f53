"""The store behind the reflectors, fed a fake event stream: list, watch, relist on 410, and the
per-session frozen view."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from app.cluster_state.store import COLLECTIONS, ClusterStore
from plugins.pdb.kube import ClusterConfig
from schemas.api import TaskInfo, TaskStatus
from tests.app.cluster_state.objects import node, pod, podgroup, queue, quota


def _gone() -> httpx2.HTTPStatusError:
    request = httpx2.Request("GET", "https://apiserver.invalid/api/v1/pods")
    return httpx2.HTTPStatusError(
        "410 Gone", request=request, response=httpx2.Response(410, request=request)
    )


class Listing:
    def __init__(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.items, self.resourceVersion = items, resource_version

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async def each() -> AsyncIterator[dict[str, Any]]:
            for item in self.items:
                yield item

        return each()


class FakeClient:
    """lightkube's AsyncClient as the reflector uses it: scripted LIST answers and WATCH
    streams; a stream that is a BaseException instance is raised when reached."""

    def __init__(self, lists: list[Listing], watches: list[list[Any]]) -> None:
        self.lists, self.watches = lists, watches
        self.watched_from: list[str] = []
        self.idle = asyncio.Event()

    def list(self, resource: Any, namespace: str, chunk_size: int) -> Listing:
        return self.lists.pop(0)

    async def watch(
        self, resource: Any, namespace: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        self.watched_from.append(resource_version)
        if not self.watches:
            self.idle.set()
            await asyncio.Event().wait()  # a quiet stream, until cancelled
        for step in self.watches.pop(0):
            if isinstance(step, BaseException):
                raise step
            yield step

    async def close(self) -> None:
        pass


def _rv(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


def _unused_config() -> ClusterConfig:
    raise AssertionError("the fake client is already connected")


async def _run_pods_reflector(store: ClusterStore, client: FakeClient) -> None:
    reflector = next(r for r in store.reflectors(_unused_config) if r.name == "pods")
    reflector._client = client  # type: ignore[assignment]
    task = asyncio.create_task(reflector.run())
    await asyncio.wait_for(client.idle.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_list_watch_and_relist_after_gone() -> None:
    store = ClusterStore()
    client = FakeClient(
        lists=[
            Listing([_rv(pod("a"), "5"), _rv(pod("b"), "6")], "10"),
            Listing([_rv(pod("c", phase="Running", node="n1"), "20")], "20"),
        ],
        watches=[
            [
                ("MODIFIED", _rv(pod("a", node="n1"), "11")),
                ("DELETED", _rv(pod("b"), "12")),
                _gone(),
            ],
        ],
    )
    asyncio.run(_run_pods_reflector(store, client))
    # The first watch starts at the list's version; after 410 the store is relisted whole
    # (a's update and b's deletion are superseded), and the watch resumes at the new list's.
    assert client.watched_from == ["10", "20"]
    assert sorted(store.pods.freeze()) == ["ns1/c"]
    assert store.pods.freeze()["ns1/c"].node_name == "n1"


def test_a_relist_after_gone_keeps_what_did_not_change() -> None:
    """The watch saw a's update, missed b's and c's deletion: the relist keeps a as decoded
    (same UID and version), decodes b's new version and drops c; the change log has only
    those."""
    store = ClusterStore()
    client = FakeClient(
        lists=[
            Listing([_rv(pod("a"), "5"), _rv(pod("b"), "6"), _rv(pod("c"), "7")], "10"),
            Listing([_rv(pod("a", node="n1"), "11"), _rv(pod("b", node="n2"), "14")], "20"),
        ],
        watches=[[("MODIFIED", _rv(pod("a", node="n1"), "11")), _gone()]],
    )
    kept: list[Any] = []

    def logged_from_the_watch() -> None:
        kept.append(store.pods.freeze()["ns1/a"])
        kept.append(store.pods.mark())

    watched = client.watch

    async def watch_then_note(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async for event in watched(*args, **kwargs):
            yield event
            logged_from_the_watch()

    client.watch = watch_then_note  # type: ignore[method-assign]
    asyncio.run(_run_pods_reflector(store, client))
    a_after_watch, mark = kept[0], kept[1]
    assert store.pods.freeze()["ns1/a"] is a_after_watch
    assert store.pods.freeze()["ns1/b"].node_name == "n2"
    assert sorted(store.pods.freeze()) == ["ns1/a", "ns1/b"]
    assert store.pods.mark().since(mark) == [("ns1/b", True), ("ns1/c", False)]


def test_watch_events_update_the_store() -> None:
    store = ClusterStore()
    client = FakeClient(
        lists=[Listing([_rv(pod("a"), "5"), _rv(pod("b"), "6")], "10")],
        watches=[
            [
                ("MODIFIED", _rv(pod("a", node="n1"), "11")),
                ("DELETED", _rv(pod("b"), "12")),
                ("ADDED", _rv(pod("d"), "13")),
                ("ADDED", {"metadata": {"name": "bad", "namespace": "ns1"}, "spec": []}),
            ],
        ],
    )
    asyncio.run(_run_pods_reflector(store, client))
    assert client.watched_from == ["10", "13"]  # the stream ended: resumed at the last event
    assert sorted(store.pods.freeze()) == ["ns1/a", "ns1/d"]
    assert store.pods.freeze()["ns1/a"].node_name == "n1"
    assert store.pods.undecodable == 1


def test_a_frozen_view_does_not_move() -> None:
    store = ClusterStore()
    store.pods.replace({"ns1/a": pod("a"), "ns1/b": pod("b")})
    frozen = store.freeze()
    store.pods.upsert("ns1/a", pod("a", node="n1"))
    store.pods.delete("ns1/b")
    store.pods.upsert("ns1/c", pod("c"))
    assert sorted(frozen.pods) == ["ns1/a", "ns1/b"]
    assert frozen.pods["ns1/a"].node_name == ""
    later = store.freeze()
    assert sorted(later.pods) == ["ns1/a", "ns1/c"]
    assert later.pods["ns1/a"].node_name == "n1"


def test_a_freeze_without_changes_copies_nothing() -> None:
    store = ClusterStore()
    store.nodes.replace({"n1": node("n1")})
    assert store.freeze().nodes is not None
    first, second = store.nodes.freeze(), store.nodes.freeze()
    assert first == second and len(first) == 1


def test_every_collection_of_the_cache_is_watched() -> None:
    names = {r.name for r in ClusterStore().reflectors(_unused_config)}
    assert names == {c.plural for c in COLLECTIONS.values()}


def test_sessions_see_allocations_until_the_cluster_binds_them() -> None:
    store = ClusterStore()
    store.nodes.replace({"n1": node("n1")})
    store.queues.replace({"q1": queue("q1")})
    store.podgroups.replace({"ns1/pg": podgroup("pg")})
    store.pods.replace({"ns1/p": pod("p", group="pg", requests={"cpu": "1"})})

    first = store.open_session().snapshot
    assert first.Jobs["ns1/pg"].Tasks["ns1-p"].Status == TaskStatus.Pending  # type: ignore[index]
    store.allocate(TaskInfo(UID="ns1-p", Status=TaskStatus.Allocated, NodeName="n1"))
    store.close_session()

    second = store.open_session().snapshot
    assert second.Jobs["ns1/pg"].Tasks["ns1-p"].Status == TaskStatus.Binding  # type: ignore[index]
    assert second.Nodes["n1"].Used.MilliCPU == 1000  # type: ignore[index, union-attr]
    store.close_session()

    store.pods.upsert("ns1/p", pod("p", group="pg", node="n1", requests={"cpu": "1"}))
    third = store.open_session().snapshot
    assert third.Jobs["ns1/pg"].Tasks["ns1-p"].Status == TaskStatus.Bound  # type: ignore[index]
    assert len(store.overlay) == 0


def test_a_namespace_keeps_its_entry_when_its_last_quota_goes() -> None:
    """``deleteResourceQuota`` empties the namespace's collection but keeps it: Volcano's
    snapshot still names the namespace, with no quota."""
    store = ClusterStore()
    store.quotas.replace({"ns1/q": quota("q", "ns1", {"cpu": "1"})})
    assert store.open_session().snapshot.NamespaceInfo["ns1"].QuotaStatus  # type: ignore[index]
    store.quotas.delete("ns1/q")
    infos = store.open_session().snapshot.NamespaceInfo or {}
    assert infos["ns1"].QuotaStatus == {}
    assert list(infos) == ["ns1"]
