"""Telling an identifiers-mode body from today's by its first key (schemas/identifiers.py)."""

from __future__ import annotations

import pytest

from schemas.identifiers import is_identifiers
from tests.examples import example_bytes

CASES = [
    ("Go's compact identifiers body", b'{"session":"s","job":"ns/pg"}', True),
    ("pretty-printed", b'{\n  "session": "s",\n  "job": "ns/pg"\n}', True),
    ("white space first", b' \t\r\n{ "session" :"s"}', True),
    ("a bytearray", bytearray(b'{"session":"s"}'), True),
    ("today's predicate", b'{"task":{"UID":"u"},"node":{"Name":"n"}}', False),
    ("session not first", b'{"job":"ns/pg","session":"s"}', False),
    ("a key that starts like it", b'{"sessionId":"s"}', False),
    ("onSessionClose's {}", b"{}", False),
    ("empty", b"", False),
    ("an array", b'["session"]', False),
    ("session as a value", b'{"x":"session"}', False),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_is_identifiers(body: bytes, expected: bool) -> None:
    assert is_identifiers(body) is expected


@pytest.mark.parametrize(
    "name", ["onSessionOpen", "predicate", "preemptable", "jobEnqueueable", "allocateFunc"]
)
def test_no_body_volcano_sends_today_is_read_as_identifiers(name: str) -> None:
    for release in ("volcano-1.14", "volcano-1.15"):
        assert not is_identifiers(example_bytes(release, f"{name}.request.json"))
