"""``sessionState`` in the configuration file: the modes, and every reason one is refused."""

from __future__ import annotations

from pathlib import Path

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
    ("cluster on 1.14", 'volcanoVersion: "1.14"\nsessionState: cluster\n' + SLA, "cluster"),
    ("cluster on 1.13", 'volcanoVersion: "1.13"\nsessionState: cluster\n' + SLA, "cluster"),
    ("usage with the snapshot", 'volcanoVersion: "1.14"\n' + USAGE, "snapshot"),
    ("compare with auto", "volcanoVersion: auto\nsessionState: compare\n" + SLA, "compare"),
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
        "cluster before allocate/deallocate exist",
        'volcanoVersion: "1.12"\nsessionState: cluster\n' + SLA,
        ["sessionState: Volcano 1.12 sends no allocateFunc/deallocateFunc (they exist from 1.13)"],
    ),
    (
        "cluster with usage names the plugin and its reason",
        'volcanoVersion: "1.14"\nsessionState: cluster\n' + USAGE,
        [
            "tiers[0].plugins[0].name: plugin 'usage' cannot run with sessionState cluster: it"
            " reads each node's ResourceUsage, which Volcano's metrics source fills",
        ],
    ),
    (
        "cluster with the release inferred from a snapshot it never receives",
        "volcanoVersion: auto\nsessionState: cluster\n" + SLA,
        ["volcanoVersion: volcanoVersion auto infers the release from onSessionOpen's body"],
    ),
    (
        "every reason at once",
        'volcanoVersion: "1.12"\nsessionState: cluster\n' + USAGE,
        [
            "sessionState: Volcano 1.12 sends no allocateFunc/deallocateFunc",
            "tiers[0].plugins[0].name: plugin 'usage' cannot run with sessionState cluster",
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
    from app.commands.volcano_entry import needed_verbs

    config = load_config_text('volcanoVersion: "1.14"\nsessionState: compare\n', "caldera.yaml")
    verbs, _ = needed_verbs(config)
    assert {"onSessionOpen", "onSessionClose", "allocate", "deallocate"} <= set(verbs)
    plain = load_config_text('volcanoVersion: "1.14"\n', "caldera.yaml")
    assert not {"allocate", "deallocate"} & set(needed_verbs(plain)[0])


def test_volcano_config_leaves_onsessionopen_out_in_cluster_mode() -> None:
    """Cluster mode's point: Volcano never marshals its snapshot. It still sends the session's
    end and its placements, even when no hosted plugin answers them."""
    from app.commands.volcano_entry import needed_verbs

    for plugins in ("", SLA, "tiers:\n- plugins:\n  - name: priority\n  - name: overcommit\n"):
        config = load_config_text(
            'volcanoVersion: "1.14"\nsessionState: cluster\n' + plugins, "caldera.yaml"
        )
        verbs, _ = needed_verbs(config)
        assert "onSessionOpen" not in verbs, plugins
        assert {"onSessionClose", "allocate", "deallocate"} <= set(verbs), plugins


def test_the_refusal_is_the_plugin_class_own() -> None:
    """One place says a plugin's state is in the snapshot only: its class. Every registered
    plugin is asked; only those declaring it are refused, each with its own reason."""
    from app.cluster_state.modes import problems
    from plugins.api import registry
    from plugins.api.release import Release

    release = Release.of((1, 14))
    for name in registry.names():
        cls = registry.get(name)
        assert cls is not None
        found = problems("cluster", release, [("tiers[0].plugins[0]", name, cls)])
        reason = cls.snapshot_only
        assert [p for _, p in found] == (
            [f"plugin {name!r} cannot run with sessionState cluster: {reason}"] if reason else []
        ), name
    usage = registry.get("usage")
    assert usage is not None and usage.snapshot_only is not None


def test_check_config_refuses_cluster_mode_with_every_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.commands.cli import main

    path = tmp_path / "caldera.yaml"
    path.write_text('volcanoVersion: "1.12"\nsessionState: cluster\n' + USAGE)
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sessionState: Volcano 1.12 sends no allocateFunc/deallocateFunc" in err
    assert "tiers[0].plugins[0].name: plugin 'usage' cannot run with sessionState cluster" in err


def test_volcano_config_sizes_no_snapshot_in_cluster_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.commands.cli import main

    path = tmp_path / "caldera.yaml"
    path.write_text('volcanoVersion: "1.14"\nsessionState: cluster\n' + SLA)
    assert (
        main(["volcano-config", "--config", str(path), "--nodes", "1000", "--pods", "10000"]) == 0
    )
    out = capsys.readouterr().out
    assert "# sizing: no snapshot: Volcano does not marshal or send one" in out
    assert "155.6 MiB" not in out and "onSessionOpenVerb" not in out
    assert "extender.onSessionCloseVerb: onSessionClose" in out
