"""Access to the example bodies in shared/reference/protocol-examples and tests/fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT.parent / "shared" / "reference" / "protocol-examples"
FIXTURES = ROOT / "tests" / "fixtures"


def example_path(dialect: str, name: str) -> Path:
    return EXAMPLES / dialect / name


def example_bytes(dialect: str, name: str) -> bytes:
    """The example, compacted as Go's json.Marshal writes it."""
    data = json.loads(example_path(dialect, name).read_bytes())
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def example_json(dialect: str, name: str) -> Any:
    return json.loads(example_path(dialect, name).read_bytes())
