"""The plugin API's contract: which hooks a plugin takes part in, per-node scoring, the verbs a
plugin requires, and the one table every verb is derived from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest

from app.commands.volcano_entry import needed_verbs
from app.config import ConfigError, load_config_text
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Plugin, implemented_hooks
from plugins.api.extension_points import BY_HOOK, EXTENSION_POINTS, PLUGIN_HOOKS, Rule
from plugins.api.release import Release
from schemas.api import NodeInfo, TaskInfo


class ScoresOneNode(Plugin):
    name: ClassVar[str] = "scores-one-node"

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        return float(len(node.Name))


class KeepsEventState(Plugin):
    name: ClassVar[str] = "keeps-event-state"
    requires_verbs: ClassVar[tuple[str, ...]] = ("allocate", "deallocate")

    def allocate(self, task: TaskInfo) -> str | None:
        return None


@pytest.fixture
def installed() -> Iterator[None]:
    added = {cls.name: cls for cls in (ScoresOneNode, KeepsEventState)}
    registry.names()  # discover the built-in plugins first
    registry._registry.update(added)
    yield
    for name in added:
        registry._registry.pop(name, None)


def test_node_score_alone_takes_part_in_prioritize_and_is_batched() -> None:
    plugin = ScoresOneNode(Arguments())
    assert implemented_hooks(ScoresOneNode) == {"node_order"}
    scores = plugin.node_order(TaskInfo(), [NodeInfo(Name="ab"), NodeInfo(Name="abcd")])
    assert scores == {"ab": 2.0, "abcd": 4.0}


def test_a_plugin_needing_verbs_its_release_cannot_send_is_a_configuration_error(
    installed: None,
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_text(
            'volcanoVersion: "1.12"\ntiers: [{plugins: [{name: keeps-event-state}]}]', "c.yaml"
        )
    assert info.value.path == "tiers[0].plugins[0].name"
    assert "allocate, deallocate" in info.value.problem and "1.12" in info.value.problem


def test_volcano_config_always_lists_the_required_verbs(installed: None) -> None:
    config = load_config_text(
        'volcanoVersion: "1.15"\ntiers: [{plugins: [{name: keeps-event-state}]}]', "c.yaml"
    )
    verbs, _ = needed_verbs(config)
    assert verbs == ["allocate", "deallocate"]  # deallocate is not implemented, but required


def test_every_plugin_hook_is_a_method_of_the_base_class() -> None:
    for hook in PLUGIN_HOOKS:
        assert callable(getattr(Plugin, hook))
    assert set(BY_HOOK) - set(PLUGIN_HOOKS) == {"on_session_open", "on_session_close"}


def test_the_table_is_consistent() -> None:
    verbs = [point.verb for point in EXTENSION_POINTS]
    assert len(verbs) == len(set(verbs)) == 12
    for point in EXTENSION_POINTS:
        assert point.argument.startswith("extender.") and point.argument.endswith("Verb")
        assert (point.neutral is None) == (point.rule is Rule.FIRST_FAILURE)
        assert point.since >= (1, 6)


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        (Release(1, 16), True),
        (Release(1, 15), True),  # a line without a patch is its newest patch release
        (Release(1, 15, 1), True),
        (Release(1, 15, 0), False),
        (Release(1, 14), True),
        (Release(1, 14, 3), True),
        (Release(1, 14, 2), False),
        (Release(1, 13), False),
        (Release(1, 13, 9), False),
    ],
    ids=str,
)
def test_a_change_backported_to_patch_releases(release: Release, expected: bool) -> None:
    # overcommit's milli-unit GPU reservation: v1.16, backported to v1.15.1 and v1.14.3.
    assert release.has_change((1, 14, 3), (1, 15, 1)) is expected


def test_at_least_compares_patches_within_a_line_only() -> None:
    assert Release(1, 14, 1).at_least(1, 14)
    assert not Release(1, 14, 1).at_least(1, 14, 2)
    assert Release(1, 14).at_least(1, 14, 99)
    assert Release(1, 15, 0).at_least(1, 14, 3)
    assert not Release(1, 13, 9).at_least(1, 14)
    assert Release(1, 14, 1).name == "1.14.1" and Release(1, 14).name == "1.14"
