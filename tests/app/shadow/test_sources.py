"""A shadow's data sources shared with the live configuration's (app/shadow/sources.py): which
are shared, what is sent to the shadow and when, and when the shadow must rebuild."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import Backgrounds, background_key, build_backgrounds, load_config_text
from app.shadow.sources import OWN, SHARED, LiveSources, MirroredSources
from plugins.api.arguments import Arguments
from plugins.api.base import Session
from plugins.api.reasons import answer_of
from plugins.pdb.pdb import PdbPlugin
from plugins.pdb.sources import MirroredPdbSource, StaticPdbSource
from schemas.api import TaskInfo
from schemas.k8s import ObjectMeta, Pod, PodDisruptionBudget, decode_api_object


def configured(*entries: str) -> str:
    plugins = "".join(f"  - {e}\n" for e in entries)
    return f'volcanoVersion: "1.15"\ntiers:\n- plugins:\n{plugins}'


PDB = "{name: pdb, arguments: {source: file, file: /budgets.yaml}}"
OTHER_PDB = "{name: pdb, arguments: {source: file, file: /other.yaml}}"
OVERCOMMIT = "{name: overcommit}"


def budget(name: str, allowed: int) -> PodDisruptionBudget:
    return decode_api_object(
        {"metadata": {"name": name, "namespace": "default", "managedFields": [{"manager": "m"}]},
         "spec": {"selector": {"matchLabels": {"app": name}}},
         "status": {"disruptionsAllowed": allowed}},
        PodDisruptionBudget,
    )  # fmt: skip


WEB, OTHER = budget("web", 1), budget("db", 0)


def victims(source: Any) -> list[str]:
    """Which pods pdb reading ``source`` lets go: two of web, one of db."""
    plugin = PdbPlugin(Arguments({}, plugin="pdb"), source)
    plugin.on_session_open(Session())
    pods = [("web-2", "web"), ("web-1", "web"), ("db-1", "db")]
    tasks = [
        TaskInfo(UID=n, Name=n, Namespace="default",
                 Pod=Pod(metadata=ObjectMeta(name=n, namespace="default", labels={"app": a})))
        for n, a in pods
    ]  # fmt: skip
    chosen, _ = answer_of(plugin.preemptable(TaskInfo(), tasks))
    return [t.Name for t in chosen]


class Served:
    """The live configuration as a live reload would swap it."""

    def __init__(self, text: str) -> None:
        self.swap(text)

    def swap(self, text: str) -> None:
        self.config = load_config_text(text, "live.yaml")
        self.backgrounds: Backgrounds = {
            entry: StaticPdbSource() for entry in build_backgrounds(self.config)[0]
        }
        for source in self.backgrounds.values():
            assert isinstance(source, StaticPdbSource)
            source._snapshot = None  # not synced yet

    def __call__(self) -> tuple[object, Backgrounds]:
        return self.config, self.backgrounds

    def key(self) -> str:
        [entry] = self.backgrounds
        return background_key(self.config, entry)

    def source(self) -> StaticPdbSource:
        [source] = self.backgrounds.values()
        assert isinstance(source, StaticPdbSource)
        return source


def test_a_state_is_sent_once_it_syncs_and_again_only_when_replaced() -> None:
    served = Served(configured(PDB))
    live = LiveSources(served)  # type: ignore[arg-type]
    assert live.keys == {served.key()}
    assert live.changes() is None, "not synced: nothing to send"
    served.source().set([WEB])
    state = served.source().shared_state()
    assert b'"name":"web"' in state
    assert live.changes() == ({served.key()}, {served.key(): state})
    assert live.changes() is None, "unchanged: not sent again"
    served.source().set([WEB, OTHER])
    changed = live.changes()
    assert changed is not None and b'"name":"db"' in changed[1][served.key()]
    served.swap(configured(OVERCOMMIT))  # a live reload that drops pdb
    assert live.changes() == (frozenset(), {})


@pytest.mark.parametrize(
    ("live", "shadow", "source"),
    [
        pytest.param(PDB, PDB, SHARED, id="the same pdb entry: mirrored"),
        pytest.param(PDB, OTHER_PDB, OWN, id="another file: its own"),
        pytest.param(OVERCOMMIT, PDB, OWN, id="no pdb live: its own"),
    ],
)
def test_the_shadow_mirrors_exactly_the_live_sources_it_shares(
    live: str, shadow: str, source: str
) -> None:
    served = Served(configured(live))
    live_keys = LiveSources(served).keys  # type: ignore[arg-type]
    config = load_config_text(configured(shadow), "shadow.yaml")
    sources = MirroredSources(frozenset(live_keys))
    backgrounds, mirrors, _, described = sources.adopt(config, build_backgrounds(config)[0])
    assert described == {"tiers[0].plugins[0]:pdb": source}
    [background] = backgrounds.values()
    assert isinstance(background, MirroredPdbSource) == (source == SHARED)
    assert bool(mirrors) == (source == SHARED)


def test_a_mirror_answers_from_the_states_received_and_a_change_of_live_sources_rebuilds() -> None:
    served = Served(configured(PDB))
    key = served.key()
    config = load_config_text(configured(PDB), "shadow.yaml")
    sources = MirroredSources(frozenset({key}))
    backgrounds, mirrors, chosen, _ = sources.adopt(config, build_backgrounds(config)[0])
    sources.use(mirrors, chosen)
    [mirror] = backgrounds.values()
    assert isinstance(mirror, MirroredPdbSource) and not mirror.ready()

    live = served.source()
    live.set([WEB, OTHER])
    assert sources.receive(frozenset({key}), {key: live.shared_state()}) is False
    assert mirror.ready() and mirror.describe()["count"] == 2
    assert victims(mirror) == victims(live) == ["web-2"]  # one of web, none of db
    # A configuration built later starts from the newest state already received.
    again = sources.adopt(config, build_backgrounds(config)[0])[0]
    assert victims(next(iter(again.values()))) == ["web-2"]

    assert sources.receive(frozenset(), {}) is True, "the live reload dropped pdb: rebuild"
    own = MirroredSources(frozenset())
    own.use(*own.adopt(config, build_backgrounds(config)[0])[1:3])
    assert own.receive(frozenset({key}), {}) is True, "the live one now has it: rebuild"
