"""tests/conformance/suite/plugin_verbs.py: the verbs each built-in plugin answers on a
Volcano release, which the differential suite's mutants must cover (suite/mutate.go,
TestMutantCoverage in every release module)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "suite" / "plugin_verbs.py"


def verbs(release: str) -> dict[str, list[str]]:
    """As the suite runs it: ``python -c <the file> RELEASE``, from another directory."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.read_text(), release],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    answered: dict[str, list[str]] = json.loads(done.stdout)
    return answered


def test_the_verbs_of_v1_14_are_the_hooks_each_plugin_overrides() -> None:
    answered = verbs("1.14.1")
    assert answered["cdp"] == ["preemptable", "reclaimable"]
    assert answered["priority"] == ["preemptable"]  # no ReclaimableFn upstream
    assert answered["task-topology"] == ["allocate", "prioritize"]  # no deallocate
    # an argument switches resource-strategy-fit's predicate off; some configuration answers it
    assert answered["resource-strategy-fit"] == ["predicate", "prioritize"]
    # jobEnqueued is sent from 1.16 only
    assert answered["overcommit"] == ["jobEnqueueable"]


@pytest.mark.parametrize(
    ("release", "plugin", "expected"),
    [
        ("1.10.0", "cdp", ["preemptable"]),  # no ReclaimableFn before v1.12
        ("1.14.1", "usage", ["predicate", "prioritize"]),  # allocate/deallocate from 1.16
        ("1.16", "usage", ["allocate", "deallocate", "predicate", "prioritize"]),
        ("1.16", "overcommit", ["jobEnqueueable", "jobEnqueued"]),
        ("1.10.0", "nodegroup", []),  # Caldera's port starts at 1.13
    ],
)
def test_what_a_plugin_withdraws_on_a_release(
    release: str, plugin: str, expected: list[str]
) -> None:
    assert verbs(release)[plugin] == expected


def test_a_release_is_required() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "usage" in done.stderr
