"""plugins/api/release.py's CHANGES: one row per behaviour Volcano changed, asked by name.

No plugin, schema or app module compares release numbers itself: they ask ``release.has(ROW)``
(or a wire property of ``Release``). Each row is on for its first release(s) and off just
before."""

from __future__ import annotations

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


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_compares_release_numbers(path: Path) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if NUMBERED.search(line)
    ]
    assert found == [], "ask release.has(<a row of plugins/api/release.py CHANGES>) instead"


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
