"""Verbs are a type (issue 48): app/ names a verb through ``plugins.api.extension_points.Verb``
or the table's rows, never by a quoted string. A sentence (a docstring, a log or help message)
may still name a verb in words; only a string literal that *is* a verb name fails."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from plugins.api.extension_points import EXTENSION_POINTS, VERBS, Verb

APP = Path(__file__).resolve().parents[2] / "app"

ALLOWED: frozenset[tuple[str, str]] = frozenset()
"""(path under app/, verb) pairs that may stay strings: none today."""


def verb_literals(source: str) -> list[tuple[int, str]]:
    """(line, verb) of every string literal whose value is exactly a verb's name."""
    names = {verb.value for verb in Verb}
    found: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.STRING or token.string.lstrip("rRbBuU")[:1] not in "\"'":
            continue
        value = ast.literal_eval(token.string)
        if isinstance(value, str) and value in names:
            found.append((token.start[0], value))
    return found


def test_no_verb_string_literals_in_app() -> None:
    found = [
        f"app/{path.relative_to(APP)}:{line}: {verb!r}"
        for path in sorted(APP.rglob("*.py"))
        for line, verb in verb_literals(path.read_text())
        if (str(path.relative_to(APP)), verb) not in ALLOWED
    ]
    assert not found, "verb names as strings (use plugins.api.extension_points.Verb):\n" + (
        "\n".join(found)
    )


def test_the_check_finds_a_literal() -> None:
    source = 'if verb == "predicate":\n    pass\nlog("asked predicate")\nx = f"{verb}"\n'
    assert verb_literals(source) == [(1, "predicate")]


def test_verb_is_the_table() -> None:
    assert tuple(Verb) == VERBS == tuple(point.verb for point in EXTENSION_POINTS)
    assert all(type(point.verb) is Verb for point in EXTENSION_POINTS)
    assert Verb.JOB_ENQUEUEABLE == "jobEnqueueable"
    assert f"/{Verb.ON_SESSION_OPEN}" == "/onSessionOpen"
