"""Quantities and durations as a manifest writes them, for the reasons plugins give."""

from __future__ import annotations

import pytest

from plugins.support.units import format_amount, format_duration, format_resource
from schemas.api import Resource

GI = 2**30


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("cpu", 3000, "3 CPU"),
        ("cpu", 1500, "1500m CPU"),
        ("cpu", -2000, "-2 CPU"),  # idle after over-commit can be negative
        ("memory", 12 * GI, "12Gi memory"),
        ("memory", 1.5 * GI, "1.5Gi memory"),
        ("memory", 512, "512 memory"),
        ("pods", 110, "110 pods"),
        ("nvidia.com/gpu", 2000, "2 nvidia.com/gpu"),
        ("nvidia.com/gpu", 500, "500m nvidia.com/gpu"),
    ],
)
def test_one_dimension(name: str, value: float, text: str) -> None:
    assert format_amount(name, value) == text


def test_a_resource_in_the_dimensions_asked_or_all_it_has() -> None:
    res = Resource(MilliCPU=40000, Memory=64 * GI, ScalarResources={"nvidia.com/gpu": 8000})
    assert format_resource(res) == "40 CPU, 64Gi memory, 8 nvidia.com/gpu"
    assert format_resource(res, ["nvidia.com/gpu"]) == "8 nvidia.com/gpu"
    assert format_resource(None, ["cpu"]) == "0 CPU"


@pytest.mark.parametrize(
    ("nanos", "text"),
    [(0, "0s"), (3600 * 10**9, "1h"), (630 * 10**9, "10m30s"), (250 * 10**6, "250ms"),
     (15, "15ns"), (-90 * 10**9, "-1m30s")],
)  # fmt: skip
def test_durations(nanos: int, text: str) -> None:
    assert format_duration(nanos) == text
