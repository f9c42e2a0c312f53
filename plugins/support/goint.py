"""Go's fixed-size integers, as the ported plugins meet them: the bounds a YAML number must fit
to be a Go ``int`` (int64 on the platforms Volcano ships), and int64 arithmetic that wraps
instead of growing, so a score computed from extreme arguments overflows exactly as in Go."""

from __future__ import annotations

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def go_int64(number: int) -> int:
    """``number`` wrapped to Go's ``int64``, as Go's integer arithmetic overflows."""
    return (number - INT64_MIN) % 2**64 + INT64_MIN
