"""``caldera serve``'s options (app/server/options.py) and the servers built from them
(app/server/serve.py). Through the command line and real sockets: tests/app/server/test_settings.py,
tests/service/test_listeners.py, tests/service/test_tls.py."""

from __future__ import annotations

import dataclasses
import ssl
from pathlib import Path

import pytest

from app.config import ConfigError, load_config
from app.server.listeners import HealthListener
from app.server.main import create_app
from app.server.options import MissingFile, ServeOptions
from app.server.serve import servers
from app.server.settings import DEFAULT_PORT, Settings

GIVEN = {
    "host": "127.0.0.2",
    "port": 7001,
    "health_host": "127.0.0.3",
    "health_port": 7002,
    "log_level": "debug",
    "log_format": "text",
    "keep_alive_seconds": 91,
    "shutdown_seconds": 7,
    "header_timeout_seconds": 3.5,
    "body_timeout_seconds": 4.5,
    "max_header_bytes": 4096,
    "config_watch_seconds": 0.5,
    "shadow": "shadow.yaml",
    "shadow_max_queued_bytes": 1 << 20,
    "ssl_certfile": None,
    "ssl_keyfile": None,
    "ssl_client_ca": None,
}
"""A value other than the default for every setting but ``config`` (TLS aside: its files must
exist, tested below)."""


def test_every_setting_is_an_option_with_the_value_given(tmp_path: Path) -> None:
    """A setting added to Settings and not carried into ServeOptions fails here."""
    assert set(GIVEN) == set(Settings.model_fields) - {"config"}
    path = tmp_path / "caldera.yaml"
    path.write_text('volcanoVersion: "1.15"\n')
    settings = Settings(config=str(path), **GIVEN)
    options = ServeOptions.from_settings(settings, record="rec", record_max_bytes=10)
    assert {name: getattr(options, name) for name in GIVEN} == GIVEN
    assert options.origin.path == path and options.config.volcanoVersion == (1, 15)
    assert (options.record, options.record_max_bytes) == ("rec", 10)


def test_a_configuration_that_does_not_load_is_refused_before_a_missing_tls_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text("tiers: 3\n")
    missing = str(tmp_path / "missing.pem")
    settings = Settings(config=str(path), ssl_certfile=missing, ssl_keyfile=missing)
    with pytest.raises(ConfigError):
        ServeOptions.from_settings(settings)
    path.write_text("")
    with pytest.raises(MissingFile, match=f"--ssl-certfile {missing}: no such file"):
        ServeOptions.from_settings(settings)


def test_a_configuration_built_in_code_is_served_with_the_defaults_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALDERA_PORT", "7003")
    monkeypatch.setenv("CALDERA_SHADOW", "shadow.yaml")
    options = ServeOptions.of(load_config(None))
    assert options.port == DEFAULT_PORT and options.shadow is None
    assert options.origin.path is None and options.origin.source == "<in memory>"
    assert Settings().port == 7003  # what serve would have read


def test_options_are_frozen_and_replace_makes_new_ones() -> None:
    options = ServeOptions.of(load_config(None))
    changed = options.replace(config_watch_seconds=0)
    assert changed.config_watch_seconds == 0 and options.config_watch_seconds == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.port = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        options.replace(watch_interval=0)  # not a field: a typo is not silently ignored


def test_the_servers_are_built_from_the_options(tmp_path: Path) -> None:
    options = ServeOptions.of(load_config(None)).replace(
        host="127.0.0.2", port=7001, keep_alive_seconds=91, shutdown_seconds=7
    )
    verbs, health = servers(create_app(options), options)
    assert health is None, "no health port: no health listener"
    assert (verbs.config.host, verbs.config.port) == ("127.0.0.2", 7001)
    assert verbs.config.timeout_keep_alive == 91
    assert verbs.config.timeout_graceful_shutdown == 7
    assert verbs.config.ssl_cert_reqs == ssl.CERT_NONE

    options = options.replace(health_host="127.0.0.3", health_port=7002, ssl_client_ca="ca.pem")
    verbs, health = servers(create_app(options), options)
    assert health is not None
    assert (health.config.host, health.config.port) == ("127.0.0.3", 7002)
    assert health.config.lifespan == "off", "the app's backgrounds start once, on the verbs'"
    assert isinstance(health.config.app, HealthListener)
    assert verbs.config.ssl_cert_reqs == ssl.CERT_REQUIRED
