"""The machine a benchmark ran on (platform, CPUs, load, memory, Go, the commit and whether app/,
plugins/ and schemas/ had uncommitted changes, the hot path's libraries), recorded beside every
result. Its own module so a tool can record it without importing bench.run, which imports the
whole suite (and, through bench.readme, every tool that writes a section)."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from bench import servers


def machine_info() -> dict[str, Any]:
    """What ``machine`` of a results file records."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_at_end": os.getloadavg(),
    }
    if cpu := cpu_model():
        info["cpu"] = cpu
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_GiB"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    with contextlib.suppress(OSError):
        info["hypervisor"] = "yes" if "hypervisor" in Path("/proc/cpuinfo").read_text() else "no"
    for cmd, key in (
        (["go", "version"], "go"),
        (["git", "-C", str(servers.REPO), "rev-parse", "--short", "HEAD"], "commit"),
    ):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            info[key] = subprocess.run(
                cmd, capture_output=True, text=True, timeout=10
            ).stdout.strip()
    try:
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "app", "plugins", "schemas"],
            cwd=servers.REPO,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["worktree_dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        pass
    import msgspec
    import orjson
    import pydantic

    info["libs"] = {
        "msgspec": msgspec.__version__,
        "pydantic": pydantic.__version__,
        "orjson": orjson.__version__,
    }
    return info


def cpu_model() -> str:
    """/proc/cpuinfo's model name, "" where there is none."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


def head_commit() -> str:
    """The checkout's short HEAD commit, "unknown" outside a git checkout."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=servers.REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
