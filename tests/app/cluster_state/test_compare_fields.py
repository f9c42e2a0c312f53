"""Every field compare mode covers, proven one at a time (issue 50, item 1).

Compare mode walks the typed views by reflection, so what it compares is "every field not in
``compare.SKIPPED``". Two tests hold that to account:

- the skip table is pinned here, each entry with its reason in app/cluster_state/compare.py:
  a field newly left out of the comparison fails until it is added below, after checking that
  no hosted plugin reads it (it then also leaves what cluster mode guarantees a plugin);
- every other leaf of every view an onSessionOpen body holds is changed, one at a time, on one
  side of a comparison, and compare mode must report a difference of that field's kind. A view
  or a field added to schemas/ is generated here from its type and proven the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from app.cluster_state import compare as compare_module
from app.cluster_state.compare import SKIPPED, compare
from schemas.api import JobInfo, NamespaceInfo, NodeInfo, QueueInfo, TaskInfo
from schemas.requests import OnSessionOpenRequest

PINNED_SKIPS = {
    "NodeInfo": {"TasksRaw", "Capability"},
    "PodGroup": {"name", "namespace", "uid", "creationTimestamp", "labels", "annotations",
                 "Spec", "Status"},
    "Queue": {"name", "uid", "creationTimestamp", "labels", "annotations", "Spec", "Status"},
    "ObjectMeta": {"resourceVersion", "generation", "managedFieldsRaw"},
}  # fmt: skip
"""What compare mode leaves out, by view. Change it only with compare.SKIPPED's reason."""

SECTIONS: dict[str, tuple[str, type[msgspec.Struct]]] = {
    "job": ("Jobs", JobInfo),
    "node": ("Nodes", NodeInfo),
    "queue": ("Queues", QueueInfo),
    "namespace": ("NamespaceInfo", NamespaceInfo),
}
"""Each comparison section: its key in the onSessionOpen body and its view."""

RAW_AS: dict[tuple[type, str], Any] = {(NodeInfo, "TasksRaw"): dict[str, TaskInfo]}
"""Raw fields compared through a decoded property: generated as what they decode to."""

DATE = "2026-01-01T00:00:00Z"


def reachable_structs(through_skipped: bool = True) -> dict[str, mi.StructType]:
    """The views an onSessionOpen body holds (``through_skipped`` False: only those a compared
    field holds, leaving out the v1.6-v1.13 shapes folded into the current ones)."""
    found: dict[str, mi.StructType] = {}

    def walk(kind: mi.Type) -> None:
        if isinstance(kind, mi.StructType):
            if kind.cls.__name__ in found:
                return
            found[kind.cls.__name__] = kind
            for field in kind.fields:
                if through_skipped or field.name not in SKIPPED.get(kind.cls, {}):
                    walk(field.type)
            return
        for attribute in ("types", "item_type", "key_type", "value_type"):
            inner = getattr(kind, attribute, None)
            for each in inner if isinstance(inner, tuple) else (inner,) if inner else ():
                walk(each)

    walk(mi.type_info(OnSessionOpenRequest))
    walk(mi.type_info(dict[str, TaskInfo]))
    return found


def sample(kind: mi.Type) -> Any:
    """A JSON value of ``kind`` with every compared field present and non-empty."""
    if isinstance(kind, mi.StructType):
        skipped = SKIPPED.get(kind.cls, {})
        value = {}
        for field in kind.fields:
            if (kind.cls, field.name) in RAW_AS:
                value[field.encode_name] = sample(mi.type_info(RAW_AS[kind.cls, field.name]))
            elif field.name not in skipped:
                value[field.encode_name] = sample(field.type)
        return value
    if isinstance(kind, mi.UnionType):
        return sample(next(t for t in kind.types if not isinstance(t, mi.NoneType)))
    if isinstance(kind, mi.DictType):
        return {"key": sample(kind.value_type)}
    if isinstance(kind, mi.ListType):
        return [sample(kind.item_type)]
    if isinstance(kind, mi.RawType):
        return {"raw": 1}
    scalars: dict[type, Any] = {
        mi.StrType: "s", mi.IntType: 1, mi.FloatType: 1.5, mi.BoolType: True, mi.DateTimeType: DATE,
    }  # fmt: skip
    return scalars[type(kind)]


def leaves(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from leaves(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from leaves(inner, (*path, index))
    else:
        yield path


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if value == DATE:
        return "2026-01-02T00:00:00Z"
    assert isinstance(value, str)
    return value + "-other"


def with_leaf_changed(document: Any, path: tuple[str | int, ...]) -> Any:
    copy = msgspec.json.decode(msgspec.json.encode(document))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = changed(holder[path[-1]])
    return copy


def expected_kind(section: str, view: type[msgspec.Struct], path: tuple[str | int, ...]) -> str:
    """The kind compare mode names a change at ``path``: the top field's (a job's tasks are
    their own section)."""
    if section == "job" and path[0] == "Tasks":
        return f"task.{_attribute(TaskInfo, str(path[2]))}"
    return f"{section}.{_attribute(view, str(path[0]))}"


def _attribute(view: type[msgspec.Struct], encoded: str) -> str:
    info = mi.type_info(view)
    assert isinstance(info, mi.StructType)
    name = next(f.name for f in info.fields if f.encode_name == encoded)
    return "Tasks" if (view, name) in RAW_AS else name


def cases() -> list[tuple[str, tuple[str | int, ...]]]:
    found = []
    for section, (_, view) in SECTIONS.items():
        for path in leaves(sample(mi.type_info(view))):
            found.append((section, path))
    return found


CASES = cases()


def test_every_field_is_compared_or_skipped_with_its_reason() -> None:
    structs = reachable_structs()
    skipped = {kind.__name__: set(fields) for kind, fields in SKIPPED.items()}
    assert skipped == PINNED_SKIPS, (
        "compare mode's skip list changed: pin it here once no hosted plugin reads the field"
    )
    for kind, fields in SKIPPED.items():
        assert kind.__name__ in structs, f"{kind.__name__} is no view of an onSessionOpen body"
        declared = {field.name for field in structs[kind.__name__].fields}
        for name, reason in fields.items():
            assert name in declared, f"{kind.__name__}.{name} is no field"
            assert len(reason) > 20, f"{kind.__name__}.{name}: say why it is not compared"
    # The cases below reach every compared field of every view.
    reached = {
        (view, step)
        for section, path in CASES
        for view, step in _views_along(SECTIONS[section][1], path)
    }
    for name, info in reachable_structs(through_skipped=False).items():
        if name == "OnSessionOpenRequest":
            continue
        for field in info.fields:
            if field.name in SKIPPED.get(info.cls, {}) and (info.cls, field.name) not in RAW_AS:
                continue
            assert (name, field.encode_name) in reached, f"{name}.{field.name} is never changed"


def _views_along(
    view: type[msgspec.Struct], path: tuple[str | int, ...]
) -> Iterator[tuple[str, str]]:
    """(view name, encoded field) for each struct field the path passes through."""
    kind: mi.Type = mi.type_info(view)
    for step in path:
        while isinstance(kind, mi.UnionType):
            kind = next(t for t in kind.types if not isinstance(t, mi.NoneType))
        if isinstance(kind, mi.StructType):
            yield kind.cls.__name__, str(step)
            field = next(f for f in kind.fields if f.encode_name == step)
            raw = RAW_AS.get((kind.cls, field.name))
            kind = mi.type_info(raw) if raw is not None else field.type
        elif isinstance(kind, mi.DictType):
            kind = kind.value_type
        elif isinstance(kind, mi.ListType):
            kind = kind.item_type
        else:
            return


@pytest.mark.parametrize(
    ("section", "path"), CASES, ids=[f"{s}.{'.'.join(map(str, p))}" for s, p in CASES]
)
def test_a_change_of_each_compared_field_is_reported(
    section: str, path: tuple[str | int, ...]
) -> None:
    key, view = SECTIONS[section]
    document = sample(mi.type_info(view))
    sent = msgspec.json.decode(
        msgspec.json.encode({key: {"x": document}}), type=OnSessionOpenRequest
    )
    derived = msgspec.json.decode(
        msgspec.json.encode({key: {"x": with_leaf_changed(document, path)}}),
        type=OnSessionOpenRequest,
    )
    kinds = {difference.kind for difference in compare(sent, derived)}
    assert kinds == {expected_kind(section, view, path)}


def test_a_field_dropped_from_the_comparison_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof above is not vacuous: with JobInfo.MinAvailable skipped (one of the fields
    issue 50 dropped with every test green), its case reports nothing."""
    monkeypatch.setitem(compare_module._SKIPPED, JobInfo, frozenset({"MinAvailable"}))
    document = sample(mi.type_info(JobInfo))
    sent = msgspec.json.decode(
        msgspec.json.encode({"Jobs": {"x": document}}), type=OnSessionOpenRequest
    )
    derived = msgspec.json.decode(
        msgspec.json.encode({"Jobs": {"x": with_leaf_changed(document, ("MinAvailable",))}}),
        type=OnSessionOpenRequest,
    )
    assert compare(sent, derived) == []


def test_the_guide_lists_exactly_the_fields_not_compared() -> None:
    guide = (Path(__file__).resolve().parents[3] / "docs" / "plugin-author-guide.md").read_text()
    table = guide.split("test_compare_fields.py checks it -->", 1)[1].split("\n\n", 1)[0]
    listed: dict[str, set[str]] = {}
    for row in table.splitlines()[3:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        listed[cells[0].strip("`")] = {name.strip().strip("`") for name in cells[1].split(",")}
    assert listed == {kind.__name__: set(fields) for kind, fields in SKIPPED.items()}
