"""app/server/features.py: optional features degrade, loudly, and never stop the scheduler. Over a
real server: tests/service/test_optional_features.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, Gauge

from app.config import load_config
from app.server.features import Features
from app.server.main import create_app
from app.server.options import ServeOptions


def features(grace: float = 60.0) -> tuple[Features, CollectorRegistry, list[float]]:
    registry = CollectorRegistry()
    now = [0.0]
    gauge = Gauge("caldera_feature_degraded", "", ["feature"], registry=registry)
    return Features(gauge, monotonic=lambda: now[0], grace=grace), registry, now


def value(registry: CollectorRegistry, feature: str) -> float | None:
    return registry.get_sample_value("caldera_feature_degraded", {"feature": feature})


def test_a_failure_is_one_error_until_it_works_again(caplog: pytest.LogCaptureFixture) -> None:
    state, registry, _ = features()
    state.enabled("record")
    assert value(registry, "record") == 0
    with caplog.at_level(logging.INFO, logger="caldera.features"):
        state.failed("record", "disk full", "nothing is recorded")
        state.failed("record", "disk still full")
        assert value(registry, "record") == 1
        assert state.describe()["record"]["reason"] == "disk still full"
        state.recovered("record")
        state.recovered("record")
    assert value(registry, "record") == 0 and state.describe() == {}
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "ERROR",
            "record does not work, Caldera keeps serving without it (nothing is recorded):"
            " disk full",
        ),
        ("INFO", "record works again"),
    ]


class Source:
    """A plugin data source as the app sees it (pdb's, say)."""

    def __init__(self, ready: bool, error: str | None) -> None:
        self.is_ready, self.error = ready, error

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def ready(self) -> bool:
        return self.is_ready

    def describe(self) -> dict[str, Any]:
        return {"lastError": self.error}


@pytest.mark.parametrize(
    ("ready", "error", "after_grace", "degraded"),
    [
        pytest.param(True, None, False, None, id="synced"),
        pytest.param(False, None, False, None, id="syncing-in-grace"),
        pytest.param(False, "ConnectError: refused", False, "ConnectError: refused", id="failing"),
        pytest.param(False, None, True, "not synced within 60 s", id="slow-after-grace"),
        pytest.param(True, "watch broke", True, None, id="synced-keeps-its-last-set"),
    ],
)
def test_a_plugin_data_source_is_degraded_when_it_cannot_sync(
    ready: bool, error: str | None, after_grace: bool, degraded: str | None
) -> None:
    state, registry, now = features()
    now[0] = 61.0 if after_grace else 1.0
    state.check_backgrounds({"tiers[0].plugins[1]:pdb": Source(ready, error)})  # type: ignore[dict-item]
    described = state.describe().get("pdb (tiers[0].plugins[1])")
    if degraded is None:
        assert described is None and value(registry, "pdb (tiers[0].plugins[1])") == 0
    else:
        assert described is not None and degraded in described["reason"].replace("has not", "not")
        assert value(registry, "pdb (tiers[0].plugins[1])") == 1


def test_a_removed_data_source_leaves_no_series() -> None:
    state, registry, _ = features()
    state.check_backgrounds({"tiers[0].plugins[1]:pdb": Source(False, "refused")})  # type: ignore[dict-item]
    state.check_backgrounds({})
    assert state.describe() == {} and value(registry, "pdb (tiers[0].plugins[1])") is None


@pytest.mark.parametrize(
    ("in_grace", "code", "status"), [(True, 503, "not ready"), (False, 200, "degraded")]
)
def test_readyz_waits_for_pdb_only_during_the_grace(
    tmp_path: Path, in_grace: bool, code: int, status: str
) -> None:
    """A pdb that cannot list its budgets must not keep vc-scheduler (which waits for the
    sidecar's startupProbe on /readyz) from ever starting: after the grace it is ready and
    degraded; meanwhile the plugin allows no eviction."""
    path = tmp_path / "caldera.yaml"
    path.write_text(
        'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: pdb\n'
        f"    arguments: {{source: file, file: {tmp_path / 'missing.yaml'}}}\n"
    )
    app = create_app(ServeOptions.of(load_config(path)))
    with TestClient(app) as client:
        client.post("/onSessionOpen", content=b"{}")
        if not in_grace:
            app.runtime.features.grace = 0.0
        answer = client.get("/readyz")
    assert (answer.status_code, answer.json()["status"]) == (code, status)
    assert "pdb (tiers[0].plugins[0])" in answer.json()["features"] or in_grace


def test_the_operator_guide_lists_every_optional_feature() -> None:
    from app.server.features import EVENTS, RECORD

    guide = (Path(__file__).resolve().parents[3] / "docs" / "operator-guide.md").read_text()
    table = guide[guide.index("### Optional features never stop the scheduler") :]
    table = table[: table.index("\n### ")]
    for feature in (RECORD, EVENTS, "pdb (tiers[T].plugins[I])", "live reload"):
        assert f"| `{feature}` |" in table or f"| {feature} |" in table, feature
    assert "caldera_feature_degraded{feature}" in table
