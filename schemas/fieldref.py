"""The plugin-author guide's field reference, generated from the views in :mod:`schemas.k8s` and
:mod:`schemas.api`: every field of the Pod, Node, PodGroup and Queue a plugin can read, its type
and whether it is decoded with the body or when read (:mod:`schemas.lazy`).

    python -m schemas.fieldref           # rewrite the section in docs/plugin-author-guide.md
    python -m schemas.fieldref --check   # exit 1 when the committed section is not this one

The section sits between :data:`START` and :data:`END`; nothing else of the guide is touched.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from msgspec import inspect

from schemas import api, k8s
from schemas.lazy import Lazy, lazy_attributes

START = "<!-- field-reference:start -->"
END = "<!-- field-reference:end -->"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugin-author-guide.md"

ROOTS: list[tuple[str, type[msgspec.Struct], str]] = [
    ("Pod", k8s.Pod, "`task.Pod` (`TaskInfo.Pod`)"),
    ("Node", k8s.Node, "`node.Node` (`NodeInfo.Node`)"),
    ("PodGroup", api.PodGroup, "`job.PodGroup` (`JobInfo.PodGroup`)"),
    ("Queue", api.Queue, "`queue.Queue` (`QueueInfo.Queue`)"),
]
ROOT_KEYS: dict[type[msgspec.Struct], set[str]] = {
    api.PodGroup: {"metadata", "spec", "status", "Version"},
    api.Queue: {"metadata", "spec", "status"},
}
"""The top-level fields listed for these roots; their flattened v1.6–v1.13 keys (``name``,
``Spec``, ...) are folded into ``metadata``/``spec``/``status`` when decoded."""


def _type_name(kind: Any) -> str:
    """A Python annotation as the guide spells it (``list[Toleration]``, ``str``)."""
    if kind is Any:
        return "JSON"
    if kind is type(None):
        return "None"
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(kind) if m is not type(None)]
        return " | ".join(_type_name(m) for m in members)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(kind)[0])
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in typing.get_args(kind))}]"
    if isinstance(kind, type):
        return "datetime" if issubclass(kind, datetime) else kind.__name__
    return str(kind)


def _structs_in(kind: Any) -> Iterator[type[msgspec.Struct]]:
    """The struct types a field's annotation holds (its element type for lists and dicts)."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        yield kind
        return
    for arg in typing.get_args(kind):
        yield from _structs_in(arg)


def _rows(
    kind: type[msgspec.Struct], only: set[str] | None
) -> Iterator[tuple[str, Any, str, str, str]]:
    """Per field: the attribute a plugin reads, its annotation, its JSON key, when it is
    decoded and a note."""
    info = inspect.type_info(kind)
    assert isinstance(info, inspect.StructType)
    hints = typing.get_type_hints(kind, include_extras=True)
    lazies = {lazy.raw_name: lazy for lazy in lazy_attributes(kind).values()}
    for f in info.fields:
        if only is not None and f.name not in only:
            continue
        lazy: Lazy[Any] | None = lazies.get(f.name)
        if lazy is not None:
            yield lazy.name, lazy.kind, f.encode_name, "when read", lazy.__doc__ or ""
        else:
            yield f.name, hints[f.name], f.encode_name, "with the body", ""


def _tables() -> Iterator[str]:
    """One table per struct type, in the order the roots reach them, each listed once."""
    seen: set[type[msgspec.Struct]] = set()
    queue: list[type[msgspec.Struct]] = [kind for _, kind, _ in ROOTS]
    while queue:
        kind = queue.pop(0)
        if kind in seen:
            continue
        seen.add(kind)
        yield ""
        yield f"#### `{kind.__name__}` (`{kind.__module__}`)"
        yield ""
        yield "| attribute | JSON key | type | decoded | note |"
        yield "|---|---|---|---|---|"
        for attribute, annotation, key, how, note in _rows(kind, ROOT_KEYS.get(kind)):
            cell = " ".join(note.replace("|", "\\|").split())
            yield f"| `{attribute}` | `{key}` | `{_type_name(annotation)}` | {how} | {cell} |"
            queue += [s for s in _structs_in(annotation) if s not in seen]


def field_reference() -> str:
    """The section between :data:`START` and :data:`END`, markers excluded."""
    roots = [f"- {title}: {where}, a `{kind.__name__}`" for title, kind, where in ROOTS]
    return "\n".join(
        [
            "",
            "_Generated from `schemas/k8s.py` and `schemas/api.py` by `python -m"
            " schemas.fieldref`; `tests/schemas/test_fieldref.py` fails when it differs._",
            "",
            *roots,
            "",
            "*decoded with the body*: built while the request decodes. *when read*: kept as its"
            " raw JSON and decoded at every read of the attribute (keep the value in a local"
            " rather than reading it in a loop); the fields of a struct are decoded with it."
            " `JSON` is the value as `msgspec.json.decode` builds it (dicts, lists, strings,"
            ' numbers). An absent key reads as the default: `None`, `""`, `0` or `False`.'
            " PodGroup and Queue before Volcano v1.14 (flattened `metadata`, Go-named `Spec` and"
            " `Status`) decode into the same attributes.",
            *_tables(),
            "",
        ]
    )


def replaced(text: str, section: str) -> str:
    """``text`` with the part between the markers replaced by ``section``."""
    head, sep, rest = text.partition(START)
    if not sep or END not in rest:
        raise ValueError(f"the guide has no {START} ... {END} section")
    return head + START + section + END + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = GUIDE.read_text()
    wanted = replaced(text, field_reference())
    if "--check" in args:
        if wanted != text:
            print(f"{GUIDE.name}: the field reference is stale; run python -m schemas.fieldref")
            return 1
        return 0
    GUIDE.write_text(wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
