"""Walk raw JSON alongside the msgspec view that decodes it, recording which declared keys the
document really carries (msgspec silently defaults a key that is absent)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import msgspec
from msgspec import inspect

Seen = dict[str, set[str]]


def _struct_of(info: inspect.Type) -> inspect.StructType | None:
    if isinstance(info, inspect.StructType):
        return info
    if isinstance(info, inspect.UnionType):
        for member in info.types:
            found = _struct_of(member)
            if found is not None:
                return found
    return None


def _container(info: inspect.Type) -> inspect.Type | None:
    if isinstance(info, inspect.UnionType):
        for member in info.types:
            if isinstance(member, (inspect.DictType, inspect.ListType)):
                return member
    return info if isinstance(info, (inspect.DictType, inspect.ListType)) else None


def walk(raw: Any, kind: Any, seen: Seen | None = None) -> Seen:
    seen = seen if seen is not None else defaultdict(set)
    _walk(raw, inspect.type_info(kind), seen)
    return seen


def _walk(raw: Any, info: inspect.Type, seen: Seen) -> None:
    struct = _struct_of(info)
    if struct is not None and isinstance(raw, dict):
        name = struct.cls.__name__
        seen.setdefault(name, set())
        for field in struct.fields:
            if field.encode_name in raw:
                seen[name].add(field.encode_name)
                _walk(raw[field.encode_name], field.type, seen)
        return
    container = _container(info)
    if isinstance(container, inspect.DictType) and isinstance(raw, dict):
        for value in raw.values():
            _walk(value, container.value_type, seen)
    elif isinstance(container, inspect.ListType) and isinstance(raw, list):
        for value in raw:
            _walk(value, container.item_type, seen)


def declared(kind: type[msgspec.Struct]) -> set[str]:
    info = inspect.type_info(kind)
    assert isinstance(info, inspect.StructType)
    return {f.encode_name for f in info.fields}
