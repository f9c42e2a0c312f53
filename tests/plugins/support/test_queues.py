"""The queue tree shared by nodegroup and min-runtime."""

from __future__ import annotations

import pytest

from plugins.support.queues import ROOT, QueueTree
from schemas.api import Queue, QueueInfo, QueueSpec


def queue(name: str, parent: str = "") -> QueueInfo:
    return QueueInfo(Name=name, Queue=Queue(spec=QueueSpec(parent=parent)))


TREE = QueueTree(
    {
        "root": queue("root"),
        "eng": queue("eng"),
        "ml": queue("ml", "eng"),
        "ml-train": queue("ml-train", "ml"),
        "ml-serve": queue("ml-serve", "ml"),
        "web": queue("web", "eng"),
        "ops": queue("ops", "root"),
        "loop-a": queue("loop-a", "loop-b"),
        "loop-b": queue("loop-b", "loop-a"),
    }
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("root", ("root",)),
        ("eng", ("eng", "root")),
        ("ml-train", ("ml-train", "ml", "eng", "root")),
        ("ops", ("ops", "root")),
        ("not-in-snapshot", ("not-in-snapshot", "root")),
        ("loop-a", ("loop-a", "loop-b", "root")),
    ],
)
def test_ancestors(name: str, expected: tuple[str, ...]) -> None:
    assert TREE.ancestors(name) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("ml-train", "ml-serve", "ml"),
        ("ml-train", "web", "eng"),
        ("ml-train", "ops", ROOT),
        ("ml", "ml-train", "ml"),
        ("ml-train", "ml-train", "ml-train"),
        ("unknown", "ml", ROOT),
    ],
)
def test_lowest_common_ancestor(a: str, b: str, expected: str) -> None:
    assert TREE.lowest_common_ancestor(a, b) == expected
    assert TREE.lowest_common_ancestor(b, a) == expected


def test_child_towards() -> None:
    assert TREE.child_towards("eng", "ml-train") == "ml"
    assert TREE.child_towards("ml", "ml-train") == "ml-train"
    assert TREE.child_towards("ml-train", "ml-train") is None
    assert TREE.child_towards("web", "ml-train") is None
    assert TREE.child_towards(ROOT, "ops") == "ops"


def test_parent_of_root_and_empty_parent() -> None:
    assert TREE.parent(ROOT) is None
    assert TREE.parent("eng") == ROOT
    assert "ml" in TREE and ROOT in TREE and "nope" not in TREE
