"""Volcano's ``framework.Get[T]`` argument decoding, for plugins whose arguments are nested maps.

``framework.Get[T](args, key)`` (``pkg/scheduler/framework/arguments.go``) runs
``mapstructure.Decode`` (github.com/mitchellh/mapstructure v1.5.0, no ``WeaklyTypedInput``) on
the YAML value. Its rules, ported here on the values ``yaml.safe_load`` produces:

- A struct is decoded from a map: each field takes the key equal to its Go field name, else the
  first key equal to it case-insensitively (``json`` tags are ignored); other keys, and keys that
  are not strings, are ignored.
- A ``null`` value sets nothing: the field (or map entry) keeps its zero value.
- ``int`` fields take an int, or a float truncated toward zero; ``float64`` fields take an int or
  a float; ``bool`` and ``string`` fields take only their own type. Anything else is an error.
- A map is decoded from a map, every key as a string (a non-string key is an error).

Upstream a decoding error is ``klog.Fatalf``: the scheduler exits. An integer too large for Go's
``int`` is not one of them: Volcano's YAML decoder makes a ``uint64`` or a ``float64`` of it and
``decode_int`` stores what Go stores (see there). Caldera reports it through
``argument_errors`` (the configuration is refused at load time) and, should a plugin be built
from such arguments anyway, keeps the argument's default instead of crashing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from plugins.support.goint import INT64_MIN, go_int64, yaml_v2_number

_T = TypeVar("_T")


class DecodeError(ValueError):
    """A value ``mapstructure.Decode`` refuses (fatal in Volcano)."""


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, list):
        return "slice"
    return type(value).__name__


def _unconvertible(path: str, want: str, value: Any) -> DecodeError:
    return DecodeError(
        f"'{path}' expected type '{want}', got unconvertible type '{_kind(value)}',"
        f" value: '{value}'"
    )


def decode_int(value: Any, path: str, zero: int = 0) -> int:
    """``decodeInt``: an int, or a float truncated; ``null`` keeps ``zero``.

    An integer is first what Volcano's YAML decoder makes of it (``yaml_v2_number``): beyond
    int64 up to 2**64 - 1 a ``uint64``, which mapstructure stores with ``SetInt(int64(u))``,
    wrapping to a negative number (no error: the scheduler runs with it); beyond that a float.
    A float outside int64 (or NaN) converts, on amd64, to the "integer indefinite" ``-2**63``.
    """
    if value is None:
        return zero
    if isinstance(value, bool):
        raise _unconvertible(path, "int", value)
    if isinstance(value, int):
        value = yaml_v2_number(value)
        if isinstance(value, int):
            return go_int64(value)
        if isinstance(value, str):
            raise _unconvertible(path, "int", value)
    if isinstance(value, float):
        if not math.isfinite(value) or not INT64_MIN <= value < 2.0**63:
            return INT64_MIN
        return math.trunc(value)
    raise _unconvertible(path, "int", value)


def decode_float(value: Any, path: str, zero: float = 0.0) -> float:
    """``decodeFloat``: a float, or an int converted; ``null`` keeps ``zero``."""
    if value is None:
        return zero
    if isinstance(value, bool):
        raise _unconvertible(path, "float64", value)
    if isinstance(value, int):
        number = yaml_v2_number(value)
        if isinstance(number, str):  # too large even for float64: Go's YAML keeps a string
            raise _unconvertible(path, "float64", number)
        return float(number)
    if isinstance(value, float):
        return value
    raise _unconvertible(path, "float64", value)


def decode_bool(value: Any, path: str, zero: bool = False) -> bool:
    """``decodeBool``: a bool only (no ``"true"`` string without weak typing)."""
    if value is None:
        return zero
    if isinstance(value, bool):
        return value
    raise _unconvertible(path, "bool", value)


def decode_string(value: Any, path: str, zero: str = "") -> str:
    """``decodeString``: a string only."""
    if value is None:
        return zero
    if isinstance(value, str):
        return value
    raise _unconvertible(path, "string", value)


def struct_fields(value: Any, path: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """``decodeStructFromMap``: the raw value of each Go field name found in the map ``value``
    (exact key first, then the first case-insensitive match); ``null`` is an empty struct."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DecodeError(f"'{path}' expected a map, got '{_kind(value)}'")
    found: dict[str, Any] = {}
    for name in fields:
        if name in value:
            found[name] = value[name]
            continue
        folded = name.casefold()
        for key, item in value.items():
            if isinstance(key, str) and key.casefold() == folded:
                found[name] = item
                break
    return found


def decode_map(
    value: Any, path: str, decode_value: Callable[[Any, str], _T]
) -> dict[str, _T] | None:
    """``decodeMapFromMap`` into ``map[string]T``: None for ``null`` (Go's nil map), every key
    a string, every value through ``decode_value(raw, "path[key]")``."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DecodeError(f"'{path}' expected a map, got '{_kind(value)}'")
    decoded: dict[str, _T] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _unconvertible(f"{path}[{key}]", "string", key)
        decoded[key] = decode_value(item, f"{path}[{key}]")
    return decoded
