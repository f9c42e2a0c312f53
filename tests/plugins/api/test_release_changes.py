"""plugins/api/release.py's CHANGES: one row per behaviour Volcano changed, asked by name.

No plugin, schema or app module compares release numbers itself: they ask ``release.has(ROW)``
(or a wire property of ``Release``). Each row is on for its first release(s) and off just
before."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from plugins.api import release as release_module
from plugins.api.release import CHANGES, Change, Release

ROOT = Path(__file__).resolve().parents[3]
NUMBERED = re.compile(r"\.(at_least|has_change)\(\s*[(\d]")
"""A version comparison written with numbers: ``at_least(1, 16)``, ``has_change((1, 14, 3))``."""


def sources() -> list[Path]:
    paths = [p for d in ("app", "plugins", "schemas") for p in (ROOT / d).rglob("*.py")]
    return [p for p in paths if p != ROOT / "plugins" / "api" / "release.py"]


RELEASE_TABLES = (
    ROOT / "plugins" / "api" / "release.py",
    ROOT / "plugins" / "api" / "extension_points.py",
)
"""Where release numbers are written: the release table (CHANGES, SUPPORTED_VERSIONS,
NEWEST_STABLE_VERSION) and the verb table (the release each verb is sent from)."""


def release_literals(source: str) -> list[tuple[int, str]]:
    """Release numbers written as values: a tuple of ints ``(1, minor)`` or ``(1, minor, patch)``
    with a minor Volcano could have (``(1, 14)``), and ``Release(...)`` built from int literals
    (``Release(1, 15)``). Line number and the literal."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple) and 2 <= len(node.elts) <= 3:
            numbers = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if (
                len(numbers) == len(node.elts)
                and all(type(n) is int for n in numbers)
                and numbers[0] == 1
                and 6 <= numbers[1] <= 40
            ):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if isinstance(node.func, ast.Name):
                name = node.func.id
            if name == "Release" and any(
                isinstance(a, ast.Constant) and type(a.value) is int for a in node.args
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_compares_release_numbers(path: Path) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if NUMBERED.search(line)
    ]
    assert found == [], "ask release.has(<a row of plugins/api/release.py CHANGES>) instead"


@pytest.mark.parametrize(
    "path",
    [p for p in sources() if p not in RELEASE_TABLES],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_module_writes_release_numbers(path: Path) -> None:
    """A bound such as ``low = max(low, (1, 14))`` or a default ``Release(1, 15)`` is a version
    comparison too: it is derived from a row of the release table (``NESTED_OBJECT_SHAPE.since``,
    ``NEWEST_STABLE_VERSION``), so a corrected row corrects every use."""
    found = [
        f"{path.relative_to(ROOT)}:{n}: {text}" for n, text in release_literals(path.read_text())
    ]
    assert found == [], "derive it from plugins/api/release.py (a CHANGES row's since/before)"


@pytest.mark.parametrize(
    ("name", "source", "caught"),
    [
        ("a lower bound", "low = max(low, (1, 14))", ["(1, 14)"]),
        ("an upper bound", "high = min(high, (1, 7))", ["(1, 7)"]),
        ("a patch release", "first = (1, 14, 3)", ["(1, 14, 3)"]),
        ("a since column", 'TaskField("TaskRole", (1, 10))', ["(1, 10)"]),
        ("a default release", "release = Release(1, 15)", ["Release(1, 15)"]),
        ("a qualified one", "release = api.Release(1, 8, 2)", ["api.Release(1, 8, 2)"]),
        ("a derived bound", "low = max(low, NESTED_OBJECT_SHAPE.since)", []),
        ("a derived default", "Release.of(NEWEST_STABLE_VERSION)", []),
        ("not a release: a pair", "pair = (1, 2)", []),
        ("not a release: a date", "datetime(1, 1, 1)", []),
        ("not a release: floats", "weights = (1, 10.0)", []),
    ],
)
def test_release_literals(name: str, source: str, caught: list[str]) -> None:
    assert [text for _, text in release_literals(source)] == caught, name


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.what[:40])
def test_since_and_before_bracket_each_change(change: Change) -> None:
    assert Release.of(change.since).has(change)
    assert not Release.of(change.before).has(change)


def test_every_change_constant_is_a_row_of_the_table() -> None:
    constants = {v for v in vars(release_module).values() if isinstance(v, Change)}
    assert constants == set(CHANGES)
    assert len(set(CHANGES)) == len(CHANGES)


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.what[:40])
def test_each_change_starts_at_its_first_releases(change: Change) -> None:
    for major, minor, patch in change.first:
        assert Release(major, minor, patch).has(change)
        assert Release(major, minor).has(change)  # a line means its newest patch
        if patch:
            assert not Release(major, minor, patch - 1).has(change)
        else:
            assert not Release(major, minor - 1).has(change)
    newest = max(change.first)
    assert Release(newest[0], newest[1] + 1).has(change)
    assert change.upstream and change.what
