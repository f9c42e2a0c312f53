"""docs/new-volcano-release.md's coverage table: every release Caldera claims is proven by
captured or hand-built fixtures, by a differential conformance module, or has a written reason
why not — and every directory the table names exists, and every one that exists is named."""

from __future__ import annotations

from pathlib import Path

from plugins.api.release import SUPPORTED_VERSIONS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "new-volcano-release.md"
FIXTURES = ROOT / "tests" / "fixtures"
CAPTURED = ROOT / "plugins" / "api" / "captured"
"""Captured bodies ship in the package (plugins.api.testing); hand-built ones stay in tests/."""


def fixture_directory(name: str) -> Path:
    return (CAPTURED if name.startswith("volcano-") else FIXTURES) / name


CONFORMANCE = ROOT / "tests" / "conformance"


def coverage() -> dict[str, tuple[str, str, str]]:
    text = GUIDE.read_text()
    table = text[text.index("| release | fixtures |") :].split("\n\n")[0].splitlines()[2:]
    rows: dict[str, tuple[str, str, str]] = {}
    for line in table:
        release, fixtures, module, reason = (cell.strip() for cell in line.strip("|").split("|"))
        rows[release] = (fixtures, module, reason)
    return rows


def test_every_claimed_release_is_in_the_table_and_nothing_else() -> None:
    claimed = {f"{major}.{minor}" for major, minor in SUPPORTED_VERSIONS}
    assert set(coverage()) == claimed


def test_each_release_has_fixtures_a_module_or_a_reason() -> None:
    for release, (fixtures, module, reason) in coverage().items():
        if fixtures == "—" and module == "—":
            assert len(reason) > 40, f"{release}: neither fixtures nor a module, and no reason"
        if fixtures != "—":
            assert fixture_directory(fixtures).is_dir(), f"{release}: {fixtures}"
            assert any(fixture_directory(fixtures).glob("*.json")), (
                f"{release}: {fixtures} is empty"
            )
        if module != "—":
            assert (CONFORMANCE / module / "go.mod").is_file(), f"{release}: {module}"


def test_every_fixture_directory_and_module_is_in_the_table() -> None:
    named = {cell for row in coverage().values() for cell in row[:2]}
    modules = {p.parent.name for p in CONFORMANCE.glob("volcano-*/go.mod")}
    captures = {p.name for p in CAPTURED.glob("volcano-*") if p.is_dir()}
    examples = {
        f"protocol-examples/{p.name}"
        for p in (FIXTURES / "protocol-examples").iterdir()
        if p.is_dir()
    }
    assert modules | captures | examples <= named
