"""Service-test fixtures: a real ``caldera serve`` process on a free port, spoken to over TCP."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest_asyncio

STARTUP_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def caldera_command() -> list[str]:
    """The installed console script next to this interpreter, as an operator would run it."""
    script = Path(sys.executable).with_name("caldera")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "app.commands.cli"]


@dataclass
class CalderaProcess:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    verify: ssl.SSLContext | bool = True
    """How the client checks the server's certificate when the URL is https."""
    client: httpx.AsyncClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.AsyncClient(base_url=self.url, timeout=10.0, verify=self.verify)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def stop(self, timeout: float = 10.0) -> int:
        await self.client.aclose()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self.process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


async def start_caldera(
    config_text: str | None,
    workdir: Path,
    extra_env: dict[str, str] | None = None,
    command_prefix: list[str] | None = None,
    tls: ssl.SSLContext | None = None,
    extra_args: list[str] | None = None,
) -> CalderaProcess:
    """``command_prefix`` replaces the ``caldera`` script (tests/service/fault_server.py);
    ``tls`` is the client context for a server serving https (its certificate set in
    ``extra_env``); ``extra_args`` go after serve's own."""
    port = free_port()
    command = [
        *(command_prefix or caldera_command()),
        *("serve", "--port", str(port), "--host", "127.0.0.1"),
        *(extra_args or []),
    ]
    if config_text is not None:
        config_path = workdir / f"caldera-{port}.yaml"
        config_path.write_text(textwrap.dedent(config_text))
        command += ["--config", str(config_path)]
    command += extra_args or []
    log_path = workdir / f"caldera-{port}.log"
    env = {**os.environ, "CALDERA_LOG_FORMAT": "json", **(extra_env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    scheme = "http" if tls is None else "https"
    verify: ssl.SSLContext | bool = True if tls is None else tls
    server = CalderaProcess(f"{scheme}://127.0.0.1:{port}", process, log_path, verify)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    async with httpx.AsyncClient(timeout=1.0, verify=verify) as probe:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"caldera exited with {process.returncode}:\n{server.log()}")
            try:
                if (await probe.get(f"{server.url}/healthz")).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    await server.stop()
    raise RuntimeError(f"caldera did not become healthy in {STARTUP_TIMEOUT}s:\n{server.log()}")


StartCaldera = Callable[[str | None], Awaitable[CalderaProcess]]


@pytest_asyncio.fixture
async def caldera_server(tmp_path: Path) -> AsyncIterator[StartCaldera]:
    """``await caldera_server(config_yaml_text)`` starts a server (None: embedded config);
    every server started is stopped at teardown."""
    started: list[CalderaProcess] = []

    async def start(config_text: str | None) -> CalderaProcess:
        server = await start_caldera(config_text, tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()
