"""bench/hotpath.py: the paired in-process A/B a few-percent change is judged by."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench import hotpath, hotpath_output

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param([1.0], [1.05], (1.05, 1.05, 1.05), id="one round is its own spread"),
        pytest.param([1.0, 2.0, 1.0], [1.1, 2.2, 1.1], (1.1, 1.1, 1.1), id="drift cancels"),
        pytest.param(
            [1.0, 1.0, 1.0, 1.0, 1.0], [0.9, 1.0, 1.0, 1.1, 1.3], (1.0, 1.0, 1.1), id="quartiles"
        ),
    ],
)
def test_ratios_are_paired_round_by_round(
    before: list[float], after: list[float], expected: tuple[float, float, float]
) -> None:
    r = hotpath.paired_ratios(before, after)
    assert (r["median"], r["q1"], r["q3"]) == pytest.approx(expected)


def test_an_in_process_ab_of_one_checkout_against_itself_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--repo", f"a={ROOT}", "--repo", f"b={ROOT}", "--loads", "jobEnqueueable-c1",
            "--rounds", "2", "--no-http", "--scale", "0.02"]  # fmt: skip
    assert hotpath.main(argv) == 0
    out = capsys.readouterr().out
    assert "in process, b / a, paired by round" in out
    paired = out.split("in process, b / a, paired by round")[1]
    [row] = [line for line in paired.splitlines() if line.startswith("| jobEnqueueable-c1 |")]
    ratio, steady = float(row.split("|")[2]), float(row.split("|")[4])
    # The ratios are there and positive. Not their value: two rounds of the same code on a
    # loaded machine once measured 2x apart (a timing, which a unit test does not judge).
    assert ratio > 0 and steady > 0


def test_three_checkouts_are_paired_each_later_over_each_earlier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--repo live=A --repo base=A --repo new=B``: what a shadow costs before and after a
    change, and the change itself, from one run's rounds."""
    argv = ["--repo", f"a={ROOT}", "--repo", f"b={ROOT}", "--repo", f"c={ROOT}", "--loads",
            "jobEnqueueable-c1", "--rounds", "1", "--no-http", "--scale", "0.02"]  # fmt: skip
    assert hotpath.main(argv) == 0
    saved = hotpath_output.parse_output(capsys.readouterr().out)
    assert list(saved.paired_of) == [("a", "b"), ("a", "c"), ("b", "c")]


@pytest.mark.parametrize(
    ("latencies", "expected"),
    [
        pytest.param([5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 1.0, id="one slow call"),
        pytest.param([1.0, 1.0, 9.0, 9.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0], 1.0, id="a slow block"),
        pytest.param([3.0, 1.0, 2.0], 1.0, id="fewer calls than blocks"),
    ],
)
def test_the_steady_p50_is_the_lowest_block_median(latencies: list[float], expected: float) -> None:
    assert hotpath.steady_p50(latencies) == expected


def test_nothing_to_measure_is_refused() -> None:
    with pytest.raises(SystemExit):
        hotpath.main(["--repo", "a=.", "--loads", "jobEnqueueable-c1", "--no-http", "--no-asgi"])


def ab_lines() -> list[str]:
    """bench/README's A/B command: two commits' checkouts, in process."""
    return [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if "python -m bench.hotpath --repo before=" in line and "--no-http" in line
    ]


def test_bench_readme_shows_the_ab_command() -> None:
    assert len(ab_lines()) == 1


@pytest.mark.parametrize("line", ab_lines())
def test_the_ab_command_bench_readme_shows_runs_and_its_output_reads_back(
    capsys: pytest.CaptureFixture[str], line: str
) -> None:
    """The A/B line as written, both checkouts this one, one short round; its output reads back
    as its tables (bench/hotpath_output.py)."""
    import shlex

    words = shlex.split(line)
    assert words[:5] == ["uv", "run", "--group", "bench", "python"]
    argv = words[words.index("bench.hotpath") + 1 :]
    argv = [f"{w.split('=')[0]}={ROOT}" if "=" in w and not w.startswith("-") else w for w in argv]
    argv[argv.index("--loads") + 1] = "jobEnqueueable-c1"  # one of them, to be quick
    argv[argv.index("--rounds") + 1] = "1"
    argv[argv.index("--scale") + 1] = "0.02"
    assert hotpath.main(argv) == 0
    out = capsys.readouterr().out
    assert "in process, after / before, paired by round" in out
    saved = hotpath_output.parse_output(out)
    assert saved.rounds == 1
    assert set(saved.medians) == {("jobEnqueueable-c1", "before"), ("jobEnqueueable-c1", "after")}
    assert set(saved.medians["jobEnqueueable-c1", "after"]) == {"asgi_p50_ms", "asgi_steady_ms"}
    assert set(saved.paired["jobEnqueueable-c1"]) == {"p50", "steady"}
    assert all(figure > 0 for figure in saved.load)


def test_a_cycle_load_is_a_session_a_burst_and_the_period_idle() -> None:
    shape = hotpath.CYCLE_LOADS["jobEnqueueable-cycle"]
    of = hotpath.runmod.Load(
        "jobEnqueueable-c1", "jobEnqueueable", "job.json", 1, 10, 5.0, 0, "", setup="open.json"
    )
    plan = hotpath._cycle_plan("http://127.0.0.1:1", of, shape, 0.5)
    steps = plan["steps"]
    assert isinstance(steps, list)
    assert [(s["name"], len(s["calls"])) for s in steps] == [
        ("onSessionOpen", 1),
        ("jobEnqueueable", shape.calls // 2),
        ("onSessionClose", 1),
    ]
    assert steps[0]["calls"][0]["body"] == "open.json"
    assert {c["body"] for c in steps[1]["calls"]} == {"job.json"}
    assert (plan["mode"], plan["period_seconds"], plan["repeat"]) == (
        "cycle",
        shape.period_seconds,
        shape.cycles,
    )


def shadow_lines() -> list[str]:
    """bench/README's shadow commands over the cycle loads: a checkout with and without a
    shadow, and three servers (a change's shadow against the one before it)."""
    return [
        line
        for line in (ROOT / "bench" / "README.md").read_text().splitlines()
        if line.startswith("uv run --group bench python -m bench.hotpath") and "--shadow" in line
        and "cycle" in line
    ]  # fmt: skip


def test_bench_readme_shows_the_two_shadow_commands() -> None:
    assert len(shadow_lines()) == 2


@pytest.mark.parametrize("line", shadow_lines())
def test_a_shadow_command_bench_readme_shows_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """A shadow command of bench/README as written, every checkout this one, over HTTP, one
    short round of a cycle load (two sessions of a few calls) and a back-to-back one; its
    output pairs every two servers and renders the README's table."""
    import shlex

    from bench import readme_sections

    words = shlex.split(line)
    argv = words[words.index("bench.hotpath") + 1 :]
    argv = [f"{w.split('=')[0]}={ROOT}" if "=" in w and not w.startswith("-") else w for w in argv]
    names = [w.split("=")[0] for w in argv if "=" in w and not w.startswith("-")]
    argv[argv.index("--loads") + 1] = "jobEnqueueable-cycle,jobEnqueueable-c1"
    argv[argv.index("--rounds") + 1] = "1"
    short = hotpath.CycleLoad("jobEnqueueable-cycle", "jobEnqueueable-c1", 100, 0.1, 1)
    monkeypatch.setattr(hotpath, "CYCLE_LOADS", {short.name: short})
    assert hotpath.main([*argv, "--scale", "0.05", "--no-asgi"]) == 0
    out = capsys.readouterr().out
    saved = hotpath_output.parse_output(out)
    assert set(saved.paired_http_of) == set(itertools.combinations(names, 2))
    assert set(saved.paired_http) == {"jobEnqueueable-cycle", "jobEnqueueable-c1"}
    assert saved.medians["jobEnqueueable-cycle", names[-1]]["p50_ms"] > 0
    if names == ["live", "shadowed"]:
        assert "| jobEnqueueable-cycle |" in readme_sections.shadow_cost_table("x.txt", out)


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        pytest.param((1.01, 0.98, 1.04), "met", id="quartiles within 5%"),
        pytest.param((1.10, 1.06, 1.20), "**missed**", id="quartiles over 5%"),
        pytest.param((1.03, 0.95, 1.12), "not shown", id="quartiles straddle 5%"),
    ],
)
def test_the_target_is_judged_by_the_quartiles(
    ratio: tuple[float, float, float], verdict: str
) -> None:
    from bench import readme_sections

    assert readme_sections.target_verdict(ratio) == verdict


def test_a_load_waits_until_the_shadow_has_evaluated_the_last_ones_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readyz = iter([{"queuedBytes": 75 << 20}, {"queuedBytes": 1024}, {"queuedBytes": 0}])
    asked: list[str] = []

    def shadow(base: str) -> dict[str, int]:
        asked.append(base)
        return next(readyz)

    monkeypatch.setattr(hotpath, "_shadow", shadow)
    monkeypatch.setattr(hotpath.time, "sleep", lambda _: None)
    hotpath._shadow_settled("http://live")
    assert len(asked) == 3  # until nothing is queued
    monkeypatch.setattr(hotpath, "_shadow", lambda base: None)
    hotpath._shadow_settled("http://live")  # no shadow: nothing to wait for
    monkeypatch.setattr(hotpath, "_shadow", lambda base: {"queuedBytes": 1})
    with pytest.raises(RuntimeError, match="1 bytes queued"):
        hotpath._shadow_settled("http://live", timeout=0)
