"""Issue 35 item 4: a plugin whose constructor or first session open raises is a configuration
that cannot serve. ``caldera serve`` exits 2 naming it, ``check-config`` fails the file the
same way, and a live reload rejects it (``/readyz`` ``rejected``, a metric, an ERROR line)
while the running configuration keeps serving, the cycle that met the failure included."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.commands.cli import main
from app.config import load_config, load_with_origin
from app.config_checks import build_problems
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Background, Plugin, Session
from tests.examples import example_json


class BuildFails(Plugin):
    """Raises in its constructor (a sessionless plugin: built when the server starts)."""

    name = "test-build-fails"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        raise RuntimeError("no licence file")


class SnapshotBuildFails(BuildFails):
    """The same, for a plugin built only when a snapshot arrives."""

    name = "test-snapshot-build-fails"
    needs_snapshot = True


class BuildFailsWithout(Plugin):
    """Raises in its constructor when its ``file`` argument names no file (a sessionless
    plugin): built when a configuration is staged, with the file there, and again at the
    switch, the file gone by then."""

    name = "test-build-fails-without"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        if not Path(arguments.get_string("file", "")).is_file():
            raise RuntimeError("no licence file")


class OpenFails(Plugin):
    """Raises as its session opens: on every snapshot, or only on one with a ``poison`` queue."""

    name = "test-open-fails-on"
    needs_snapshot = True

    def on_session_open(self, ssn: Session) -> None:
        when = self.arguments.get_string("when", "always")
        if when == "always" or ("poison" in ssn.queues and when == "poison"):
            raise ValueError(f"cannot open ({when})")


@pytest.fixture(autouse=True)
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The misbehaving plugins, installed for this module's tests only (the registry's other
    tests walk every registered plugin)."""
    registry.get("priority")  # the built-ins first: the registry loads them on first lookup
    for plugin in (BuildFails, SnapshotBuildFails, BuildFailsWithout, OpenFails):
        monkeypatch.setitem(registry._registry, plugin.name, plugin)


def config_text(*entries: str) -> str:
    plugins = "".join(f"  - {entry}\n" for entry in entries)
    return f'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: priority\n{plugins}'


CASES = {
    "sessionless-constructor": (
        "name: test-build-fails",
        "tiers[0].plugins[1]: plugin test-build-fails: building it raised RuntimeError:"
        " no licence file",
    ),
    "snapshot-constructor": (
        "name: test-snapshot-build-fails",
        "tiers[0].plugins[1]: plugin test-snapshot-build-fails: building it raised"
        " RuntimeError: no licence file",
    ),
    "first-session-open": (
        "name: test-open-fails-on",
        "tiers[0].plugins[1]: plugin test-open-fails-on: opening a session (on an empty"
        " snapshot) raised ValueError: cannot open (always)",
    ),
}


@pytest.mark.parametrize(("entry", "said"), CASES.values(), ids=CASES.keys())
def test_build_problems_name_the_plugin_where_it_stands_and_what_it_raised(
    tmp_path: Path, entry: str, said: str
) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text(entry))
    [(where, problem)] = build_problems(load_config(path))
    assert f"{where}: {problem}" == said


def test_every_failing_plugin_is_named_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text("name: test-build-fails", "name: test-open-fails-on"))
    assert [where for where, _ in build_problems(load_config(path))] == [
        "tiers[0].plugins[1]",
        "tiers[0].plugins[2]",
    ]


@pytest.mark.parametrize("command", ["serve", "check-config"])
@pytest.mark.parametrize(("entry", "said"), CASES.values(), ids=CASES.keys())
def test_serve_and_check_config_exit_2_naming_the_plugin(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    entry: str,
    said: str,
) -> None:
    """The same file fails both the same way (check-config exited 0 on it; serve exited 1 with
    a traceback for a sessionless plugin, and served 500s for a snapshot plugin)."""
    # serve configures the process's logging: keep it from outliving this test.
    monkeypatch.setattr(logging.getLogger(), "handlers", list(logging.getLogger().handlers))
    monkeypatch.setattr(logging.getLogger(), "level", logging.getLogger().level)
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text(entry))
    assert main([command, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"caldera: configuration error: {path}: {said}\n"


def test_a_plugin_that_fails_only_on_some_snapshot_passes_the_start(tmp_path: Path) -> None:
    """What an empty snapshot cannot show is the plugin's own failure at run time (its
    failure policy's business), not a configuration error."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text("name: test-open-fails-on\n    arguments: {when: poison}"))
    assert build_problems(load_config(path)) == []


# --- live reload --------------------------------------------------------------------------


def snapshot(poison: bool) -> bytes:
    body: dict[str, Any] = example_json("volcano-1.15", "onSessionOpen.request.json")
    if poison:
        queue = next(iter(body["Queues"].values()))
        body["Queues"]["poison"] = {**queue, "Name": "poison", "UID": "poison"}
    return json.dumps(body).encode()


def readyz_config(client: TestClient) -> dict[str, Any]:
    document: dict[str, Any] = client.get("/readyz").json()["config"]
    return document


@pytest.mark.parametrize(
    ("entry", "rejected"),
    [
        pytest.param(
            "name: test-build-fails", "plugin test-build-fails: building it raised", id="build"
        ),
        pytest.param(
            "name: test-open-fails-on", "opening a session (on an empty snapshot)", id="open"
        ),
        pytest.param(
            "name: not-installed",
            "unknown plugin 'not-installed' (known plugins:",
            id="not-installed",
        ),
    ],
)
async def test_a_reload_that_cannot_build_is_rejected_and_the_running_one_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, entry: str, rejected: str
) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text())
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    with TestClient(app) as client:
        served = readyz_config(client)["sha256"]
        path.write_text(config_text(entry))
        with caplog.at_level(logging.ERROR, logger="caldera.config"):
            client.portal.call(app.runtime.config_watch.check)  # type: ignore[union-attr]
        document = readyz_config(client)
        assert document["sha256"] == served and "pending" not in document
        assert rejected in document["rejected"]["error"]
        said = [r for r in caplog.records if r.name == "caldera.config" and r.levelno > 20]
        assert [r.levelname for r in said] == ["ERROR"]
        assert "caldera_config_rejected 1.0" in client.get("/metrics").text
        assert client.post("/onSessionOpen", content=snapshot(False)).status_code == 200
        if entry == "name: not-installed":
            assert document["rejected"]["error"].endswith(
                "(plugins are discovered when caldera starts; restart after installing one)"
            )


async def test_a_switch_whose_first_session_fails_goes_back_and_answers_that_cycle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Valid on an empty snapshot, raising on the next real one: that onSessionOpen is answered
    200 by the configuration served before, which keeps serving; the new one is rejected."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text())
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    with TestClient(app) as client:
        served = readyz_config(client)["sha256"]
        path.write_text(config_text("name: test-open-fails-on\n    arguments: {when: poison}"))
        client.portal.call(app.runtime.config_watch.check)  # type: ignore[union-attr]
        assert readyz_config(client)["sha256"] != served  # no session open: switched at once
        with caplog.at_level(logging.ERROR, logger="caldera.config"):
            answer = client.post("/onSessionOpen", content=snapshot(True))
        assert answer.status_code == 200, answer.text
        document = readyz_config(client)
        assert document["sha256"] == served
        assert "its first session failed to open" in document["rejected"]["error"]
        assert "cannot open (poison)" in document["rejected"]["error"]
        assert [o.name for o in app.runtime.config.plugin_options()] == ["priority"]
        assert app.runtime.sessions.current is not None  # the cycle's session is open
        said = [r for r in caplog.records if r.name == "caldera.config" and r.levelno > 20]
        assert [r.levelname for r in said] == ["ERROR"]
        metrics = client.get("/metrics").text
        assert 'caldera_config_reloads_total{outcome="rejected"} 1.0' in metrics
        assert client.post("/onSessionOpen", content=snapshot(True)).status_code == 200


async def test_a_proven_configuration_failing_later_is_its_own_error(tmp_path: Path) -> None:
    """Once the switched-to configuration has opened a session, a later failure is not a
    switch's: nothing to go back to, and the failure is answered as it is (500, named)."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text())
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    with TestClient(app) as client:
        path.write_text(config_text("name: test-open-fails-on\n    arguments: {when: poison}"))
        client.portal.call(app.runtime.config_watch.check)  # type: ignore[union-attr]
        assert client.post("/onSessionOpen", content=snapshot(False)).status_code == 200
        # After a snapshot taken the next is answered before its build (app/server/routes/verbs.py):
        # its failure is reported in /readyz, and the one after it is answered as it is.
        answered_first = client.post("/onSessionOpen", content=snapshot(True))
        assert (answered_first.status_code, answered_first.json()) == (200, {})
        assert "test-open-fails-on" in client.get("/readyz").json()["snapshot"]["error"]
        failed = client.post("/onSessionOpen", content=snapshot(True))
        assert failed.status_code == 500
        assert failed.json()["plugin"] == "test-open-fails-on"
        assert "rejected" not in readyz_config(client)


# --- counted as the plugin's faults -------------------------------------------------------


def open_faults(client: TestClient, plugin: str, kind: str) -> float:
    """``caldera_plugin_errors_total{plugin, verb="onSessionOpen", kind}`` (0 when absent)."""
    prefix = f'caldera_plugin_errors_total{{kind="{kind}",plugin="{plugin}",verb="onSessionOpen"}} '
    lines = [line for line in client.get("/metrics").text.splitlines() if line.startswith(prefix)]
    return float(lines[0][len(prefix) :]) if lines else 0.0


async def test_a_switch_whose_plugin_cannot_be_built_is_counted_as_its_fault(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Built when staged, not at the switch (its licence file went away meanwhile): the switch
    is rejected and the cycle answered by the running configuration, and the plugin's failure
    is counted, logged and shown in /readyz as any fault of a plugin is."""
    licence = tmp_path / "licence"
    licence.write_text("ok")
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text())
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    with TestClient(app) as client:
        served = readyz_config(client)["sha256"]
        assert client.post("/onSessionOpen", content=snapshot(False)).status_code == 200
        path.write_text(
            config_text(f"name: test-build-fails-without\n    arguments: {{file: {licence}}}")
        )
        client.portal.call(app.runtime.config_watch.check)  # type: ignore[union-attr]
        assert "pending" in readyz_config(client)  # a session is open: staged, not switched
        licence.unlink()
        with caplog.at_level(logging.ERROR, logger="caldera.plugins"):
            assert client.post("/onSessionOpen", content=snapshot(False)).status_code == 200
        document = readyz_config(client)
        assert document["sha256"] == served
        assert "switching to it failed" in document["rejected"]["error"]
        assert open_faults(client, "test-build-fails-without", "build") == 1
        shown = client.get("/readyz").json()["pluginErrors"]["test-build-fails-without"]
        assert shown["count"] == 1
        assert (shown["last"]["kind"], shown["last"]["error"], shown["last"]["consequence"]) == (
            "build",
            "building it raised RuntimeError: no licence file",
            "no session was opened with its configuration",
        )
        said = [r.getMessage() for r in caplog.records if r.name == "caldera.plugins"]
        assert said == [
            "plugin test-build-fails-without failed in onSessionOpen (build: building it raised"
            " RuntimeError: no licence file): no session was opened with its configuration"
            " (logged once per plugin, verb and kind, then at most every 60 s)"
        ]


@pytest.mark.parametrize("proven", [False, True], ids=["first-session", "later-session"])
async def test_a_session_open_that_raises_is_counted_as_the_plugins_fault(
    tmp_path: Path, proven: bool
) -> None:
    """Its first session (answered by the configuration served before) or a later one
    (answered 200 before its build, after a snapshot taken: app/server/routes/verbs.py): either way
    the failure is counted once per open, as ``raised``."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text())
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    with TestClient(app) as client:
        path.write_text(config_text("name: test-open-fails-on\n    arguments: {when: poison}"))
        client.portal.call(app.runtime.config_watch.check)  # type: ignore[union-attr]
        if proven:
            assert client.post("/onSessionOpen", content=snapshot(False)).status_code == 200
        answer = client.post("/onSessionOpen", content=snapshot(True))
        assert answer.status_code == 200, answer.text
        assert open_faults(client, "test-open-fails-on", "raised") == 1
        assert open_faults(client, "test-open-fails-on", "build") == 0
        last = client.get("/readyz").json()["pluginErrors"]["test-open-fails-on"]["last"]
        assert last["error"] == "opening the session raised ValueError: cannot open (poison)"


def test_check_config_counts_and_logs_nothing_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The managers check-config builds to look at a file report a failing plugin as a
    configuration error, once, not also as a plugin's fault with a traceback."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config_text("name: test-build-fails", "name: test-open-fails-on"))
    with caplog.at_level(logging.ERROR, logger="caldera.plugins"):
        assert main(["check-config", str(path)]) == 2
    assert [r.getMessage() for r in caplog.records if r.name == "caldera.plugins"] == []
    assert "failed in onSessionOpen" not in capsys.readouterr().err
