"""app/'s shape, as issue 48 set it and `farm-studio look app` draws it: each subpackage one room
and each module directly in app/ one room, an arrow for every import between rooms (under
TYPE_CHECKING and inside functions too), no circle, at most 12 floors, at most 20 modules
directly in app/. Read from the source, so a new module or import that breaks it fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
MAX_FLOORS = 12
MAX_TOP_MODULES = 20


def room_of(module: str) -> str | None:
    """The room an ``app.*`` module belongs to: ``app.server.routes.verbs`` -> ``app.server``,
    ``app.extender`` -> ``app.extender``; the package's face (``app``) and anything outside app
    -> None."""
    parts = module.split(".")
    if parts[0] != "app" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def imported(path: Path, package: str) -> Iterator[str]:
    """Every module ``path`` imports, wherever the import stands, relative ones resolved."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module
            # `from app import session` imports the module app.session
            yield from (f"{module}.{alias.name}" for alias in node.names)


@cache
def arrows() -> dict[str, set[str]]:
    """room -> the rooms it imports."""
    files: dict[Path, tuple[str, str]] = {}  # path -> (its module, the package it is in)
    for path in APP.rglob("*.py"):
        parts = path.relative_to(APP.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[path] = (module, module if path.name == "__init__.py" else module.rpartition(".")[0])
    rooms = {room for module, _ in files.values() if (room := room_of(module)) is not None}
    graph: dict[str, set[str]] = {room: set() for room in rooms}
    for path, (module, package) in files.items():
        room = room_of(module)
        if room is None:
            continue
        for name in imported(path, package):
            target = room_of(name)
            if target in rooms and target != room:
                graph[room].add(target)
    return graph


def floors() -> dict[str, int]:
    """Each room's floor: 1 for a room importing no other, else one above the highest it
    imports (a circle raises)."""
    graph, found, visiting = arrows(), {}, set()

    def floor(room: str) -> int:
        if room in found:
            return found[room]
        if room in visiting:
            raise AssertionError(f"a circle through {room}")
        visiting.add(room)
        found[room] = 1 + max((floor(target) for target in graph[room]), default=0)
        visiting.discard(room)
        return found[room]

    for room in graph:
        floor(room)
    return found


def circles() -> list[list[str]]:
    """Rooms that import each other in a loop (each loop once, from its first room)."""
    graph, loops = arrows(), []
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack:
            room, path = stack.pop()
            for target in sorted(graph[room]):
                if target == start:
                    loops.append(path)
                elif target not in path and target > start:
                    stack.append((target, [*path, target]))
    return loops


def test_the_reader_sees_the_house() -> None:
    graph = arrows()
    assert {"app.extender", "app.server", "app.shadow", "app.commands", "app.cluster_state"} <= set(
        graph
    )
    assert "app.session" in graph["app.extender"]
    assert "app.extender" in graph["app.server"]


def test_no_circle_between_rooms() -> None:
    assert circles() == []


def test_at_most_twelve_floors() -> None:
    built = floors()
    top = max(built.values())
    assert top <= MAX_FLOORS, sorted(built.items(), key=lambda item: -item[1])


def test_at_most_twenty_modules_directly_in_app() -> None:
    modules = sorted(p.name for p in APP.glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= MAX_TOP_MODULES, modules


@pytest.mark.parametrize(
    ("module", "room"),
    [
        ("app.server.routes.verbs", "app.server"),
        ("app.extender", "app.extender"),
        ("app", None),
        ("plugins.api", None),
    ],
)
def test_room_of(module: str, room: str | None) -> None:
    assert room_of(module) == room
