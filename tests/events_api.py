"""A stand-in for the API server's core/v1 events endpoint: it records every create and patch
Caldera's PodGroup Events make (app/events.py) and answers as the API server would."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class EventsApi:
    requests: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    """(method, path, content type, body) of every request, in order."""
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The stored Events by path, as a GET would return them."""
    url: str = ""
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        for writer in list(self._writers):
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await asyncio.sleep(0)  # the handlers see the end of their connections
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
        self._writers.add(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while not writer.is_closing():
                line = await reader.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, value = h.decode().split(":", 1)
                    headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                body = json.loads(raw) if raw else {}
                self.requests.append((method, path, headers.get("content-type", ""), body))
                if method == "POST":  # stored under its name; a PATCH merges into it
                    status, stored = 201, body
                    self.objects[f"{path}/{body['metadata']['name']}"] = stored
                else:
                    status, stored = 200, self.objects[path]
                    stored.update(body)
                answer = json.dumps(stored).encode()
                writer.write(
                    f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
