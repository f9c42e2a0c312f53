"""bench/decode.py loads two checkouts' request views side by side and pairs their decode."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import decode
from tests.examples import CAPTURED_BODIES

ROOT = Path(__file__).resolve().parents[2]


def test_two_checkouts_decode_the_same_body(capsys: pytest.CaptureFixture[str]) -> None:
    body = CAPTURED_BODIES / "volcano-1.15" / "onSessionOpen.request.json"
    argv = ["--repo", f"a={ROOT}", "--repo", f"b-c={ROOT}", "--body", str(body), "--rounds", "4"]
    assert decode.main(argv) == 0
    out = capsys.readouterr().out
    assert "  a: median" in out and "  b-c: median" in out
    assert "b-c/a paired:" in out


def test_the_copy_imports_its_own_modules(tmp_path: Path) -> None:
    import sys

    from schemas import api

    requests = decode.load_schemas("x", ROOT, tmp_path)
    assert requests.__name__ == "schemas_x.requests"
    assert sys.modules["schemas_x.api"].TaskInfo is not api.TaskInfo
    for source in (tmp_path / "schemas_x").glob("*.py"):
        assert "from schemas." not in source.read_text(), source.name
