"""Volcano's argument getters: pkg/scheduler/framework/arguments_test.go, case for case."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.api.arguments import Arguments
from plugins.api.release import Release


@pytest.mark.parametrize(
    ("base", "args", "expected"),
    [
        (10, {"intkey": 15}, 15),
        (11, {"intkey": "errorvalue"}, 11),
        (0, {"intkey": ""}, 0),
        (5, {"intkey": True}, 5),
        (5, {"intkey": 1.0}, 5),
        (5, {}, 5),
        (5, {"intkey": 2**63 - 1}, 2**63 - 1),
        (5, {"intkey": 2**63}, 5),
        (5, {"intkey": -(2**63) - 1}, 5),
    ],
    ids=[
        "TestArgumentsGetInt/15",
        "TestArgumentsGetInt/errorvalue",
        "TestArgumentsGetInt/empty",
        "bool is not an int",
        "float is not an int",
        "missing",
        "int64 max is an int",
        "beyond int64 is not a Go int",
        "below int64 is not a Go int",
    ],
)
def test_get_int(base: int, args: dict[str, Any], expected: int) -> None:
    assert Arguments(args).get_int("intkey", base) == expected


def test_get_int_on_nil_arguments_does_not_fail() -> None:
    assert Arguments(None).get_int("intkey", 3) == 3


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"anotherKey": "12"}, 1.2),
        ({"float64key": 1.5}, 1.5),
        ({"float64key": "errorValue"}, 1.2),
        ({"float64key": ""}, 1.2),
        ({"float64key": 15}, 15.0),
        ({"float64key": True}, 1.2),
        ({"float64key": "1.5"}, 1.2),
        ({"float64key": 2**63 - 1}, float(2**63 - 1)),
        ({"float64key": 2**63}, 1.2),
        ({"float64key": 2**64}, float(2**64)),
        ({"float64key": -(2**63) - 1}, float(-(2**63) - 1)),
    ],
    ids=[
        "missing key",
        "1.5",
        "errorValue",
        "empty string",
        "int 15",
        "bool",
        "numeric string",
        "int64 max is an int",
        # Go's YAML makes a uint64 of it, which GetFloat64 does not take
        "uint64 keeps the default",
        # beyond uint64, and below int64, Go's YAML makes a float64
        "beyond uint64 is a float",
        "below int64 is a float",
    ],
)
def test_get_float64(args: dict[str, Any], expected: float) -> None:
    value = Arguments(args).get_float64("float64key", 1.2)
    assert value == expected and isinstance(value, float)


@pytest.mark.parametrize(
    ("base", "args", "expected"),
    [
        (False, {}, False),
        (False, {"boolkey": True}, True),
        (False, {"boolkey": "true"}, True),
        (True, {"boolkey": "false"}, False),
        (True, {"boolkey": "not-a-bool"}, True),
        (False, {"boolkey": "T"}, True),
        (True, {"boolkey": "0"}, False),
        (False, {"boolkey": 1}, False),
    ],
    ids=[
        "missing",
        "true",
        "string true",
        "string false",
        "not-a-bool keeps base",
        "ParseBool T",
        "ParseBool 0",
        "int is not a bool",
    ],
)
def test_get_bool(base: bool, args: dict[str, Any], expected: bool) -> None:
    assert Arguments(args, release=Release(1, 15)).get_bool("boolkey", base) is expected
    assert Arguments(args).get_bool("boolkey", base) is expected  # no release: the newest


@pytest.mark.parametrize(
    ("release", "value", "expected"),
    [
        (Release(1, 14, 1), "false", True),
        (Release(1, 14), "false", True),
        (Release(1, 8, 2), "0", True),
        (Release(1, 14), False, False),
        (Release(1, 15, 0), "false", False),
        (Release(1, 16), "F", False),
    ],
    ids=["1.14.1 ignores a string", "1.14 line ignores a string", "1.8.2 ignores a string",
         "1.14 takes a bool", "1.15.0 parses it (5ba79f316)", "1.16 parses it"],
)  # fmt: skip
def test_get_bool_parses_strings_from_volcano_1_15(
    release: Release, value: object, expected: bool
) -> None:
    """Issue 29 item 2: before v1.15.0 GetBool accepts only a bool; a string keeps the default
    with Volcano's warning."""
    arguments = Arguments({"strict": value}, plugin="nodegroup", release=release)
    assert arguments.get_bool("strict", True) is expected
    assert bool(arguments.warnings) == (isinstance(value, str) and expected)


@pytest.mark.parametrize(
    ("base", "args", "expected"),
    [
        ("test1", {}, "test1"),
        ("test", {"key": "test1"}, "test1"),
        ("test", {"key": 0}, "test"),
        ("test", {"key": None}, "test"),
    ],
    ids=["missing", "string", "int rejected", "nil rejected"],
)
def test_get_string(base: str, args: dict[str, Any], expected: str) -> None:
    assert Arguments(args).get_string("key", base) == expected


def test_rejections_are_recorded_as_warnings() -> None:
    arguments = Arguments({"k": "x"}, plugin="sla")
    arguments.get_int("k", 1)
    assert arguments.warnings and "plugin sla" in arguments.warnings[0]


def test_a_problem_is_remembered_once_however_many_sessions_read_it() -> None:
    arguments = Arguments({"weight": "heavy"}, plugin="p")
    for _ in range(3):  # one plugin instance per session, all reading the same entry
        assert arguments.get_int("weight", 1) == 1
    assert len(arguments.warnings) == 1
