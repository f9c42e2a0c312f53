"""preemptable/reclaimable bodies in one pass: each TaskInfo decoded once from its byte span
(``app.extender.evict_spans``), and whatever that route cannot read answered by the general one.

Every case checks the one-pass reading against the general reading (the body decoded with the
evictees kept raw, then each evictee): the same evictor, the same evictees, and byte for byte the
same evictee bytes to echo as victims.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from app.errors import RequestError
from app.extender import Extender, evict_spans
from plugins.api.extension_points import BY_VERB
from schemas.api import TaskInfo
from schemas.requests import EvictRequest
from tests.examples import example_json

POINT = BY_VERB["preemptable"]
EXAMPLE = example_json("head", "preemptable.request.json")
EVICTEE = EXAMPLE["evictees"][0]


def go_json(document: Any) -> bytes:
    """Compact, as Go's json.Marshal writes it."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def evictee(uid: str, **extra: Any) -> dict[str, Any]:
    return {**EVICTEE, "UID": uid, "Name": f"pod-{uid}", **extra}


def general(body: bytes) -> tuple[TaskInfo, list[TaskInfo], list[bytes]]:
    request = msgspec.json.decode(body, type=EvictRequest)
    raws = request.evictees or []
    return (
        request.evictor,
        [msgspec.json.decode(raw, type=TaskInfo) for raw in raws],
        [bytes(raw) for raw in raws],
    )


GO_BODY = go_json({"evictor": EXAMPLE["evictor"], "evictees": [evictee(f"u{i}") for i in range(5)]})
NESTED_MARKER = go_json(
    {
        "evictor": EXAMPLE["evictor"],
        # an unknown key holding an array of objects whose first key is UID: the marker
        # '},{"UID":' occurs inside the first evictee, not between two
        "evictees": [evictee("a", Extra=[{"UID": "x"}, {"UID": "y"}]), evictee("b")],
    }
)
MARKER_IN_STRING = go_json(
    {
        "evictor": EXAMPLE["evictor"],
        "evictees": [evictee("a", TaskRole='},{"UID":"b"'), evictee("b")],
    }
)
EVICTEES_KEY_IN_EVICTOR = go_json(
    {"evictor": {**EXAMPLE["evictor"], "Extra": {"evictees": [1]}}, "evictees": [evictee("a")]}
)
NOT_UID_FIRST = (
    GO_BODY[: GO_BODY.index(b'{"UID":"u1"')] + b'{"Name":"n","UID":"u1"}]}'
)  # the second evictee starts with another key: its boundary is not found

# name, body, whether the one-pass route reads it (None: it falls back)
CASES = [
    ("volcano compact body, 5 evictees", GO_BODY, True),
    ("evictees null", go_json({"evictor": EXAMPLE["evictor"], "evictees": None}), True),
    ("evictees empty", go_json({"evictor": EXAMPLE["evictor"], "evictees": []}), True),
    ("one evictee", go_json({"evictor": EXAMPLE["evictor"], "evictees": [EVICTEE]}), True),
    ("marker nested inside an evictee", NESTED_MARKER, True),
    ("marker inside a string", MARKER_IN_STRING, True),
    ('",evictees":[" inside the evictor', EVICTEES_KEY_IN_EVICTOR, True),
    ("evictee not starting with UID", NOT_UID_FIRST, True),
    ("pretty-printed", json.dumps(json.loads(GO_BODY), indent=1).encode(), False),
    (
        "keys in the other order",
        go_json({"evictees": [EVICTEE], "evictor": EXAMPLE["evictor"]}),
        False,
    ),
]


@pytest.mark.parametrize(("name", "body", "has_layout"), CASES, ids=[c[0] for c in CASES])
def test_one_pass_reads_what_the_general_route_reads(
    name: str, body: bytes, has_layout: bool
) -> None:
    assert (evict_spans(body) is not None) == has_layout
    evictor, evictees, raws = Extender._evict_request(POINT, body)
    assert (evictor, evictees, [bytes(raw) for raw in raws]) == general(body)


def test_one_pass_spans_are_the_evictees_bytes() -> None:
    spans = evict_spans(GO_BODY)
    assert spans is not None
    evictor_span, evictee_spans = spans
    assert bytes(evictor_span) == go_json(EXAMPLE["evictor"])
    assert [bytes(s) for s in evictee_spans] == [go_json(evictee(f"u{i}")) for i in range(5)]


def test_one_pass_works_on_a_buffer_read_into_a_bytearray() -> None:
    evictor, evictees, raws = Extender._evict_request(POINT, bytearray(GO_BODY))
    assert (evictor, evictees, [bytes(raw) for raw in raws]) == general(GO_BODY)


BAD = [
    ("evictee with a wrong type", GO_BODY.replace(b'"Status":', b'"Status":"x","_":', 1), "Status"),
    ("truncated", GO_BODY[:-1], "malformed JSON"),
    ("evictor null", go_json({"evictor": None, "evictees": [EVICTEE]}), "evictor"),
    (
        "evictee null",
        go_json({"evictor": EXAMPLE["evictor"], "evictees": [None]}),
        r"evictees\[0\]",
    ),
]


@pytest.mark.parametrize(("name", "body", "says"), BAD, ids=[c[0] for c in BAD])
def test_bodies_the_one_pass_cannot_read_are_worded_by_the_general_route(
    name: str, body: bytes, says: str
) -> None:
    with pytest.raises(RequestError, match=says):
        Extender._evict_request(POINT, body)
