"""caldera serve over TLS and mutual TLS, with certificates made for the test
(``tests/certificates.py``: a CA, a server certificate for 127.0.0.1, a client certificate)."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from app.commands.cli import main
from tests.certificates import server_and_client
from tests.service.conftest import start_caldera


def client_context(directory: Path, with_certificate: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(directory / "ca.pem"))
    if with_certificate:
        context.load_cert_chain(directory / "client.pem", directory / "client.key")
    return context


async def test_tls_serves_https_and_refuses_plain_http(tmp_path: Path) -> None:
    server_and_client(tmp_path)
    server = await start_caldera(
        None,
        tmp_path,
        {
            "CALDERA_SSL_CERTFILE": str(tmp_path / "server.pem"),
            "CALDERA_SSL_KEYFILE": str(tmp_path / "server.key"),
        },
        tls=client_context(tmp_path),
    )
    try:
        assert server.url.startswith("https://")
        response = await server.client.post("/jobReady", content=b'{"job": {"UID": "j"}}')
        assert response.status_code == 200 and response.json() == {"status": True}
        # A body spread over many TLS records is received into its buffer by the stand-in
        # protocol (app/server/connections.py) through the TLS layer; the connection then reads the
        # next request.
        padding = "x" * (3 << 20)
        large = f'{{"job": {{"UID": "j", "Name": "{padding}"}}}}'.encode()
        for _ in range(2):
            response = await server.client.post("/jobReady", content=large)
            assert response.status_code == 200 and response.json() == {"status": True}
        response = await server.client.post("/jobReady", content=b'{"job": {"UID": "j"}}')
        assert response.status_code == 200
        async with httpx.AsyncClient(timeout=5) as plain:
            with pytest.raises(httpx.TransportError):
                await plain.get(f"{server.url.replace('https://', 'http://')}/healthz")
    finally:
        assert await server.stop() == 0


async def test_mutual_tls_requires_a_client_certificate_from_the_ca(tmp_path: Path) -> None:
    server_and_client(tmp_path)
    server = await start_caldera(
        None,
        tmp_path,
        {
            "CALDERA_SSL_CERTFILE": str(tmp_path / "server.pem"),
            "CALDERA_SSL_KEYFILE": str(tmp_path / "server.key"),
            "CALDERA_SSL_CLIENT_CA": str(tmp_path / "ca.pem"),
        },
        tls=client_context(tmp_path, with_certificate=True),
    )
    try:
        assert (await server.client.get("/healthz")).json() == {"status": "ok"}
        async with httpx.AsyncClient(verify=client_context(tmp_path), timeout=5) as client:
            with pytest.raises(httpx.TransportError):
                await client.get(f"{server.url}/healthz")
    finally:
        assert await server.stop() == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--ssl-certfile", "server.pem"], "go together"),
        (["--ssl-client-ca", "ca.pem"], "--ssl-client-ca needs --ssl-certfile and --ssl-keyfile"),
        (["--ssl-certfile", "missing.pem", "--ssl-keyfile", "missing.key"], "no such file"),
    ],
)
def test_incomplete_tls_settings_exit_2(
    arguments: list[str], message: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.pem").write_text("")
    (tmp_path / "ca.pem").write_text("")
    assert main(["serve", *arguments]) == 2
    assert message in capsys.readouterr().err
