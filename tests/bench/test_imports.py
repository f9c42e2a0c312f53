"""bench/'s modules import each other without cycles: a reader can start from any tool and
follow its imports down, never back up (run.py and profile.py once imported each other)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_imports(path: Path) -> set[str]:
    """The bench modules ``path`` imports, at the top or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "bench":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
            found.add(node.module.split(".")[1])  # type: ignore[union-attr]
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("bench."))
    return found


def test_bench_modules_import_without_cycles() -> None:
    graph = {path.stem: bench_imports(path) for path in BENCH.glob("*.py")}
    graph = {module: {i for i in imports if i in graph} for module, imports in graph.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    cycles = sorted(module for module in graph if reaches(module, module, {module}))
    assert cycles == [], f"import cycles through {cycles}: {graph}"
