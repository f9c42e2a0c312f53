"""Access to the example bodies in tests/fixtures (see tests/fixtures/README.md).

Everything a test reads lives inside the repository, so a plain clone can run the suite:
- ``protocol-examples/<dialect>``: the hand-built examples of the protocol reference, per wire
  dialect ("head", "v1.9", "v1.6-v1.7");
- ``volcano-<release>``: request bodies captured from that Volcano release's own json.Marshal by
  tests/conformance, shipped in the package for plugin authors (plugins/api/captured, read
  through plugins.api.testing): the tests read that one copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugins.api.testing import CAPTURED as SHIPPED

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = FIXTURES / "protocol-examples"
CAPTURED_BODIES = SHIPPED
"""``volcano-<release>/<verb>.request.json``: the captured bodies, as the wheel ships them."""
CAPTURED = "volcano-1.15"


def example_path(source: str, name: str) -> Path:
    """``source`` is a dialect of the hand-built examples or a captured set ("volcano-1.15")."""
    if source.startswith("volcano-"):
        return CAPTURED_BODIES / source / name
    return EXAMPLES / source / name


def example_bytes(source: str, name: str) -> bytes:
    """The example, compacted as Go's json.Marshal writes it."""
    data = json.loads(example_path(source, name).read_bytes())
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def example_json(source: str, name: str) -> Any:
    return json.loads(example_path(source, name).read_bytes())


# Volcano v1.15.1's Helm chart default (installer/helm/chart/volcano/config/volcano-scheduler.conf):
# the actions ask no victims.
HELM_DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
