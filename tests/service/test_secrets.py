"""Nothing a caller sends comes back out: a secret planted in every string of Volcano's captured
bodies (pod specs, env values, annotations, names) must appear in no log line at debug level, no
/debug/session, /debug/explain, /readyz or /metrics output, no PodGroup Event and no error body, whichever verb is driven and
whether it succeeds or fails.

Two sweeps: every string of a body replaced at once (most such bodies are refused early, which
exercises the error paths), and one string at a time (the rest of the body stays valid, so the
planted value reaches the plugins: quantities, durations, timestamps, annotations)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.events_api import EventsApi
from tests.every_plugin import every_plugin_config
from tests.examples import CAPTURED, example_json
from tests.service.conftest import start_caldera

SECRET = "calderaplantedsecret"
VERB_FIXTURES = {
    "predicate": "predicate.request.json",
    "prioritize": "prioritize.request.json",
    "preemptable": "preemptable.request.json",
    "reclaimable": "reclaimable.request.json",
    "jobEnqueueable": "jobEnqueueable.request.json",
    "queueOverused": "queueOverused.request.json",
    "jobReady": "jobReady.request.json",
    "allocate": "allocateFunc.request.json",
    "deallocate": "deallocateFunc.request.json",
}
"""Every verb with a captured body; onSessionOpen and onSessionClose are driven around them."""


Path_ = tuple[str | int, ...]


IDENTIFIERS = frozenset(
    {"UID", "uid", "Name", "name", "Namespace", "namespace", "Job", "Queue", "queue", "NodeName"}
)
"""Keys whose strings name an object rather than describe it: logs may say which job, task,
node or queue they are about, as Volcano's own logs do (README, Security). Every other string
is planted."""


def string_paths(document: Any, at: Path_ = ()) -> Iterator[Path_]:
    if isinstance(document, str):
        yield at
    elif isinstance(document, dict):
        for key, value in document.items():
            if not (isinstance(value, str) and key in IDENTIFIERS):
                yield from string_paths(value, (*at, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from string_paths(value, (*at, index))


def planted(document: Any, paths: list[Path_]) -> bytes:
    """``document`` with the strings at ``paths`` replaced by the secret, each made unique (and
    kept Go-parseable where a prefix allows: the secret follows the original value)."""
    copy = json.loads(json.dumps(document))
    for number, path in enumerate(paths):
        parent = copy
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = f"{SECRET}{number}"
    return json.dumps(copy, separators=(",", ":")).encode()


def appended(document: Any, path: Path_) -> bytes:
    """The string at ``path`` with the secret appended: a duration or quantity stays a string
    with its original start, the shape most likely to reach a parser's error message."""
    copy = json.loads(json.dumps(document))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = f"{parent[path[-1]]}{SECRET}"
    return json.dumps(copy, separators=(",", ":")).encode()


def variants(document: Any) -> Iterator[bytes]:
    """Every string replaced at once, then each string replaced, then each appended to."""
    paths = list(string_paths(document))
    yield planted(document, paths)
    for path in paths:
        yield planted(document, [path])
        yield appended(document, path)


def whole_body_variants(document: Any) -> Iterator[bytes]:
    """Every string replaced at once, and every string appended to at once (for the larger
    hand-built bodies, whose timestamps and annotations the captured ones lack)."""
    paths = list(string_paths(document))
    yield planted(document, paths)
    text = json.dumps(document, separators=(",", ":"))
    for path in paths:
        document = json.loads(appended(document, path))
    yield json.dumps(document, separators=(",", ":")).encode()
    assert text != json.dumps(document, separators=(",", ":"))


async def test_no_planted_secret_leaves_the_server(tmp_path: Path) -> None:
    api = EventsApi()  # where the PodGroup Events go (explainEvents)
    await api.start()
    events = f"explainEvents: true\nexplainEventsKubeconfig: {api.kubeconfig(tmp_path / 'kc')}\n"
    server = await start_caldera(
        events + every_plugin_config(), tmp_path, {"CALDERA_LOG_LEVEL": "debug"}
    )
    client = server.client
    outputs: list[str] = []
    statuses: dict[int, int] = {}

    async def send(verb: str, body: bytes) -> None:
        response = await client.post(f"/{verb}", content=body)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500 or response.json().get("plugin"), response.text
        if response.status_code != 200:
            outputs.append(response.text)

    async def operator_views() -> None:
        for path in ("/debug/session", "/readyz", "/metrics"):
            outputs.append((await client.get(path)).text)
        # What the decision record says about every job and task the bodies name.
        for kind, key in explained:
            response = await client.get("/debug/explain", params={kind: key})
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            outputs.append(response.text)

    try:
        snapshot = example_json(CAPTURED, "onSessionOpen.request.json")
        clean_snapshot = json.dumps(snapshot).encode()
        bodies = {verb: example_json(CAPTURED, name) for verb, name in VERB_FIXTURES.items()}
        explained = sorted(named_in(bodies.values()))
        assert {kind for kind, _ in explained} == {"job", "task"}, explained
        # Every snapshot variant opens a session the verbs are then asked in.
        for body in [
            *variants(snapshot),
            *whole_body_variants(example_json("head", "onSessionOpen.request.json")),
        ]:
            await send("onSessionOpen", body)
            for verb in ("preemptable", "reclaimable", "jobEnqueueable", "prioritize"):
                await send(verb, json.dumps(bodies[verb]).encode())
        await operator_views()
        # Every verb's variants, in a session opened on the clean snapshot.
        await send("onSessionOpen", clean_snapshot)
        for verb, document in bodies.items():
            for body in variants(document):
                await send(verb, body)
        for verb in ("predicate", "preemptable", "jobEnqueueable"):
            for body in whole_body_variants(example_json("head", f"{verb}.request.json")):
                await send(verb, body)
        await operator_views()
        await send("onSessionClose", b"{}")
        await send("onSessionClose", SECRET.encode())  # a failing verb whose body is the secret
    finally:
        assert await server.stop() == 0
        await api.stop()
    log = server.log()
    assert '"level":"debug"' in log.replace(" ", "")
    sent = [json.dumps(body) for _, _, _, body in api.requests]
    assert any('"CalderaRejected"' in event for event in sent), "the sweep sent no Event"
    leaks = [leak(text) for text in [log, *outputs, *sent] if SECRET in text]
    assert not leaks, "\n".join(leaks)
    # Both kinds of answer were exercised: refusals and real decisions.
    refused = sum(count for status, count in statuses.items() if status != 200)
    assert statuses.get(200, 0) > 1000 and refused > 10, statuses


def named_in(documents: Any) -> set[tuple[str, str]]:
    """The jobs and tasks the bodies ask about, as /debug/explain names them."""
    found: set[tuple[str, str]] = set()
    for document in documents:
        for field, kind in (("job", "job"), ("task", "task"), ("evictor", "task")):
            if isinstance(document.get(field), dict):
                found.add((kind, f"{document[field]['Namespace']}/{document[field]['Name']}"))
        for evictee in document.get("evictees") or []:
            found.add(("task", f"{evictee['Namespace']}/{evictee['Name']}"))
    return found


def leak(text: str) -> str:
    """Every line holding the secret."""
    return "\n".join(line[:400] for line in text.splitlines() if SECRET in line)


async def test_sweep_reaches_the_plugins(tmp_path: Path) -> None:
    """Guard against a sweep that only ever gets refused: with the clean snapshot open, the clean
    bodies are answered 200 by the same server configuration."""
    server = await start_caldera(every_plugin_config(), tmp_path)
    try:
        snapshot = json.dumps(example_json(CAPTURED, "onSessionOpen.request.json")).encode()
        assert (await server.client.post("/onSessionOpen", content=snapshot)).status_code == 200
        for verb, name in VERB_FIXTURES.items():
            body = json.dumps(example_json(CAPTURED, name)).encode()
            response: httpx.Response = await server.client.post(f"/{verb}", content=body)
            assert response.status_code == 200, (verb, response.text)
    finally:
        assert await server.stop() == 0
