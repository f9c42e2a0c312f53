"""The queue hierarchy of a session: parents, ancestors, lowest common ancestor.

Volcano's hierarchical queues (``capacity`` plugin, ``enableHierarchy``) hang every queue under
``spec.parent``; an empty parent means ``root``, and ``root`` is its own top. This is built once
per session from the snapshot's queues and shared by the plugins that walk the tree (nodegroup's
inherited affinity, min-runtime's resolution). A parent cycle or a parent missing from the
snapshot cannot crash a walk: the walk stops there and continues at ``root``.
"""

from __future__ import annotations

from collections.abc import Mapping

from schemas.api import QueueInfo

ROOT = "root"


def parent_name(info: QueueInfo) -> str:
    """``spec.parent``, or ``root`` when empty (``root`` itself has no parent)."""
    if info.Name == ROOT:
        return ""
    parent = info.Queue.spec.parent if info.Queue is not None else ""
    return parent or ROOT


class QueueTree:
    def __init__(self, queues: Mapping[str, QueueInfo]) -> None:
        self._parent: dict[str, str] = {name: parent_name(info) for name, info in queues.items()}
        self._parent.pop(ROOT, None)
        self._ancestors: dict[str, tuple[str, ...]] = {}

    def __contains__(self, name: object) -> bool:
        return name == ROOT or name in self._parent

    def parent(self, name: str) -> str | None:
        """The parent queue's name; None for ``root``. A queue the snapshot does not hold hangs
        under ``root``."""
        if name == ROOT:
            return None
        return self._parent.get(name, ROOT)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """``name`` and every queue above it, nearest first, ending at ``root``."""
        cached = self._ancestors.get(name)
        if cached is not None:
            return cached
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current != ROOT and current not in seen:
            seen.add(current)
            path.append(current)
            current = self.parent(current)
        path.append(ROOT)
        result = tuple(path)
        self._ancestors[name] = result
        return result

    def lowest_common_ancestor(self, a: str, b: str) -> str:
        """The deepest queue that is ``a`` or above it and ``b`` or above it (``root`` at worst)."""
        above_b = set(self.ancestors(b))
        for queue in self.ancestors(a):
            if queue in above_b:
                return queue
        return ROOT

    def child_towards(self, ancestor: str, descendant: str) -> str | None:
        """The queue one step below ``ancestor`` on the way down to ``descendant``; None when
        ``descendant`` is ``ancestor`` or not below it."""
        path = self.ancestors(descendant)
        if ancestor not in path:
            return None
        index = path.index(ancestor)
        return path[index - 1] if index > 0 else None
