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
    # bench/readme renders bench/README from such an output, read back
    [run] = decode.parse_output(f"load average 2.5\n{out}")
    assert (run.verb, run.rounds, run.load_average) == ("onSessionOpen", 4, 2.5)
    assert set(run.median_ms) == set(run.best_MBps) == {"a", "b-c"}
    assert set(run.paired) == {"b-c"}
    median, low, high = run.paired["b-c"]
    assert low <= median <= high


def test_text_that_is_not_a_decode_output_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not the output of python -m bench\.decode"):
        decode.parse_output("# a comment\nload average 3.0\n")


def test_the_copy_imports_its_own_modules(tmp_path: Path) -> None:
    import sys

    from schemas import api

    requests = decode.load_schemas("x", ROOT, tmp_path)
    assert requests.__name__ == "schemas_x.requests"
    assert sys.modules["schemas_x.api"].TaskInfo is not api.TaskInfo
    for source in (tmp_path / "schemas_x").glob("*.py"):
        assert "from schemas." not in source.read_text(), source.name
