"""Two listeners over real sockets (app/server/listeners.py): the verbs on loopback, the probes and
metrics on a port of their own that serves nothing else; both stop on SIGTERM with exit 0."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from app.commands.cli import main
from app.server import listeners
from tests.examples import example_bytes
from tests.service.conftest import caldera_command, free_port


async def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "caldera.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*caldera_command(), "serve", *args], stdout=out, stderr=subprocess.STDOUT
        )
    return process, log


async def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    async with httpx.AsyncClient(timeout=1.0) as client:
        for _ in range(200):
            assert process.poll() is None, log.read_text()
            try:
                if (await client.get(f"{url}/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"not healthy: {log.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()


async def test_verbs_on_one_listener_probes_and_metrics_on_the_other(tmp_path: Path) -> None:
    verb_port, health_port = free_port(), free_port()
    process, log = await start(
        tmp_path,
        *("--host", "127.0.0.1", "--port", str(verb_port)),
        *("--health-host", "127.0.0.1", "--health-port", str(health_port)),
    )
    verbs, health = f"http://127.0.0.1:{verb_port}", f"http://127.0.0.1:{health_port}"
    try:
        await wait_healthy(health, process, log)
        snapshot = example_bytes("head", "onSessionOpen.request.json")
        async with httpx.AsyncClient(timeout=5.0) as client:
            answered = await client.post(f"{verbs}/onSessionOpen", content=snapshot)
            assert answered.status_code == 200 and answered.json() == {}
            for path in ("/livez", "/healthz", "/readyz", "/metrics"):
                assert (await client.get(f"{health}{path}")).status_code == 200, path
                assert (await client.get(f"{verbs}{path}")).status_code == 200, path
            # HEAD is how load balancers and `curl -I` probe: 200 and no body, not 405
            for path in ("/livez", "/healthz", "/readyz"):
                for base in (health, verbs):
                    probed = await client.head(f"{base}{path}")
                    assert (probed.status_code, probed.content) == (200, b""), (base, path)
                    assert probed.headers["content-type"] == "application/json"
            assert (await client.get(f"{health}/livez")).json() == {"status": "ok"}
            metrics = (await client.get(f"{health}/metrics")).text
            assert 'caldera_responses_total{code="200",verb="onSessionOpen"} 1.0' in metrics
            refused = await client.post(f"{health}/onSessionOpen", content=snapshot)
            assert refused.status_code == 404
            assert f"the extender verbs are on 127.0.0.1:{verb_port}" in refused.json()["error"]
            for path in ("/debug/session", "/docs", "/openapi.json"):
                assert (await client.get(f"{health}{path}")).status_code == 404, path
                assert (await client.get(f"{verbs}{path}")).status_code == 200, path
    finally:
        code = stop(process)
    assert code == 0, log.read_text()
    for said in ("Started server process", "Finished server process"):  # both servers said it
        assert log.read_text().count(said) == 1, said
    for port in (verb_port, health_port):
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, f"{port} still listening"


@pytest.mark.parametrize("taken_listener", ["health", "verbs"])
async def test_a_taken_port_fails_the_start_cleanly(tmp_path: Path, taken_listener: str) -> None:
    """Either listener's port in use: exit 3 and uvicorn's one line naming the address, no
    traceback (a health port in use printed 97 lines: CancelledError, SystemExit: 3, "Task
    exception was never retrieved")."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = (busy, free_port()) if taken_listener == "verbs" else (free_port(), busy)
        process, log = await start(
            tmp_path,
            *("--port", str(ports[0])),
            *("--health-host", "127.0.0.1", "--health-port", str(ports[1])),
        )
        deadline = time.monotonic() + 20
        while process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert process.returncode == 3, text
    errors = [line for line in text.splitlines() if '"level":"error"' in line]
    assert len(errors) == 1, text
    assert f"('127.0.0.1', {busy}): address already in use" in errors[0]
    for noise in ("Traceback", "CancelledError", "never retrieved"):
        assert noise not in text, text
    assert text.count("Started server process") == 1, text


@pytest.mark.parametrize(
    ("host", "tls", "warned"),
    [
        ("127.0.0.1", False, False),
        ("::1", False, False),
        ("localhost", False, False),
        ("127.0.0.5", False, False),
        ("0.0.0.0", False, True),
        ("10.1.2.3", False, True),
        ("caldera.volcano-system", False, True),
        ("0.0.0.0", True, False),
    ],
)
def test_the_verbs_beyond_loopback_without_tls_are_warned(
    host: str, tls: bool, warned: bool
) -> None:
    warning = listeners.exposure_warning(host, tls)
    assert (warning is not None) == warned
    if warning:
        assert f"listen on {host} without TLS" in warning and "Security" in warning


def test_caldera_serve_logs_the_exposure_warning_at_start(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    served: list[object] = []
    monkeypatch.setattr(listeners, "run", lambda verbs, health, factory: served.append(verbs))
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    monkeypatch.setattr("app.server.logs.configure_logging", lambda *args: None)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 1  # never started
    assert served, "the server was not built"
    assert any("listen on 0.0.0.0 without TLS" in r.message for r in caplog.records)


def test_the_health_listener_needs_its_own_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "9000", "--health-port", "9000"]) == 2
    assert "--health-port 9000 equals --port: the two listeners need two different numbers" in (
        capsys.readouterr().err
    )
