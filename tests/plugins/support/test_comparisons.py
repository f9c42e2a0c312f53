"""``Resource.ResourceNames``, ``Get``, ``LessPartly(Zero)``, ``LessEqual(Zero)`` and the
asserting ``Sub`` (``api/resource_info.go`` at v1.15.1), as plugins.support.resources ports them."""

from __future__ import annotations

import pytest

from plugins.support.resources import (
    less_equal_zero,
    less_partly_zero,
    resource_get,
    resource_names,
    sub_asserting_in_place,
)
from schemas.api import Resource


def test_resource_names_skip_values_below_a_tenth_and_keep_payload_order() -> None:
    res = Resource(0.09, 0.1, {"z.com/x": 5.0, "pods": 1.0, "a.com/y": 0.05})
    assert resource_names(res) == ["memory", "z.com/x", "pods"]
    assert resource_names(None) == []


def test_resource_get() -> None:
    res = Resource(1500, 2e9, {"nvidia.com/gpu": 2000.0})
    assert [resource_get(res, n) for n in ("cpu", "memory", "nvidia.com/gpu", "x")] == [
        1500,
        2e9,
        2000.0,
        0.0,
    ]
    assert resource_get(None, "cpu") == 0.0


@pytest.mark.parametrize(
    ("res", "rr", "want"),
    [
        (Resource(1000, 10), Resource(1000, 10), False),
        (Resource(999.99, 10), Resource(1000, 10), True),  # no tolerance
        (Resource(1000, 10, {}), Resource(0, 0, {"pods": 0.0}), True),  # a name res lacks
        (Resource(1000, 10, {"g": -1.0}), Resource(0, 0), True),  # a negative res scalar
        (Resource(1000, 10, {"g": 1.0}), Resource(0, 0, {"g": 2.0}), True),
        (Resource(1000, 10, {"g": 2.0, "h": 0.0}), Resource(0, 0, {"g": 2.0}), False),
    ],
    ids=["equal", "cpu below", "missing name", "negative scalar", "scalar below", "fits"],
)
def test_less_partly_zero(res: Resource, rr: Resource, want: bool) -> None:
    assert less_partly_zero(res, rr) is want


@pytest.mark.parametrize(
    ("res", "rr", "want"),
    [
        (Resource(1000.05, 10), Resource(1000, 10), True),  # within 0.1
        (Resource(1000.1, 10), Resource(1000, 10), False),
        (Resource(0, 0, {"g": 0.05}), Resource(0, 0), True),  # missing on the right is 0
        (Resource(0, 0, {"g": 1.0}), Resource(0, 0), False),
        (Resource(0, 0), Resource(0, 0, {"g": -5.0}), True),  # only res's scalars compared
    ],
    ids=["tolerance", "beyond tolerance", "missing right within", "missing right", "right only"],
)
def test_less_equal_zero(res: Resource, rr: Resource, want: bool) -> None:
    assert less_equal_zero(res, rr) is want


def test_sub_within_the_tolerance_is_plain_and_may_end_slightly_negative() -> None:
    clamped: list[str] = []
    res = Resource(1000, 0.05, {"pods": 1.0})
    sub_asserting_in_place(res, Resource(1000, 0.1, {"pods": 1.0}), clamped.append)
    assert res == Resource(0, 0.05 - 0.1, {"pods": 0.0})
    assert clamped == []


def test_sub_without_a_scalar_map_leaves_scalars_alone_like_go() -> None:
    res = Resource(1000, 10)
    sub_asserting_in_place(res, Resource(500, 5, {"pods": 0.05}), None)
    assert res == Resource(500, 5, None)


def test_sub_where_go_panics_is_floored_and_reported() -> None:
    clamped: list[str] = []
    res = Resource(1000, 10, {"pods": 1.0})
    sub_asserting_in_place(res, Resource(2000, 5, {"pods": 2.0, "g": 1.0}), clamped.append)
    assert res == Resource(0, 5, {"pods": 0.0, "g": 0.0})
    assert clamped == ["cpu", "pods", "g"]
