"""The Dockerfile and compose file cannot be built here (no Docker engine); check by reading them
that everything they reference exists and says what the README promises."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from app.config import load_config
from app.metrics import COMMIT_VARIABLE

ROOT = Path(__file__).resolve().parents[2]


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_copies_what_exists_and_is_multistage() -> None:
    text = dockerfile()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2
    for sources in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M):
        for source in sources.split():
            if "[" in source:  # a glob that may match nothing (extra-ca.pe[m], optional)
                continue
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    assert "uv sync --frozen" in text
    pinned = re.search(r"uv==([\d.]+)", text)
    assert pinned, "pin uv in the image"


def test_dockerfile_runs_non_root_with_healthcheck() -> None:
    text = dockerfile()
    assert re.search(r"^USER (?!root|0\b)\S+", text, re.M)
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert '"serve", "--host", "127.0.0.1"' in text
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert 'ENTRYPOINT ["caldera"]' in text and "caldera" in scripts


def test_the_image_hands_its_build_commit_to_build_info() -> None:
    """``docker build --build-arg COMMIT=...`` reaches caldera_build_info's commit label
    through the variable app/metrics.py reads, in the stage that runs."""
    final_stage = dockerfile().rpartition("\nFROM ")[2]
    assert re.search(r"^ARG COMMIT=unknown$", final_stage, re.M)
    assert re.search(rf"\b{COMMIT_VARIABLE}=\$\{{COMMIT\}}", final_stage)


def test_compose_services_have_health_checks_and_existing_mounts() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"caldera", "prometheus"}
    for name, service in services.items():
        assert "healthcheck" in service, name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert (ROOT / source).exists(), f"{name} mounts missing {source}"
    assert services["prometheus"]["depends_on"]["caldera"]["condition"] == "service_healthy"
    assert "/healthz" in " ".join(services["caldera"]["healthcheck"]["test"])


def test_prometheus_scrapes_caldera_metrics() -> None:
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    [job] = prometheus["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["caldera:8091"]


def test_deploy_configuration_is_valid() -> None:
    config = load_config(ROOT / "deploy" / "caldera.yaml")
    assert "pdb" in [option.name for option in config.plugin_options()]


def test_container_runs_non_root_on_a_read_only_root_filesystem() -> None:
    """What the README's security section promises, in both places that run the image."""
    text = dockerfile()
    user = re.search(r"^USER (\d+)$", text, re.M)
    assert user, "a numeric USER, so runAsNonRoot can verify it"
    assert f"--uid {user.group(1)}" in text
    assert "PYTHONDONTWRITEBYTECODE=1" in text and "UV_COMPILE_BYTECODE=1" in text
    caldera = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["caldera"]
    assert caldera["user"].split(":")[0] == user.group(1)
    assert caldera["read_only"] is True
    assert caldera["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in caldera["security_opt"]
    assert all(volume.endswith(":ro") for volume in caldera["volumes"])
