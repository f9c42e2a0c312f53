"""Hostile input over raw sockets against the real server: every case on its own connection must
be answered with a JSON 4xx (or, for a broken frame, a JSON 4xx and the connection closed),
never a 5xx, never a hang, and leave the server healthy with its open session untouched."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.every_plugin import every_plugin_config
from tests.examples import CAPTURED, example_bytes, example_json
from tests.service.conftest import CalderaProcess, start_caldera
from tests.service.raw_http import RawResponse, address, exchange, post

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_SECONDS = 1.0
"""The server's header and body timeouts here, so stalled cases end quickly."""


@dataclass
class Served:
    server: CalderaProcess
    session: dict[str, Any]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    env = {
        "CALDERA_HEADER_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
        "CALDERA_BODY_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
    }
    workdir: Path = tmp_path_factory.mktemp("hostile")
    server = await start_caldera(every_plugin_config(), workdir, env)
    opened = await server.client.post(
        "/onSessionOpen", content=example_bytes(CAPTURED, "onSessionOpen.request.json")
    )
    assert opened.status_code == 200
    session = (await server.client.get("/debug/session")).json()
    assert session["open"] and session["snapshot"]["tasks"] > 0
    yield Served(server, session)
    assert await server.stop() == 0


def captured(name: str) -> dict[str, Any]:
    body: dict[str, Any] = example_json(CAPTURED, name)
    return body


def compact(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def nested(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def with_evictor(**fields: Any) -> bytes:
    body = captured("preemptable.request.json")
    body["evictor"].update(fields)
    return compact(body)


PREEMPTABLE = compact(captured("preemptable.request.json"))
EVICTEE_NAME = json.dumps(captured("preemptable.request.json")["evictees"][0]["Name"]).encode()

# (case, bytes sent, expected status, whether the connection must close, text in the error)
CASES: list[tuple[str, bytes, int, bool, str]] = [
    (
        "JSON nested 10,000 levels in a key no plugin reads",
        post("/predicate", b'{"task":{"Unread":' + nested(10_000) + b'},"node":{}}'),
        400,
        False,
        "nested too deeply",
    ),
    (
        "JSON nested 10,000 levels in an object a plugin reads",
        post("/jobReady", b'{"job":{"PodGroup":' + nested(10_000) + b"}}"),
        400,
        False,
        "nested too deeply",
    ),
    (
        "arrays nested 10,000 levels",
        post("/prioritize", b'{"task":{"x":' + b"[" * 10_000 + b"]" * 10_000 + b'},"nodes":[]}'),
        400,
        False,
        "nested too deeply",
    ),
    (
        "a NaN token",
        post("/prioritize", b'{"task":{"Priority":NaN},"nodes":[]}'),
        400,
        False,
        "malformed JSON",
    ),
    (
        "an Infinity token",
        post("/jobEnqueueable", b'{"job":{"Priority":Infinity}}'),
        400,
        False,
        "malformed JSON",
    ),
    (
        "a -Infinity token in a resource a plugin reads",
        post("/predicate", b'{"task":{"Resreq":{"MilliCPU":-Infinity}},"node":{}}'),
        400,
        False,
        "malformed JSON",
    ),
    (
        "a Content-Length shorter than the body: the rest is a broken request line",
        post("/jobReady", b'{"job":{"UID":"a"}}', length=5),
        400,
        True,
        "invalid HTTP request",
    ),
    (
        "a Content-Length longer than the body, then silence",
        post("/jobReady", b'{"job":{"UID":"a"}}', length=500),
        408,
        True,
        "not complete within",
    ),
    (
        "a chunked body with a bad chunk size",
        b"POST /predicate HTTP/1.1\r\nHost: caldera\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\n{}\r\n0\r\n\r\n",
        400,
        True,
        "chunk size",
    ),
    (
        "a Content-Length that is not a number",
        b"POST /predicate HTTP/1.1\r\nHost: caldera\r\nContent-Length: ten\r\n\r\n{}",
        400,
        True,
        "invalid HTTP request",
    ),
    ("an empty body", post("/predicate", b""), 400, False, "malformed JSON"),
    ("a JSON array for an object", post("/predicate", b"[]"), 400, False, "Expected `object`"),
    (
        "a JSON string for an object",
        post("/jobEnqueueable", b'"job"'),
        400,
        False,
        "Expected `object`",
    ),
    (
        "a string where priority reads an int",
        post("/preemptable", with_evictor(Priority="high")),
        400,
        False,
        "evictor.Priority",
    ),
    (
        "a 10,000-digit Priority",
        post("/preemptable", PREEMPTABLE.replace(b'"Priority":1', b'"Priority":' + b"9" * 10_000)),
        400,
        False,
        "Priority",
    ),
    (
        "a Priority past Go's int32, which Go's decoder refuses",
        post("/preemptable", with_evictor(Priority=2**31)),
        400,
        False,
        "evictor.Priority",
    ),
    (
        "invalid UTF-8 in an evictee (was a plain-text 500)",
        post("/preemptable", PREEMPTABLE.replace(EVICTEE_NAME, b'"bad-\xff\xfe"', 1)),
        400,
        False,
        "evictees[",
    ),
    (
        "invalid UTF-8 in the evictor",
        post("/preemptable", with_evictor(Name="x").replace(b'"Name":"x"', b'"Name":"\xc3"')),
        400,
        False,
        "malformed JSON",
    ),
    (
        "headers of 1 MiB",
        post("/predicate", b"{}", headers=f"X-Padding: {'a' * (1 << 20)}\r\n"),
        431,
        True,
        "exceed",
    ),
    ("an unknown path", post("/no-such-verb", b"{}"), 404, False, "no such endpoint"),
    (
        "GET on a verb",
        b"GET /predicate HTTP/1.1\r\nHost: caldera\r\n\r\n",
        405,
        False,
        "method not allowed",
    ),
]


async def assert_untouched(served: Served) -> None:
    client = served.server.client
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    session = (await client.get("/debug/session")).json()
    assert session["open"] is True
    assert session["session"] == served.session["session"]
    assert session["snapshot"] == served.session["snapshot"]


def assert_json_error(response: RawResponse, status: int, fragment: str) -> None:
    assert response.status == status, (response.status, response.body[:300])
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert isinstance(error, str) and fragment in error, error


@pytest.mark.parametrize(
    ("data", "status", "closes", "fragment"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_hostile_request_gets_a_json_4xx(
    served: Served, data: bytes, status: int, closes: bool, fragment: str
) -> None:
    response = await exchange(served.server.url, data, timeout=TIMEOUT_SECONDS + 5)
    assert_json_error(response, status, fragment)
    if closes:
        assert response.closes
    await assert_untouched(served)


async def test_body_that_stops_mid_stream_ends_within_the_body_timeout(served: Served) -> None:
    # The client sends half the body and half-closes its side: nothing more can come, the
    # server must neither wait for ever nor answer 5xx.
    body = example_bytes(CAPTURED, "predicate.request.json")
    data = post("/predicate", body[: len(body) // 2], length=len(body))
    response = await exchange(
        served.server.url, data, timeout=TIMEOUT_SECONDS + 5, close_write=True
    )
    assert response.seconds < TIMEOUT_SECONDS + 2
    if response.status is not None:  # answered before noticing the half-close
        assert_json_error(response, 408, "not complete within")
    await assert_untouched(served)


async def test_connection_dropped_mid_body_leaves_the_server_healthy(served: Served) -> None:
    body = example_bytes(CAPTURED, "onSessionOpen.request.json")
    data = post("/onSessionOpen", body[: len(body) // 3], length=len(body))
    _, writer = await asyncio.open_connection(*address(served.server.url))
    writer.write(data)
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    await asyncio.sleep(0.2)
    # an interrupted onSessionOpen never started replacing the session
    await assert_untouched(served)


async def test_every_error_is_logged_without_a_traceback(served: Served) -> None:
    """None of the cases above is a Caldera bug: none may log a traceback, nor an error — but
    for an onSessionOpen not taken, which app/server/snapshot_health.py logs as the error it is for
    Volcano's cycle (every plugin off), without a traceback."""
    entries = [
        json.loads(line) for line in served.server.log().splitlines() if line.startswith("{")
    ]
    assert entries, "the server logs JSON lines"
    assert not [e for e in entries if "exception" in e]
    errors = [e for e in entries if e["level"] in ("error", "critical")]
    assert all(e["logger"] == "caldera.snapshot" for e in errors), errors
    assert all("Volcano runs this scheduling cycle without" in e["message"] for e in errors)


def junk_in_unread_keys(document: dict[str, Any]) -> dict[str, Any]:
    """Keys no schema declares, holding every JSON type (msgspec skips them unbuilt)."""
    junk = {"Unread": [1, "two", None, {"three": [4.5e300]}], "NumaInfo": "not an object"}
    return {**document, **junk}


async def test_parts_no_configured_plugin_reads_are_not_validated(
    served: Served, tmp_path: Path
) -> None:
    """The rule that keeps predicate fast: what no configured plugin reads is not validated, and
    a body whose read parts are sound gets the answer the clean body gets."""
    client = served.server.client
    predicate = captured("predicate.request.json")
    clean = await client.post("/predicate", content=compact(predicate))
    predicate["task"] = junk_in_unread_keys(predicate["task"])
    predicate["node"] = junk_in_unread_keys(predicate["node"])
    junk = await client.post("/predicate", content=compact(predicate))
    assert clean.status_code == junk.status_code == 200
    assert junk.json() == clean.json()

    # With no plugin answering predicate (the embedded default configuration), only the
    # envelope is read: even a wrong type inside the task is answered neutrally.
    bare = await start_caldera(None, tmp_path)
    try:
        wrong = captured("predicate.request.json")
        wrong["task"]["Pod"] = 7
        wrong["node"]["Idle"] = "plenty"
        response = await bare.client.post("/predicate", content=compact(wrong))
        assert response.status_code == 200
        assert response.json() == {"status": "", "code": 0}
        # the envelope itself is still checked
        missing = await bare.client.post("/predicate", content=b'{"task": {}}')
        assert missing.status_code == 400 and "node" in missing.json()["error"]
    finally:
        assert await bare.stop() == 0
