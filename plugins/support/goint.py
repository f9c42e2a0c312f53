"""Go's fixed-size integers, as the ported plugins meet them: the bounds a YAML number must fit
to be a Go ``int`` (int64 on the platforms Volcano ships), and int64 arithmetic that wraps
instead of growing, so a score computed from extreme arguments overflows exactly as in Go."""

from __future__ import annotations

from typing import Any

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def as_go_int(raw: Any) -> int | None:
    """``raw`` if a YAML or JSON decoder would have made it a Go ``int`` (an integer within
    int64; not a bool, not a float), else None."""
    if isinstance(raw, int) and not isinstance(raw, bool) and INT64_MIN <= raw <= INT64_MAX:
        return raw
    return None


UINT64_MAX = 2**64 - 1


def yaml_v2_number(raw: int) -> int | float | str:
    """What gopkg.in/yaml.v2 (Volcano's scheduler-conf decoder, ``pkg/scheduler/util.go``)
    makes of an integer in the conf: an ``int`` within int64, a ``uint64`` up to 2**64 - 1
    (returned as the Python int, to tell it apart callers compare with ``INT64_MAX``), a
    ``float64`` beyond (its plain-scalar resolver falls back to ``strconv.ParseFloat``), and
    a string when even that overflows."""
    if INT64_MIN <= raw <= UINT64_MAX:
        return raw
    try:
        return float(raw)
    except OverflowError:
        return str(raw)


def go_int64(number: int) -> int:
    """``number`` wrapped to Go's ``int64``, as Go's integer arithmetic overflows."""
    return (number - INT64_MIN) % 2**64 + INT64_MIN
