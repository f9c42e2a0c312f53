"""``sessionState`` in the configuration file: the modes, and every reason one is refused."""

from __future__ import annotations

import pytest

from app.config import ConfigError, load_config_text

SLA = "tiers:\n- plugins:\n  - name: sla\n"
USAGE = "tiers:\n- plugins:\n  - name: usage\n"

ACCEPTED = [
    ("the default is the snapshot", 'volcanoVersion: "1.14"\n' + SLA, "snapshot"),
    ("compare on 1.14", 'volcanoVersion: "1.14"\nsessionState: compare\n' + SLA, "compare"),
    (
        "compare with usage (it still reads the snapshot)",
        'volcanoVersion: "1.14"\nsessionState: compare\n' + USAGE,
        "compare",
    ),
    ("snapshot on 1.12", 'volcanoVersion: "1.12"\nsessionState: snapshot\n' + SLA, "snapshot"),
]


@pytest.mark.parametrize(("text", "mode"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_accepted(text: str, mode: str) -> None:
    config = load_config_text(text, "caldera.yaml")
    assert config.sessionState == mode
    assert config.sessionStateSchedulerNames == ["volcano"]
    assert config.sessionStateDefaultQueue == "default"


REFUSED = [
    (
        "compare before allocate/deallocate exist",
        'volcanoVersion: "1.12"\nsessionState: compare\n' + SLA,
        ["sessionState: Volcano 1.12 sends no allocateFunc/deallocateFunc"],
    ),
    (
        "cluster is not served yet",
        'volcanoVersion: "1.14"\nsessionState: cluster\n' + SLA,
        ["sessionState: sessionState cluster is not served yet"],
    ),
    (
        "cluster with usage names the plugin and its reason",
        'volcanoVersion: "1.14"\nsessionState: cluster\n' + USAGE,
        [
            "sessionState: sessionState cluster is not served yet",
            "tiers[0].plugins[0].name: plugin 'usage' cannot run with sessionState cluster: it"
            " reads each node's ResourceUsage, which Volcano's metrics source fills",
        ],
    ),
    ("an unknown mode", "sessionState: clusters\n", ["sessionState: Input should be"]),
]


@pytest.mark.parametrize(
    ("text", "messages"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused_with_the_reason(text: str, messages: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text(text, "caldera.yaml")
    for message in messages:
        assert message in str(caught.value)


def test_volcano_config_asks_for_what_compare_mode_reads() -> None:
    """The snapshot to compare, and allocate/deallocate for Volcano's placements, even when no
    hosted plugin answers them."""
    from app.cli import needed_verbs

    config = load_config_text('volcanoVersion: "1.14"\nsessionState: compare\n', "caldera.yaml")
    verbs, _ = needed_verbs(config)
    assert {"onSessionOpen", "onSessionClose", "allocate", "deallocate"} <= set(verbs)
    plain = load_config_text('volcanoVersion: "1.14"\n', "caldera.yaml")
    assert not {"allocate", "deallocate"} & set(needed_verbs(plain)[0])
