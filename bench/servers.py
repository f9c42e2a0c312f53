"""Start the servers under test on one pinned core, and read their memory from /proc."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVER_CPU = "1"
LOADGEN_CPU = "0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def taskset(cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


@dataclass
class Server:
    name: str
    cmd: list[str]
    port: int
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    config: str = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        logf = open(self.log, "wb")  # noqa: SIM115 - closed with the process
        env = {**os.environ, **self.env}
        for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env.pop(k, None)
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=REPO,
            stdout=logf,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}; log {self.log}:\n"
                    + self.log.read_text(errors="replace")[-3000:]
                )
            try:
                with urllib.request.urlopen(
                    self.base + "/healthz", timeout=1
                ) as r:  # loopback only
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer /healthz within {timeout}s; log {self.log}")

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until /readyz answers 200 (pdb reads its file after start)."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError as exc:  # 503 included
                last = str(exc)
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready within {timeout}s ({last}); log {self.log}")

    def server_pids(self) -> list[int]:
        """The processes doing the work: the whole tree minus launcher processes (uv, taskset)."""
        assert self.proc is not None
        pids = descendants(self.proc.pid)
        work = [p for p in pids if _comm(p) not in ("uv", "taskset")]
        return work or pids

    def rss(self) -> int:
        return sum(_status(p).get("VmRSS", 0) for p in self.server_pids())

    def peak_rss(self) -> int:
        return sum(_status(p).get("VmHWM", 0) for p in self.server_pids())

    def reset_peak(self) -> bool:
        ok = True
        for p in self.server_pids():
            try:
                with open(f"/proc/{p}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                ok = False
        return ok

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # the server runs in its own session started by us: signal that group only
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


def caldera_server(config: Path, log: Path, cmd_prefix: list[str] | None = None) -> Server:
    port = free_port()
    base = cmd_prefix or ["uv", "run", "--no-sync", "caldera"]
    cmd = [
        *taskset(SERVER_CPU),
        *base,
        "serve",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    return Server("caldera", cmd, port, log)


def go_server(binary: Path, log: Path) -> Server:
    port = free_port()
    cmd = [*taskset(SERVER_CPU), str(binary), "-addr", f"127.0.0.1:{port}"]
    return Server("go", cmd, port, log, env={"GOMAXPROCS": "1"})
