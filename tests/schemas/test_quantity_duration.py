"""Exact Quantity parsing and Go's time.ParseDuration."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schemas.goduration import DurationError, parse_go_duration, parse_str2duration
from schemas.quantity import QuantityError, milli_value, parse_quantity, value

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Fraction(1, 10)),
        ("2", 2),
        ("4Gi", 4 * 2**30),
        ("1.5", Fraction(3, 2)),
        ("1e3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("500Mi", 500 * 2**20),
        ("1k", 1000),
        ("0.5Ki", 512),
        ("-1", -1),
        ("1n", Fraction(1, 10**9)),
        ("+2M", 2_000_000),
    ],
)
def test_parse_quantity(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Kb", "Mi", "1 Gi"])
def test_bad_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_milli_and_value_round_up_like_apimachinery() -> None:
    assert milli_value("1") == 1000
    assert milli_value("0.0001") == 1  # MilliValue rounds up
    assert value("1.2") == 2 and value("100m") == 1
    assert value("4Gi") == 4 * 2**30


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("3m", 180 * S),
        ("1h30m", 5400 * S),
        ("1.5h", 5400 * S),
        ("600s", 600 * S),
        ("-1m", -60 * S),
        ("+5s", 5 * S),
        ("10ms", 10_000_000),
        ("1us", 1000),
        ("1µs", 1000),
        ("1μs", 1000),
        ("1ns", 1),
        (".5s", S // 2),
        ("1.s", S),
        ("1h2m3s", 3723 * S),
    ],
)
def test_parse_go_duration(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize(
    "text", ["", "600", "600abcde", "1d", "2w", "s", ".s", "1h-5m", "-", "3 m", "\u0663s"]
)
def test_go_duration_errors(text: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration(text)


H = 3600 * S


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("-0", 0),
        ("1h30m", 5400 * S),
        ("1d", 24 * H),
        ("1.5d", 36 * H),
        ("2d4h30m", (52 * 3600 + 1800) * S),
        ("5w4d12h", (5 * 168 + 4 * 24 + 12) * H),
        ("-3w", -3 * 168 * H),
        ("+1w", 168 * H),
        ("1d1ms", 24 * H + 1_000_000),
        ("9223372036854775807ns", 2**63 - 1),
    ],
)
def test_parse_str2duration(text: str, nanos: int) -> None:
    """go-str2duration v2.1.0: Go's grammar plus d (24h) and w (168h)."""
    assert parse_str2duration(text) == nanos


@pytest.mark.parametrize(
    "text",
    # str2duration refuses the most negative int64 that Go's own parser accepts.
    ["", "5", "1h2", "2h45m15", "abc", "1h-30m", "dfdsfdfdf", "1y", "1dw", "-9223372036854775808ns",
     "15251w"],
)  # fmt: skip
def test_str2duration_errors(text: str) -> None:
    with pytest.raises(DurationError):
        parse_str2duration(text)


def test_go_duration_keeps_its_most_negative_value() -> None:
    assert parse_go_duration("-9223372036854775808ns") == -(2**63)


def test_go_time_and_nanos_between() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from schemas.goduration import GO_ZERO_TIME, go_time, nanos_between

    assert go_time(None) == GO_ZERO_TIME
    naive = datetime(2026, 1, 1, 12, 0)
    assert go_time(naive) == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    plus_two = datetime(2026, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert nanos_between(go_time(naive), plus_two) == 0
    later = go_time(naive) + timedelta(days=1, seconds=3, microseconds=7)
    assert nanos_between(go_time(naive), later) == (86_403 * 1_000_000 + 7) * 1_000
    assert nanos_between(later, go_time(naive)) < 0
