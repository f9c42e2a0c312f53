"""``python -m bench profile WORKLOAD``: profile Caldera's in-process request path.

The ASGI app from ``app.server.main.create_app`` is driven directly (no sockets, no uvicorn HTTP
parsing): routing, body reading, decoding, plugins and response encoding are what is left.
The body arrives as one chunk, as the server's direct body read delivers it
(``app/server/connections.py``). pyinstrument writes an HTML report and prints a text summary.
``--server`` profiles the real server instead (uvicorn and the socket included).

Each workload runs under its own plugin configuration (bench/configs.py, as ``bench run``) after
the onSessionOpen it needs, unless ``--config`` names another file.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bench import configs, servers
from bench import run as runmod
from bench.asgi import drive

ALIASES = {
    "predicate": "predicate-c1",
    "prioritize": "prioritize-c1",
    "preemptable": "preemptable-c1",
    "allocate": "allocate-c1",
    "jobReady": "jobReady-c1",
    "onSessionOpen": "onSessionOpen-100n",
}


def _workload(workload: str, config: str | None) -> tuple[runmod.Load, str] | None:
    """The named workload of the quick suite (the full one for onSessionOpen-500n), its files
    written and its metrics samples fresh, and the configuration file to run it with:
    ``config``, or else the workload's own (bench/configs.py)."""
    name = ALIASES.get(workload, workload)
    mode = "full" if name == "onSessionOpen-500n" else "quick"
    suite = runmod.build_suite(mode, runmod.TMP / mode)
    runmod.retime(suite)
    loads = {ld.name: ld for ld in suite.loads}
    if name not in loads:
        known = ", ".join(sorted(set(loads) | set(ALIASES)))
        print(f"unknown workload {workload!r}; choose from: {known}", file=sys.stderr)
        return None
    ld = loads[name]
    if config is None:
        own = configs.CONFIGS[ld.config]
        config = str(configs.write(own, runmod.TMP, suite.files))
        print(f"config: {configs.describe(own)} ({config})")
    return ld, config


def main(
    workload: str, requests: int, config: str | None, out: str | None, server: bool = False
) -> int:
    if server:
        return main_server(workload, requests, config, out)
    from pyinstrument import Profiler

    sys.path.insert(0, str(servers.REPO))
    from app.config import load_config
    from app.server.main import create_app
    from app.server.options import ServeOptions

    found = _workload(workload, config)
    if found is None:
        return 2
    ld, config = found
    name = ld.name
    body = Path(ld.body).read_bytes()
    app = create_app(ServeOptions.of(load_config(config)))
    n = requests or max(3, min(2000, int(2e8 / max(1, len(body)))))

    async def go() -> list[float]:
        async with app.router.lifespan_context(app):
            await runmod.until_ready(app)
            if ld.setup:
                await drive(app, "/onSessionOpen", Path(ld.setup).read_bytes(), 1)
            await drive(app, "/" + ld.verb, body, min(n, 5))  # warm-up
            profiler = Profiler(interval=0.0005, async_mode="enabled")
            profiler.start()
            times = await drive(app, "/" + ld.verb, body, n)
            profiler.stop()
            out_path = Path(out) if out else runmod.RESULTS / f"profile-{name}.html"
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(profiler.output_html())
            print(profiler.output_text(unicode=True, color=False, show_all=False))
            print(f"HTML report: {out_path}")
            return times

    times = asyncio.run(go())
    times.sort()
    print(
        f"{name}: {len(times)} in-process calls of {len(body) / 1024:.0f} KiB; p50 {times[len(times) // 2] * 1e3:.3f} ms, "
        f"mean {sum(times) / len(times) * 1e3:.3f} ms (under the profiler)"
    )
    return 0


def main_server(workload: str, requests: int, config: str | None, out: str | None) -> int:
    """Profile the real server (uvicorn included): ``caldera serve`` under pyinstrument on the
    server core, driven by bench/loadgen with one request in flight; SIGINT ends it and
    pyinstrument writes its report."""
    import os
    import signal
    import subprocess

    from bench import gobuild

    found = _workload(workload, config)
    if found is None:
        return 2
    ld, config = found
    name = ld.name
    lg = gobuild.build(go_extender=False)["loadgen"]
    out_path = Path(out) if out else runmod.RESULTS / f"profile-server-{name}.txt"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pyinstrument = [sys.executable, "-m", "pyinstrument", "-r", "text", "--no-color", "--show-all"]
    srv = servers.caldera_server(
        Path(config),
        runmod.TMP / "logs" / "profile-server.log",
        [*pyinstrument, "-o", str(out_path), "-m", "app.commands.cli"],
    )
    srv.name = "caldera-profiled"
    srv.start()
    n = requests or max(3, min(2000, int(2e8 / max(1, ld.body_bytes))))
    try:
        srv.wait_ready()
        if ld.setup:
            runmod.post(srv.base, "onSessionOpen", ld.setup)
        res = runmod.loadgen(
            lg,
            runmod.load_plan(srv.base, ld, concurrency=1, requests=n, warmup=2, max_seconds=120),
            timeout=600,
        )
    finally:
        assert srv.proc is not None
        os.killpg(srv.proc.pid, signal.SIGINT)
        try:
            srv.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.stop()
    lat = sorted(res["latencies_us"])
    print(out_path.read_text() if out_path.exists() else f"no profile written; see {srv.log}")
    print(
        f"{name}: {len(lat)} requests over HTTP, p50 {lat[len(lat) // 2] / 1e3:.3f} ms (server under the profiler); "
        f"report: {out_path}"
    )
    return 0
