"""What an operator reads to know which Caldera runs: ``--version``, the startup log, /readyz,
``caldera_build_info``; the process collectors; LICENSE and the CHANGELOG's promise."""

from __future__ import annotations

import platform
import tomllib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import __version__
from app.commands.cli import main, parser
from app.config import CalderaConfig, load_config
from app.metrics import COMMIT_VARIABLE
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api.release import NEWEST_STABLE_VERSION

ROOT = Path(__file__).resolve().parents[2]
NEWEST = ".".join(map(str, NEWEST_STABLE_VERSION))


def test_the_version_is_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert __version__ == project["version"]


def test_caldera_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"caldera {__version__}\n"


@pytest.mark.parametrize(
    ("config", "commit_variable", "labels"),
    [
        (None, None, {"commit": "unknown", "volcanoVersion": NEWEST}),
        (
            "volcanoVersion: '1.10'\n",
            "0123abcd",
            {"commit": "0123abcd", "volcanoVersion": "1.10"},
        ),
        ("volcanoVersion: auto\n", "  ", {"commit": "unknown", "volcanoVersion": "auto"}),
    ],
    ids=["embedded default, no commit given", "image build's commit", "auto, blank commit"],
)
def test_readyz_build_info_and_process_metrics(
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    config: str | None,
    commit_variable: str | None,
    labels: dict[str, str],
) -> None:
    caplog.set_level("INFO", logger="caldera")
    if commit_variable is None:
        monkeypatch.delenv(COMMIT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(COMMIT_VARIABLE, commit_variable)
    path = None
    if config is not None:
        path = tmp_path / "caldera.yaml"
        path.write_text(config)
    with TestClient(
        create_app(ServeOptions.of(load_config(None if path is None else str(path))))
    ) as client:
        assert client.get("/readyz").json()["version"] == __version__
        metrics = client.get("/metrics").text
    python = platform.python_version()
    expected = {"commit": labels["commit"], "python": python, "version": __version__}
    expected["volcanoVersion"] = labels["volcanoVersion"]
    rendered = ",".join(f'{key}="{value}"' for key, value in sorted(expected.items()))
    [line] = [line for line in metrics.splitlines() if line.startswith("caldera_build_info{")]
    assert line == f"caldera_build_info{{{rendered}}} 1.0"
    for family in ("process_resident_memory_bytes", "process_cpu_seconds_total",
                   "python_gc_collections_total", "python_info"):  # fmt: skip
        assert f"\n{family}" in metrics, family
    assert any(f"caldera {__version__} serving Volcano" in r.message for r in caplog.records)


def test_license_is_the_apache_2_text_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}


def test_the_changelog_names_every_stable_option_and_the_current_version() -> None:
    """The compatibility promise lists the command line it promises: a new option of serve or
    volcano-config must be added there (and is then stable)."""
    text = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {__version__}" in text
    commands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, command in commands.items():
        assert f"`{name}`" in text or f"caldera {name}" in text, name
        for action in command._actions:
            for option in action.option_strings:
                if not option.startswith("--") or option == "--help":
                    continue
                listed = "`--ssl-*`" if option.startswith("--ssl-") else f"`{option}`"
                assert listed in text, (name, option)
    for key in CalderaConfig.model_fields:
        assert f"`{key}`" in text, key


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("tiers: [{plugins: [{name: overcommit}]}]\n", 1.0),
        ("tiers: [{plugins: [{name: sla}]}]\n", 0.0),
    ],
    ids=["overcommit reads the snapshot", "sla reads only the job"],
)
def test_snapshot_expected_says_whether_sessions_should_open(
    tmp_path, config: str, expected: float
) -> None:
    """Issue 24: CalderaNoSessionOpened fired forever for a configuration with no
    snapshot-bound plugin; the alert now requires caldera_snapshot_expected == 1."""
    path = tmp_path / "caldera.yaml"
    path.write_text(config)
    with TestClient(create_app(ServeOptions.of(load_config(str(path))))) as client:
        metrics = client.get("/metrics").text
    assert f"caldera_snapshot_expected {expected}" in metrics


@pytest.mark.parametrize(
    ("version", "caveat"),
    [
        ('volcanoVersion: "1.14"\n', ""),
        ("", " (volcanoVersion is not set: set it to the release you run)"),
        ("volcanoVersion: auto\n", " (volcanoVersion auto: inferred from the first onSessionOpen)"),
    ],
    ids=["set", "unset", "auto"],
)
def test_the_start_banner_mentions_volcano_version_only_when_it_is_not_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, version: str, caveat: str
) -> None:
    """Said in one short clause (it repeated ~400 characters even when set)."""
    path = tmp_path / "caldera.yaml"
    path.write_text(version + "tiers:\n- plugins:\n  - name: priority\n")
    caplog.set_level("INFO", logger="caldera")
    with TestClient(create_app(ServeOptions.of(load_config(path)))):
        pass
    [banner] = [r.getMessage() for r in caplog.records if "serving Volcano" in r.getMessage()]
    release = "1.14" if "1.14" in version else "1.15"
    assert f"serving Volcano {release}{caveat} with plugins: priority;" in banner
    assert "caldera_release_mismatch_total" not in banner


def test_metrics_carry_no_created_series() -> None:
    """A ``_created`` series beside every counter and histogram doubled the scrape for a start
    time process_start_time_seconds already gives (issue 34)."""
    app = create_app(ServeOptions.of(load_config(None)))
    with TestClient(app) as client:
        client.post("/onSessionClose", content=b"{}")
        metrics = client.get("/metrics").text
    assert 'caldera_responses_total{code="200",verb="onSessionClose"} 1.0' in metrics
    assert "caldera_request_duration_seconds_count" in metrics
    assert [line for line in metrics.splitlines() if "_created" in line] == []
