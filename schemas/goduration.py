"""Go ``time.ParseDuration``, exactly, and its ``d``/``w`` sibling ``str2duration.ParseDuration``.

Volcano reads durations from plugin arguments and annotations with ``time.ParseDuration``
(``sla-waiting-time``, ``volcano.sh/cooldown-time``): an optional sign, then one or more
``<decimal><unit>`` pairs with units ns, us, µs, μs, ms, s, m, h. ``"0"`` alone is valid; ``""`` and
unitless numbers such as ``"600"`` are errors. Results are integer nanoseconds, as Go's int64.

KAI-Scheduler reads its plugin arguments (``PluginArguments.GetDuration``) with
``github.com/xhit/go-str2duration/v2`` v2.1.0, a copy of Go's parser with two more units, ``d``
(24h) and ``w`` (168h), and one difference at the edge: its overflow check refuses
``-9223372036854775808ns``, which Go accepts. :func:`parse_str2duration` is that grammar.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_STR2DURATION_UNITS = {**_UNITS, "d": 24 * _UNITS["h"], "w": 168 * _UNITS["h"]}
_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_STR2DURATION_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h|d|w)")
_NUMBER = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)")
_INT64_MAX = 2**63 - 1


class DurationError(ValueError):
    """A string ``time.ParseDuration`` rejects."""


# Both parsers run per pod on the victim verbs (cdp's cooldown, min-runtime's annotations), where
# a cluster repeats a handful of strings ("10m") across thousands of pods; the exact Fraction
# arithmetic made cdp a third of preemptable's plugin time. Errors are not cached (lru_cache
# keeps only returns), and the bound keeps hostile distinct strings from growing the cache.
_PARSED_DURATIONS = 1024


@lru_cache(maxsize=_PARSED_DURATIONS)
def parse_go_duration(text: str) -> int:
    """Parse ``text`` as Go's ``time.ParseDuration`` does and return nanoseconds."""
    return _parse(text, _PART, _UNITS, negative_limit=_INT64_MAX + 1)


@lru_cache(maxsize=_PARSED_DURATIONS)
def parse_str2duration(text: str) -> int:
    """Parse ``text`` as ``str2duration.ParseDuration`` (v2.1.0) does: Go's grammar plus ``d``
    and ``w``; nanoseconds."""
    return _parse(text, _STR2DURATION_PART, _STR2DURATION_UNITS, negative_limit=_INT64_MAX)


def _parse(text: str, part: re.Pattern[str], units: dict[str, int], negative_limit: int) -> int:
    orig = text
    negative = False
    if text[:1] in ("+", "-"):
        negative = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(f'time: invalid duration "{orig}"')
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        match = part.match(text, pos)
        if match is None:
            if _NUMBER.match(text, pos):
                raise DurationError(f'time: missing unit in duration "{orig}"')
            raise DurationError(f'time: invalid duration "{orig}"')
        number, unit = match.groups()
        if number == ".":
            raise DurationError(f'time: invalid duration "{orig}"')
        total += Fraction(number) * units[unit]
        pos = match.end()
    nanos = int(total)  # Go truncates fractional nanoseconds
    if nanos > (negative_limit if negative else _INT64_MAX):
        raise DurationError(f'time: invalid duration "{orig}"')
    return -nanos if negative else nanos


# --- Go time arithmetic on metav1.Time values -----------------------------------------------

GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
"""Go's zero ``time.Time``: what a ``null`` metav1.Time (decoded as None) stands for."""


def go_time(value: datetime | None) -> datetime:
    """A decoded metav1.Time as Go sees it: None is the zero time; naive means UTC."""
    if value is None:
        return GO_ZERO_TIME
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def nanos_between(earlier: datetime, later: datetime) -> int:
    """``later.Sub(earlier)`` in exact integer nanoseconds (datetimes carry microseconds),
    without Go's int64 saturation (``time.Since`` callers clamp where it matters)."""
    delta = later - earlier
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1_000
