"""bench/hotpath_output.py: a saved bench.hotpath output reads back as the tables it printed
(tests/bench/test_hotpath.py reads the real command's output back too)."""

from __future__ import annotations

import pytest

from bench.hotpath_output import parse_output

SAVED = """load average (3.5, 3.0, 2.5)
round 1 a [x]: {}
round 2 a [x]: {}

load average at end (4.25, 3.0, 2.5); medians over 2 rounds
| workload | checkout | p50_ms | p99_ms | growth_MiB | asgi_p50_ms | asgi_steady_ms |
|---|---|---|---|---|---|---|
| predicate-c1 | live | 0.500 | 2.000 | 0.016 | 0.201 | 0.190 |
| predicate-c1 | shadowed | 0.750 | 3.000 | 30.000 | – | 0.216 |

over HTTP, shadowed / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | p99 ratio | quartiles |
|---|---|---|---|---|
| predicate-c1 | 1.020 | 0.990–1.040 | 1.300 | 0.800–1.700 |

in process, shadowed / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | steady p50 ratio | quartiles |
|---|---|---|---|---|
| predicate-c1 | 1.048 | 1.025–1.106 | 1.000 | 0.901–1.068 |
"""


def test_a_saved_output_reads_back_as_its_tables() -> None:
    saved = parse_output(SAVED)
    assert saved.rounds == 2
    assert saved.load == (3.5, 4.25)
    assert saved.medians == {
        ("predicate-c1", "live"): {
            "p50_ms": 0.5, "p99_ms": 2.0, "growth_MiB": 0.016, "asgi_p50_ms": 0.201,
            "asgi_steady_ms": 0.19,
        },
        ("predicate-c1", "shadowed"): {
            "p50_ms": 0.75, "p99_ms": 3.0, "growth_MiB": 30.0, "asgi_steady_ms": 0.216,
        },
    }  # fmt: skip
    assert saved.paired == {
        "predicate-c1": {"p50": (1.048, 1.025, 1.106), "steady": (1.0, 0.901, 1.068)}
    }
    assert saved.paired_http == {
        "predicate-c1": {"p50": (1.02, 0.99, 1.04), "p99": (1.3, 0.8, 1.7)}
    }


def test_text_that_is_not_a_hotpath_output_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not the output of python -m bench\.hotpath"):
        parse_output("soak: 600 s\nPASS")


THREE = """load average (1.0, 1.0, 1.0)

load average at end (2.0, 1.0, 1.0); medians over 2 rounds
| workload | checkout | p50_ms | p99_ms | growth_MiB | dropped_sessions |
|---|---|---|---|---|---|
| jobEnqueueable-c1 | live | 0.500 | 0.700 | 0.004 | 0.000 |
| jobEnqueueable-c1 | base | 0.650 | 1.000 | 25.500 | 0.000 |
| jobEnqueueable-c1 | new | 0.550 | 0.900 | 25.700 | 0.000 |

over HTTP, base / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | p99 ratio | quartiles |
|---|---|---|---|---|
| jobEnqueueable-c1 | 1.300 | 1.250–1.350 | 1.400 | 1.300–1.600 |

over HTTP, new / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | p99 ratio | quartiles |
|---|---|---|---|---|
| jobEnqueueable-c1 | 1.100 | 1.050–1.150 | 1.300 | 1.200–1.400 |

over HTTP, new / base, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | p99 ratio | quartiles |
|---|---|---|---|---|
| jobEnqueueable-c1 | 0.850 | 0.800–0.900 | 0.950 | 0.900–1.000 |

in process, base / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | steady p50 ratio | quartiles |
|---|---|---|---|---|
| jobEnqueueable-c1 | 1.200 | 1.100–1.300 | 1.150 | 1.100–1.200 |

in process, new / live, paired by round (median, quartiles)
| workload | p50 ratio | quartiles | steady p50 ratio | quartiles |
|---|---|---|---|---|
| jobEnqueueable-c1 | 1.050 | 1.000–1.100 | 1.040 | 1.000–1.080 |
"""


def test_a_run_of_three_checkouts_reads_back_every_pair() -> None:
    """``--repo live=A --repo base=A --repo new=B``: each later checkout over each earlier one;
    ``paired_http`` stays the second over the first, as in a run of two."""
    saved = parse_output(THREE)
    assert set(saved.paired_http_of) == {("live", "base"), ("live", "new"), ("base", "new")}
    assert saved.paired_http_of["base", "new"]["jobEnqueueable-c1"]["p50"] == (0.85, 0.8, 0.9)
    assert saved.paired_http == saved.paired_http_of["live", "base"]
    assert set(saved.paired_of) == {("live", "base"), ("live", "new")}
    assert saved.paired == saved.paired_of["live", "base"]  # the first pair, as over HTTP
    assert saved.paired["jobEnqueueable-c1"]["p50"] == (1.2, 1.1, 1.3)
