"""A stand-in for the API server's collections that ``sessionState`` watches (nodes, pods,
podgroups, queues, resourcequotas, priorityclasses): each LIST is answered from ``objects``
once ``listing`` is set (so a test can hold the first list back), and each WATCH is an open
stream that sends nothing, as a quiet cluster's does."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from app.cluster_state.store import COLLECTIONS


def collection_path(group: str, version: str, plural: str) -> str:
    return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"


PATHS = {
    collection_path(c.group, c.version, c.plural): (name, c) for name, c in COLLECTIONS.items()
}


@dataclass
class ClusterApi:
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Objects by collection (the store's names: pods, nodes, podgroups, queues, quotas,
    priority_classes)."""
    listing: asyncio.Event = field(default_factory=asyncio.Event)
    lists: list[str] = field(default_factory=list)
    """The collections listed, in order."""
    url: str = ""
    _server: asyncio.Server | None = None
    _handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    async def start(self, port: int = 0) -> str:
        """Serve on ``port`` (0: any free one; the same port again to restart a stopped API)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
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

    def kubeconfig(self, path: Path) -> str:
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "contexts": [{"name": "test", "context": {"cluster": "local", "user": "tester"}}],
            "clusters": [{"name": "local", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "t"}}],
        }  # fmt: skip
        path.write_text(json.dumps(doc))
        return str(path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            _, target, _ = (await reader.readline()).decode().split(" ", 2)
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            url = urlsplit(target)
            query = dict(parse_qsl(url.query))
            known = PATHS.get(url.path)
            if known is None:
                await self._reply(writer, 404, {"kind": "Status", "code": 404})
            elif query.get("watch") in ("1", "true"):
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                await writer.drain()
                await asyncio.Event().wait()  # a quiet stream, until the client goes away
            else:
                await self.listing.wait()
                name, collection = known
                self.lists.append(name)
                items = [_versioned(o) for o in self.objects.get(name, [])]
                await self._reply(
                    writer,
                    200,
                    {
                        "kind": f"{collection.kind}List",
                        "apiVersion": collection.version,
                        "metadata": {"resourceVersion": "7"},
                        "items": items,
                    },
                )
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()


def _versioned(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {"resourceVersion": "5", **obj.get("metadata", {})}
    return {**obj, "metadata": meta}
