"""The runtime's own lifecycle, without an app (``app/server/runtime.py``): what
:meth:`Runtime.start` starts, what :meth:`Runtime.stop` stops (also after a start that raised), and
what a switch publishes. Through the app and a real server: tests/app/server/test_config_watch.py,
tests/service/test_config_reload.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from app.config import CalderaConfig, build_backgrounds, load_config_text
from app.server.features import RECORD
from app.server.options import ServeOptions
from app.server.runtime import Runtime
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Background, Plugin


class Journaled:
    """A data source that writes each start and stop to the plugin's journal; ``fails: start``
    raises as it starts."""

    def __init__(self, name: str, fails: str) -> None:
        self.name = name
        self.fails = fails

    async def start(self) -> None:
        if self.fails == "start":
            raise RuntimeError(f"{self.name} cannot start")
        WithSource.journal.append(f"start {self.name}")

    async def stop(self) -> None:
        WithSource.journal.append(f"stop {self.name}")

    def ready(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class WithSource(Plugin):
    name = "test-with-source"
    journal: ClassVar[list[str]] = []

    @classmethod
    def create_background(cls, arguments: Arguments) -> Background | None:
        return Journaled(arguments.get_string("source", ""), arguments.get_string("fails", ""))


@pytest.fixture(autouse=True)
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.get("priority")  # the built-ins first: the registry loads them on first lookup
    monkeypatch.setitem(registry._registry, WithSource.name, WithSource)
    monkeypatch.setattr(WithSource, "journal", [])


def source(arguments: str) -> str:
    return f"{{name: {WithSource.name}, arguments: {{{arguments}}}}}"


def config(*entries: str, session_state: str = "snapshot") -> CalderaConfig:
    plugins = "".join(f"  - {entry}\n" for entry in entries)
    text = f'sessionState: {session_state}\nvolcanoVersion: "1.15"\ntiers:\n- plugins:\n{plugins}'
    return load_config_text(text, "caldera.yaml")


CASES = {
    "started in order, stopped in reverse": (
        ("source: a", "source: b"),
        ["start a", "start b"],
        ["start a", "start b", "stop b", "stop a"],
    ),
    "a start that raises: what started is stopped, the rest is not": (
        ("source: a", "source: b, fails: start", "source: c"),
        ["start a"],
        ["start a", "stop a"],
    ),
}


@pytest.mark.parametrize(("sources", "after_start", "after_stop"), CASES.values(), ids=CASES)
async def test_stop_stops_what_start_started(
    sources: tuple[str, ...], after_start: list[str], after_stop: list[str]
) -> None:
    runtime = Runtime(ServeOptions.of(config(*map(source, sources))))
    try:
        await runtime.start()
    except RuntimeError as exc:
        assert "cannot start" in str(exc)
    assert WithSource.journal == after_start
    await runtime.stop()
    assert WithSource.journal == after_stop


async def test_stop_closes_the_recorder(tmp_path: Path) -> None:
    options = ServeOptions.of(config(source("source: a"))).replace(record=str(tmp_path / "rec"))
    runtime = Runtime(options)
    recorder = runtime.recorder
    assert recorder is not None and runtime.clock == recorder.clock
    await runtime.start()
    await runtime.stop()
    assert not recorder._thread.is_alive()  # closed: everything queued is written


def test_a_record_directory_that_cannot_be_used_is_a_degraded_feature(tmp_path: Path) -> None:
    """serve --record into a directory it cannot make: no recorder, and the feature degraded
    (an ERROR, the gauge, /readyz), not a runtime that fails to build."""
    (tmp_path / "file").write_text("")
    options = ServeOptions.of(config(source("source: a")))
    runtime = Runtime(options.replace(record=str(tmp_path / "file" / "rec")))
    assert runtime.recorder is None
    assert runtime.metrics.feature_degraded.labels(RECORD)._value.get() == 1
    assert "record directory" in runtime.features.describe()[RECORD]["reason"]


def test_a_write_failure_degrades_the_record_feature(tmp_path: Path) -> None:
    """The recorder is built telling the features of a write that fails (not told after)."""
    options = ServeOptions.of(config(source("source: a"))).replace(record=str(tmp_path / "rec"))
    runtime = Runtime(options)
    assert runtime.recorder is not None
    assert runtime.metrics.feature_degraded.labels(RECORD)._value.get() == 0
    runtime.recorder.on_failure("disk full")  # what the writer thread calls
    assert runtime.features.describe()[RECORD]["reason"] == "disk full"
    runtime.recorder.close()


def test_a_switch_publishes_the_new_configuration_its_sessions_and_data_sources() -> None:
    runtime = Runtime(ServeOptions.of(config(source("source: a"))))
    before = runtime.served
    new = config(source("source: a"), source("source: b"))
    backgrounds, _ = build_backgrounds(new)
    runtime.switch(new, backgrounds)
    assert runtime.config is new and runtime.extender.sessions is runtime.sessions
    assert runtime.sessions is not before.sessions
    assert [b.describe() for b in runtime.backgrounds.values()] == [{"name": "a"}, {"name": "b"}]
    assert list(runtime.backgrounds) == [
        f"tiers[0].plugins[0]:{WithSource.name}",
        f"tiers[0].plugins[1]:{WithSource.name}",
    ]


class NeedsSnapshot(Plugin):
    name = "test-needs-snapshot"
    needs_snapshot = True


EXPECTED = {
    "sessionless plugins": ("snapshot", source("source: a"), 0),
    "a snapshot plugin": ("snapshot", f"{{name: {NeedsSnapshot.name}}}", 1),
    "a snapshot plugin, sessionState cluster": ("cluster", f"{{name: {NeedsSnapshot.name}}}", 0),
}


@pytest.mark.parametrize(("session_state", "entry", "expected"), EXPECTED.values(), ids=EXPECTED)
def test_a_session_is_expected_every_period_only_of_snapshot_plugins_fed_by_volcano(
    monkeypatch: pytest.MonkeyPatch, session_state: str, entry: str, expected: int
) -> None:
    monkeypatch.setitem(registry._registry, NeedsSnapshot.name, NeedsSnapshot)
    runtime = Runtime(ServeOptions.of(config(entry, session_state=session_state)))
    assert runtime.metrics.snapshot_expected._value.get() == expected
