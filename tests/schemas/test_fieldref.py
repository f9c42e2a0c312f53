"""The plugin-author guide's field reference is the one schemas/fieldref.py generates from the
views, and it lists every field a plugin can read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from schemas import api, k8s
from schemas.fieldref import END, GUIDE, START, field_reference, replaced
from schemas.lazy import lazy_attributes

ROOT = Path(__file__).resolve().parents[2]


def committed() -> str:
    text = GUIDE.read_text()
    return text.split(START, 1)[1].split(END, 1)[0]


def test_the_committed_reference_is_the_generated_one() -> None:
    assert committed() == field_reference(), "run: uv run python -m schemas.fieldref"


def test_the_guides_check_command_passes() -> None:
    """The command the guide shows, run as it says (it fails on a stale section: below)."""
    done = subprocess.run(
        [sys.executable, "-m", "schemas.fieldref", "--check"], cwd=ROOT, capture_output=True
    )
    assert done.returncode == 0, done.stdout.decode()


def test_check_fails_on_a_stale_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas import fieldref

    stale = tmp_path / "guide.md"
    stale.write_text(f"# Guide\n{START}\nan old table\n{END}\nafter\n")
    monkeypatch.setattr(fieldref, "GUIDE", stale)
    assert fieldref.main(["--check"]) == 1
    assert fieldref.main([]) == 0  # rewrites the section, and only it
    text = stale.read_text()
    assert text.startswith(f"# Guide\n{START}") and text.endswith(f"{END}\nafter\n")
    assert fieldref.main(["--check"]) == 0


def test_a_guide_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="field-reference"):
        replaced("# no section\n", "x")


# Keys a plugin reads that the reference must list (the examples), as `attribute` rows.
EXPECTED_ROWS = {
    "NodeSpec": ["taints", "unschedulable", "podCIDR", "providerID"],
    "NodeStatus": ["conditions", "capacity", "allocatable", "nodeInfo", "addresses"],
    "PodSpec": ["nodeSelector", "tolerations", "affinity", "containers", "priorityClassName",
                "schedulerName"],
    "PodGroupSpec": ["min_member", "network_topology"],
    "QueueStatus": ["state", "reservation"],
}  # fmt: skip


@pytest.mark.parametrize("view", sorted(EXPECTED_ROWS))
def test_the_reference_lists_the_common_fields(view: str) -> None:
    section = field_reference().split(f"#### `{view}`", 1)[1].split("####", 1)[0]
    for attribute in EXPECTED_ROWS[view]:
        assert f"| `{attribute}` |" in section, f"{view}.{attribute}"


@pytest.mark.parametrize(
    "view", [k8s.PodSpec, k8s.NodeStatus, k8s.Container, api.QueueSpec], ids=lambda v: v.__name__
)
def test_every_declared_key_of_a_view_is_a_row(view: type[msgspec.Struct]) -> None:
    """Each JSON key is listed once, under the attribute a plugin reads (a lazy one's, not its
    raw twin's)."""
    section = field_reference().split(f"#### `{view.__name__}`", 1)[1].split("####", 1)[0]
    for f in msgspec.structs.fields(view):
        assert f"| `{f.encode_name}` |" in section, f.encode_name
    for lazy in lazy_attributes(view).values():
        assert f"| `{lazy.name}` |" in section
        assert f"| `{lazy.raw_name}` |" not in section
