"""Settings: command line over environment (CALDERA_*) over defaults."""

from __future__ import annotations

import argparse

import pytest

from app.commands.cli import _settings, parser
from app.server.settings import Settings


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
    from app.commands.cli import main

    monkeypatch.setenv("CALDERA_PORT", "eighty")
    assert main(["serve"]) == 2
    assert "CALDERA_PORT" in capsys.readouterr().err


# Each setting is declared once (app/server/settings.py); the serve options are derived from it.
OPTION_VALUES = {
    "config": ("/etc/caldera.yaml", "/etc/caldera.yaml"),
    "host": ("0.0.0.0", "0.0.0.0"),
    "port": ("7000", 7000),
    "health_host": ("10.0.0.1", "10.0.0.1"),
    "health_port": ("9090", 9090),
    "log_level": ("debug", "debug"),
    "ssl_client_ca": ("/ca.pem", "/ca.pem"),
    "shadow": ("/etc/shadow.yaml", "/etc/shadow.yaml"),
    "shadow_max_queued_bytes": ("1048576", 1 << 20),
}


def test_every_command_line_setting_is_a_serve_option_that_sets_it() -> None:
    from app.server.settings import cli_options

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
    from app.server.settings import cli_options

    env_only = set(Settings.model_fields) - set(cli_options())
    assert "keep_alive_seconds" in env_only and "config_watch_seconds" in env_only
    for name in env_only:
        with pytest.raises(SystemExit):
            parser().parse_args(["serve", f"--{name.replace('_', '-')}", "1"])


def test_the_default_port_is_the_one_the_shipped_sidecar_serves_on() -> None:
    """Not vc-scheduler's own 8080, which it holds in the pod the sidecar shares."""
    from pathlib import Path

    import yaml

    from app.server.settings import DEFAULT_PORT

    sidecar = (
        Path(__file__).resolve().parents[3] / "deploy/kubernetes/sidecar/scheduler-sidecar.yaml"
    )
    [deployment] = [d for d in yaml.safe_load_all(sidecar.read_text()) if d]
    [caldera] = deployment["spec"]["template"]["spec"]["initContainers"]
    assert caldera["args"][caldera["args"].index("--port") + 1] == str(DEFAULT_PORT)
    assert Settings().port == DEFAULT_PORT != 8080


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        pytest.param(
            ["--port", "99999"], {}, "--port 99999: Input should be less than or equal to 65535",
            id="option-out-of-range",
        ),
        pytest.param(
            [], {"CALDERA_PORT": "99999"}, "CALDERA_PORT=99999: Input should be less than",
            id="environment-out-of-range",
        ),
        pytest.param(
            ["--health-port", "8090"], {},
            "--health-port 8090 equals --port (default 8090): the two listeners need two",
            id="health-port-is-the-default-port",
        ),
        pytest.param(
            ["--port", "9000", "--health-port", "9000"], {}, "--health-port 9000 equals --port:",
            id="health-port-equals-port",
        ),
        pytest.param(
            ["--port", "9000"], {"CALDERA_HEALTH_PORT": "9000"},
            "CALDERA_HEALTH_PORT 9000 equals --port:", id="one-from-the-environment",
        ),
        pytest.param(
            ["--ssl-keyfile", "k.pem"], {}, "--ssl-certfile and --ssl-keyfile go together",
            id="tls-half",
        ),
    ],
)  # fmt: skip
def test_a_refused_setting_is_named_as_the_user_gave_it(
    monkeypatch: pytest.MonkeyPatch, capsys, argv: list[str], env: dict[str, str], said: str
) -> None:
    from app.commands.cli import main

    for name in Settings.model_fields:
        monkeypatch.delenv(f"CALDERA_{name.upper()}", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("caldera: invalid setting: ") and said in err, err
    assert "CALDERA_:" not in err


@pytest.mark.parametrize("spelling", ["DEBUG", "Debug", "debug"])
def test_the_log_level_is_case_insensitive(monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    monkeypatch.delenv("CALDERA_LOG_LEVEL", raising=False)
    args = parser().parse_args(["serve", "--log-level", spelling])
    assert _settings(args).log_level == "debug"
    monkeypatch.setenv("CALDERA_LOG_LEVEL", spelling)
    assert _settings(parser().parse_args(["serve"])).log_level == "debug"


def test_serve_help_says_where_settings_come_from_and_what_record_does() -> None:
    serve = parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    text = " ".join(serve.format_help().split())
    assert "new or empty" not in text
    assert "CALDERA_<OPTION>" in text and "CALDERA_CONFIG_WATCH_SECONDS" in text
    from app.server.settings import cli_options

    for name in set(Settings.model_fields) - set(cli_options()):
        assert f"CALDERA_{name.upper()}" in text, name
    assert "next session boundary" in text and "run-<time> subdirectory" in text
