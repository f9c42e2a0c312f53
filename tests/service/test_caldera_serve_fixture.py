"""The test kit's pytest fixture ``caldera_serve`` (plugins/api/pytest_plugin.py), found as
plugin authors find it: through the ``pytest11`` entry point of the installed distribution,
not a conftest of this repository."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from plugins.api import testing
from plugins.api.pytest_plugin import ServeCaldera


def test_the_fixture_is_registered_through_the_entry_point(
    pytestconfig: pytest.Config,
) -> None:
    [entry] = [ep for ep in entry_points(group="pytest11") if ep.name == "caldera"]
    assert entry.value == "plugins.api.pytest_plugin"
    assert pytestconfig.pluginmanager.has_plugin("caldera")


def test_caldera_serve_serves_the_configuration(caldera_serve: ServeCaldera) -> None:
    server = caldera_serve("volcanoVersion: '1.15'\ntiers: [{plugins: [{name: conformance}]}]\n")
    assert server.get("/readyz").json()["plugins"] == ["conformance"]
    assert server.post("onSessionOpen", testing.captured_body("1.15", "onSessionOpen")).json() == {}
    system = testing.task("etcd", namespace="kube-system")
    answer = server.post(
        "preemptable", testing.request_body(evictor=testing.task(), evictees=[system])
    )
    assert answer.status == 200 and answer.json() == {"status": 1, "victims": []}  # decided: none
    bad = server.post("predicate", b'{"task": 3}')
    assert bad.status == 400 and bad.json()["verb"] == "predicate"


def test_a_server_that_cannot_start_raises_with_its_log(caldera_serve: ServeCaldera) -> None:
    with pytest.raises(RuntimeError, match=r"exited with 2:\n.*unknown plugin 'nope'"):
        caldera_serve("tiers: [{plugins: [{name: nope}]}]\n")
