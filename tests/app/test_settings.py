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
        8080,
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
