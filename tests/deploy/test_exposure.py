"""Issue 28: what we ship serves the extender verbs on loopback only, and the probes and metrics
on the health listener. Every place that starts Caldera — the Kubernetes overlay, the compose
file, the image's default command — is parsed with ``caldera serve``'s own argument parser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from app.commands.cli import _settings, parser
from app.server.listeners import HEALTH_PATHS, is_loopback
from app.server.settings import Settings
from tests.deploy.kustomize import render
from tests.deploy.test_kubernetes import OVERLAY, container, find
from tests.deploy.upstream import volcano_file

ROOT = Path(__file__).resolve().parents[2]


def serve_settings(argv: list[str]) -> Settings:
    args = parser().parse_args(argv)
    assert args.command == "serve", argv
    return _settings(args)


def overlay_command() -> list[str]:
    deployment = find(render(OVERLAY, volcano_file), "Deployment", "volcano-scheduler")
    return [str(a) for a in container(deployment, "caldera")["args"]]


def compose_command() -> list[str]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return [str(a) for a in compose["services"]["caldera"]["command"]]


def dockerfile_command() -> list[str]:
    text = (ROOT / "Dockerfile").read_text()
    [cmd] = re.findall(r"^CMD (\[.*\])$", text, re.M)
    return [str(a) for a in json.loads(cmd)]


SHIPPED = [
    pytest.param(overlay_command, id="kubernetes overlay"),
    pytest.param(compose_command, id="docker-compose.yml"),
    pytest.param(dockerfile_command, id="Dockerfile CMD"),
]


@pytest.mark.parametrize("command", SHIPPED)
def test_no_shipped_command_serves_a_verb_beyond_loopback(command) -> None:
    settings = serve_settings(command())
    assert is_loopback(settings.host), f"verbs on {settings.host}"
    assert settings.health_port is not None, "probes and metrics need the health listener"
    assert settings.health_host == "0.0.0.0"
    assert settings.health_port != settings.port


def test_the_probes_and_the_scrapes_use_the_health_listener() -> None:
    documents = render(OVERLAY, volcano_file)
    caldera = container(find(documents, "Deployment", "volcano-scheduler"), "caldera")
    health = serve_settings(caldera["args"]).health_port
    ports = {p["name"]: p["containerPort"] for p in caldera["ports"]}
    assert list(ports.values()) == [health]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in caldera:
            get = caldera[probe]["httpGet"]
            assert ports.get(get["port"], get["port"]) == health and get["path"] in HEALTH_PATHS
    monitor = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "podmonitor.yaml").read_text())
    # Caldera's endpoint on the health listener; the other is vc-scheduler's (test_observability)
    [endpoint] = [e for e in monitor["spec"]["podMetricsEndpoints"] if e["port"] in ports]
    assert ports[endpoint["port"]] == health

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["caldera"]
    compose_health = serve_settings(compose["command"]).health_port
    assert compose["ports"] == [f"{compose_health}:{compose_health}"]
    assert f"127.0.0.1:{compose_health}/healthz" in " ".join(compose["healthcheck"]["test"])
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    assert prometheus["scrape_configs"][0]["static_configs"][0]["targets"] == [
        f"caldera:{compose_health}"
    ]

    dockerfile = (ROOT / "Dockerfile").read_text()
    image_health = serve_settings(dockerfile_command()).health_port
    assert re.search(rf"^EXPOSE {image_health}$", dockerfile, re.M)
    assert f"'CALDERA_HEALTH_PORT', '{image_health}'" in dockerfile
