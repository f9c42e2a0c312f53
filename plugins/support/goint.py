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


def go_int64(number: int) -> int:
    """``number`` wrapped to Go's ``int64``, as Go's integer arithmetic overflows."""
    return (number - INT64_MIN) % 2**64 + INT64_MIN
