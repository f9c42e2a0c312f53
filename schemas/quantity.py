"""Exact Kubernetes ``resource.Quantity`` parsing.

Follows ``k8s.io/apimachinery/pkg/api/resource/quantity.go``: a quantity is a signed decimal number
with an optional binary (Ki, Mi, …) or decimal (n, u, m, k, M, …) suffix, or a decimal exponent
(``1e3``, ``1E-3``). Values are kept as :class:`fractions.Fraction` so comparisons are exact, like
``Quantity.Cmp``; ``milli_value``/``value`` round up, like ``MilliValue()``/``Value()``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Fraction:
    """Return the exact value of a quantity string such as ``"500m"``, ``"4Gi"`` or ``"1e3"``."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        # The value is left out: it comes from a caller's body, and messages reach logs and
        # error answers (a caller that parses its own configuration can name it).
        raise QuantityError(
            f"a quantity of {len(text)} characters does not match the regular expression of"
            " resource.Quantity"
        )
    value = Fraction(match["num"])
    if match["exp"]:
        value *= Fraction(10) ** int(match["exp"][1:])
    else:
        suffix = match["suffix"] or ""
        value *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return value


# Cached like parse_quantity: a snapshot repeats the same few quantities in every job (each
# PodGroup's minResources), and the Fraction arithmetic costs more than the lookup.
@lru_cache(maxsize=4096)
def milli_value(text: str) -> int:
    """``Quantity.MilliValue()``: the value times 1000, rounded up."""
    return math.ceil(parse_quantity(text) * 1000)


@lru_cache(maxsize=4096)
def value(text: str) -> int:
    """``Quantity.Value()``: the value rounded up to an integer."""
    return math.ceil(parse_quantity(text))
