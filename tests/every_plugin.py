"""A configuration hosting every built-in plugin that needs no data from outside Volcano's
snapshot: the embedded default configuration plus a tier of the others (node plugins ported
later join it without this file changing). The reliability tests serve it so that each verb
is answered by real plugin code, not by the neutral answer."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import yaml

from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.release import Release

ARGUMENTS: dict[str, dict[str, Any]] = {
    # Arguments that switch on the parts a plugin leaves off by default, so they run too.
    "min-runtime": {"defaultPreemptMinRuntime": "10m", "defaultReclaimMinRuntime": "1h"},
    "resource-strategy-fit": {
        "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 1},
        "proportional": {
            "enable": True,
            "resources": "nvidia.com/gpu",
            "resourceProportion": {"nvidia.com/gpu.cpu": 2, "nvidia.com/gpu.memory": 4},
        },
    },
}


def default_tiers() -> list[dict[str, Any]]:
    text = files("app").joinpath("default_config.yaml").read_text()
    tiers: list[dict[str, Any]] = yaml.safe_load(text)["tiers"]
    return tiers


def extra_plugins(release: Release) -> list[str]:
    """Built-in plugins outside the default configuration that can run here: no background
    data source (pdb needs the API server), and every verb they require sent by ``release``."""
    named = {plugin["name"] for tier in default_tiers() for plugin in tier["plugins"]}
    found = []
    for name in registry.names():
        cls = registry.get(name)
        if cls is None or name in named or not cls.__module__.startswith("plugins."):
            continue  # test doubles registered by other tests are not built-in plugins
        if cls.create_background(Arguments({}, plugin=name, flags={})) is not None:
            continue
        if all(release.has_verb(verb) for verb in cls.requires_verbs):
            found.append(name)
    return found


def every_plugin_config(version: str = "1.15", max_request_bytes: int | None = None) -> str:
    major, minor = version.split(".")
    release = Release(int(major), int(minor))
    tiers = default_tiers()
    tiers.append(
        {
            "plugins": [
                {"name": name, **({"arguments": ARGUMENTS[name]} if name in ARGUMENTS else {})}
                for name in extra_plugins(release)
            ]
        }
    )
    config: dict[str, Any] = {"volcanoVersion": version, "tiers": tiers}
    if max_request_bytes is not None:
        config["maxRequestBytes"] = max_request_bytes
    return yaml.safe_dump(config, sort_keys=False)
