"""``framework.Get``'s mapstructure v1.5.0 rules (no WeaklyTypedInput) on YAML values."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.api.mapstructure import (
    DecodeError,
    decode_bool,
    decode_float,
    decode_int,
    decode_map,
    decode_string,
    struct_fields,
)


@pytest.mark.parametrize(
    ("value", "want"),
    [(3, 3), (-3, -3), (2.9, 2), (-2.9, -2), (None, 0), (float("inf"), -(2**63)),
     (float("nan"), -(2**63)), (1e30, -(2**63)),
     (2**63, -(2**63)), (2**64 - 1, -1), (2**64, -(2**63)), (-(2**63) - 1, -(2**63)),
     (-(2**70), -(2**63))],
    ids=["int", "negative", "float truncated", "negative float truncated", "null keeps zero",
         "inf", "nan", "float beyond int64",
         # gopkg.in/yaml.v2 makes a uint64 of these, and SetInt(int64(u)) wraps them
         "uint64 2**63 wraps", "uint64 max wraps to -1",
         # beyond uint64 (or below int64) yaml.v2 makes a float64: the amd64 indefinite value
         "2**64 is a float", "below int64 is a float", "far below int64"],
)  # fmt: skip
def test_decode_int(value: Any, want: int) -> None:
    assert decode_int(value, "k") == want


@pytest.mark.parametrize("value", ["3", True, [1], {"a": 1}, 10**400])
def test_decode_int_refuses(value: Any) -> None:
    with pytest.raises(DecodeError, match="'k'"):
        decode_int(value, "k")


def test_decode_float_bool_string() -> None:
    assert decode_float(2, "k") == 2.0 and decode_float(None, "k", 1.5) == 1.5
    assert decode_bool(True, "k") is True and decode_bool(None, "k") is False
    assert decode_string("x", "k") == "x" and decode_string(None, "k") == ""


@pytest.mark.parametrize(
    ("decode", "value"),
    [(decode_float, "1.5"), (decode_float, False), (decode_bool, "true"), (decode_bool, 1),
     (decode_string, 1), (decode_string, ["x"])],
    ids=["float from string", "float from bool", "bool from string", "bool from int",
         "string from int", "string from list"],
)  # fmt: skip
def test_decoders_refuse_other_types(decode: Any, value: Any) -> None:
    with pytest.raises(DecodeError, match="unconvertible"):
        decode(value, "k")


def test_struct_fields_match_names_case_insensitively_exact_first() -> None:
    raw = {"weight": 1, "Weight": 2, "TYPE": "x", 3: "ignored", "other": 0}
    assert struct_fields(raw, "r", ("Weight", "Type")) == {"Weight": 2, "Type": "x"}
    assert struct_fields({"weight": 1}, "r", ("Weight",)) == {"Weight": 1}
    assert struct_fields(None, "r", ("Weight",)) == {}
    with pytest.raises(DecodeError, match="expected a map"):
        struct_fields("x", "r", ("Weight",))


def test_decode_map() -> None:
    assert decode_map({"a": 1, "b": None}, "m", decode_int) == {"a": 1, "b": 0}
    assert decode_map(None, "m", decode_int) is None
    with pytest.raises(DecodeError, match="expected a map"):
        decode_map([], "m", decode_int)
    with pytest.raises(DecodeError, match=r"'m\[1\]'"):
        decode_map({1: 2}, "m", decode_int)
    with pytest.raises(DecodeError, match=r"'m\[a\]'"):
        decode_map({"a": "x"}, "m", decode_int)
