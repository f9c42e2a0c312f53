"""bench/snapshot.py times Caldera's onSessionOpen in process on a captured body, and its saved
output reads back for bench/README."""

from __future__ import annotations

import pytest

from bench import snapshot
from tests.examples import CAPTURED_BODIES

BODY = CAPTURED_BODIES / "volcano-1.14" / "onSessionOpen.request.json"


def test_a_captured_body_is_opened_decoded_skipped_and_closed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert snapshot.main([str(BODY), "--rounds", "3"]) == 0
    out = capsys.readouterr().out
    [run] = snapshot.parse_output(f"== after: the working tree\n{out}")
    assert (run.label, run.body, run.rounds) == ("after", BODY.name, 3)
    assert run.megabytes == round(BODY.stat().st_size / 1e6, 2)
    assert set(run.median_ms) == set(snapshot.PARTS)
    assert run.load_average >= 0
    # the skip scans what the typed decode scans and builds nothing
    assert run.median_ms["skip"] <= run.median_ms["decode"] * 1.5 + 0.1


def test_the_session_it_opens_has_the_bodys_objects() -> None:
    body = bytearray(BODY.read_bytes())
    times = snapshot.measure(body, 1)
    assert {part: len(values) for part, values in times.items()} == dict.fromkeys(snapshot.PARTS, 1)


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("load average 1.0\nb.json, 2.00 MB, 5 rounds (CPU time per call)\n", [""]),
        (
            "== before: abc\nload average 1.0\nb.json, 2.00 MB, 5 rounds\n  open: median 2.0 ms\n"
            "== after: def\nload average 1.5\nb.json, 2.00 MB, 5 rounds\n  open: median 1.0 ms\n",
            ["before", "after"],
        ),
    ],
    ids=["unlabelled", "before and after"],
)
def test_saved_runs_read_back_with_their_labels(text: str, labels: list[str]) -> None:
    runs = snapshot.parse_output(text)
    assert [run.label for run in runs] == labels
    if len(runs) == 2:
        assert runs[0].mbps() == pytest.approx(1000.0)
        assert runs[1].mbps() == pytest.approx(2000.0)
        assert runs[1].load_average == 1.5


def test_text_that_is_not_its_output_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not the output of python -m bench\.snapshot"):
        snapshot.parse_output("# a comment\nload average 3.0\n")


def test_the_command_bench_readme_shows_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/README's `bench.snapshot` line, on a captured body instead of the cluster's."""
    import shlex

    from bench import readme

    [line] = [
        line
        for line in readme.README.read_text().splitlines()
        if line.startswith("uv run python -m bench.snapshot ")
    ]
    words = shlex.split(line)
    argv = words[words.index("bench.snapshot") + 1 :]
    bodies = [arg for arg in argv if arg.endswith(".json")]
    assert len(bodies) == 2
    argv = [str(BODY) if arg.endswith(".json") else arg for arg in argv]
    argv[argv.index("--rounds") + 1] = "2"
    assert snapshot.main(argv) == 0
    assert len(snapshot.parse_output(capsys.readouterr().out)) == 2
