"""Settings: command line over environment (CALDERA_*) over defaults."""

from __future__ import annotations

import argparse

import pytest

from app.cli import _settings, parser
from app.settings import Settings


def test_defaults_listen_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CALDERA_CONFIG", "CALDERA_HOST", "CALDERA_PORT", "CALDERA_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert (settings.host, settings.port, settings.config, settings.log_level) == (
        "127.0.0.1",
        8090,
        None,
        "info",
    )


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_CONFIG", "/etc/caldera.yaml")
    monkeypatch.setenv("CALDERA_HOST", "0.0.0.0")
    monkeypatch.setenv("CALDERA_PORT", "9000")
    monkeypatch.setenv("CALDERA_LOG_LEVEL", "debug")
    settings = _settings(argparse.Namespace())
    assert (settings.host, settings.port, settings.config, settings.log_level) == (
        "0.0.0.0",
        9000,
        "/etc/caldera.yaml",
        "debug",
    )


def test_command_line_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_PORT", "9000")
    monkeypatch.setenv("CALDERA_HOST", "0.0.0.0")
    args = parser().parse_args(["serve", "--port", "7000", "--log-level", "warning"])
    settings = _settings(args)
    assert settings.port == 7000 and settings.host == "0.0.0.0" and settings.log_level == "warning"


def test_bad_environment_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_PORT", "eighty")
    with pytest.raises(ValueError, match="port"):
        Settings()


def test_serve_with_bad_environment_exits_2(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from app.cli import main

    monkeypatch.setenv("CALDERA_PORT", "eighty")
    assert main(["serve"]) == 2
    assert "CALDERA_PORT" in capsys.readouterr().err


# Each setting is declared once (app/settings.py); the serve options are derived from it.
OPTION_VALUES = {
    "config": ("/etc/caldera.yaml", "/etc/caldera.yaml"),
    "host": ("0.0.0.0", "0.0.0.0"),
    "port": ("7000", 7000),
    "health_host": ("10.0.0.1", "10.0.0.1"),
    "health_port": ("9090", 9090),
    "log_level": ("debug", "debug"),
    "ssl_client_ca": ("/ca.pem", "/ca.pem"),
}


def test_every_command_line_setting_is_a_serve_option_that_sets_it() -> None:
    from app.settings import cli_options

    assert set(cli_options()) == set(OPTION_VALUES) | {"ssl_certfile", "ssl_keyfile"}
    tls = ["--ssl-certfile", "/c.pem", "--ssl-keyfile", "/k.pem"]
    for name, (text, value) in OPTION_VALUES.items():
        args = parser().parse_args(["serve", f"--{name.replace('_', '-')}", text, *tls])
        assert getattr(_settings(args), name) == value, name
    help_text = parser()._subparsers._group_actions[0].choices["serve"].format_help()  # type: ignore[union-attr]
    for name, help in cli_options().items():
        assert f"--{name.replace('_', '-')}" in help_text
        assert " ".join(help.split()[:3]) in " ".join(help_text.split()), name


@pytest.mark.parametrize(
    "argv", [["--port", "eighty"], ["--log-level", "loud"], ["--health-port", "1.5"]]
)
def test_an_option_is_checked_as_its_setting_is_typed(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", *argv])


def test_environment_only_settings_are_not_options() -> None:
    from app.settings import cli_options

    env_only = set(Settings.model_fields) - set(cli_options())
    assert "keep_alive_seconds" in env_only and "config_watch_seconds" in env_only
    for name in env_only:
        with pytest.raises(SystemExit):
            parser().parse_args(["serve", f"--{name.replace('_', '-')}", "1"])
