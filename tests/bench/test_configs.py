"""The bench's plugin configuration table (bench/configs.py) and its verdict on neutral
answers: each configuration loads as Caldera's own configuration, and each expectation fails
on the neutral answer it exists to catch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.config import load_config
from bench import configs
from bench.configs import Expect, neutral_failure


@pytest.mark.parametrize("name", sorted(configs.CONFIGS))
def test_every_configuration_loads_with_its_plugins(name: str, tmp_path: Path) -> None:
    pdb = tmp_path / "pdb.json"
    pdb.write_text("[]")
    path = configs.write(configs.CONFIGS[name], tmp_path, {"pdb": str(pdb)})
    loaded = load_config(str(path))
    assert [o.name for o in loaded.plugin_options()] == configs.CONFIGS[name].plugins
    assert str(pdb) in path.read_text() or "pdb" not in configs.CONFIGS[name].plugins


def test_every_verb_the_bench_sends_has_a_configuration() -> None:
    for verb in ("predicate", "prioritize", "preemptable", "reclaimable", "jobEnqueueable",
                 "allocate", "jobReady", "onSessionOpen", "onSessionClose", "cycle"):  # fmt: skip
        assert configs.CONFIGS[configs.VERB_CONFIG[verb]].name in configs.CONFIGS


def test_node_verbs_run_the_four_node_plugins() -> None:
    for verb in ("predicate", "prioritize"):
        assert configs.CONFIGS[configs.VERB_CONFIG[verb]].plugins == [
            "nodegroup", "usage", "resource-strategy-fit", "task-topology"
        ]  # fmt: skip
    assert configs.CONFIGS[configs.VERB_CONFIG["preemptable"]].plugins == [
        "priority", "conformance", "cdp", "pdb", "min-runtime"
    ]  # fmt: skip
    assert configs.CONFIGS[configs.VERB_CONFIG["jobEnqueueable"]].plugins == [
        "sla",
        "overcommit",
        "resourcequota",
    ]


def test_describe_names_the_configuration_and_its_tiers() -> None:
    assert configs.describe(configs.CONFIGS["enqueue-plugins"]) == (
        "enqueue-plugins: sla, overcommit, resourcequota"
    )
    assert " | " in configs.describe(configs.CONFIGS["all-plugins"])


REJECT = "node does not satisfy the node group affinity"
CASES: list[tuple[str, Expect, Any, bool]] = [
    # (name, expectation, answer, passes)
    ("predicate passes", Expect("pass"), {"status": "", "code": 0}, True),
    ("predicate expected to pass but rejected", Expect("pass"), {"status": REJECT, "code": 3}, False),
    ("predicate rejected by the right plugin", Expect("reject", REJECT),
     {"status": REJECT, "code": 3}, True),
    ("predicate neutral where a rejection is expected", Expect("reject", REJECT),
     {"status": "", "code": 0}, False),
    ("predicate rejected by another plugin", Expect("reject", REJECT),
     {"status": "the CPU load of the node exceeds the upper limit.", "code": 3}, False),
    ("scores differ", Expect("scores-differ"), {"nodeScore": {"a": 150.0, "b": 100.0}}, True),
    ("all scores equal", Expect("scores-differ"), {"nodeScore": {"a": 0.0, "b": 0.0}}, False),
    ("no scores", Expect("scores-differ"), {"nodeScore": {}}, False),
    ("some victims", Expect("some-victims", evictees=3), {"status": 1, "victims": [{}, {}]}, True),
    ("every evictee a victim", Expect("some-victims", evictees=2),
     {"status": 1, "victims": [{}, {}]}, False),
    ("no victim", Expect("some-victims", evictees=2), {"status": 1, "victims": []}, False),
    ("abstain", Expect("some-victims", evictees=2), {"status": 0, "victims": []}, False),
    ("enqueue permit", Expect("decided"), {"status": 1}, True),
    ("enqueue reject", Expect("decided"), {"status": -1}, True),
    ("enqueue abstain", Expect("decided"), {"status": 0}, False),
    ("over quota rejected", Expect("enqueue-reject"), {"status": -1}, True),
    ("over quota permitted", Expect("enqueue-reject"), {"status": 1}, False),
    ("not an object", Expect("pass"), [], False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "expect", "answer", "passes"), CASES, ids=[c[0] for c in CASES])
def test_neutral_failure(name: str, expect: Expect, answer: Any, passes: bool) -> None:
    why = neutral_failure(expect, answer)
    assert (why is None) is passes, why


def test_an_unknown_expectation_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown expectation"):
        neutral_failure(Expect("sometimes"), {})
