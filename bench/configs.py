"""The Caldera configurations the bench runs, per verb: the plugins an operator would enable for
that extension point, with arguments that make them read the data ``workloads.py`` puts in the
bodies. Each result row records the configuration it ran (:func:`describe`).

One table, :data:`CONFIGS`, and the verb → configuration map :data:`VERB_CONFIG`. Every
configuration is written for the same ``volcanoVersion`` (:data:`VOLCANO_VERSION`): the bodies
are Volcano HEAD-shaped (TaskInfo carries ``PodAnnotations``) and the node plugins need the
allocate/deallocate verbs (1.13+), so 1.16 is the release that sends them.

:func:`neutral_failure` judges one answer against what its configuration must show (a node
rejected by the plugin that owns the reason, scores that differ, some but not all victims, an
enqueue decision): a configuration whose answers are all neutral would measure validation,
not plugin work, and the bench fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VOLCANO_VERSION = "1.16"
MAX_REQUEST_BYTES = 536870912


@dataclass(frozen=True)
class Plugin:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def entry(self, files: dict[str, str]) -> dict[str, Any]:
        """The tier entry; ``{file:NAME}`` argument values become the path of ``files[NAME]``."""
        out: dict[str, Any] = {"name": self.name}
        if self.arguments:
            out["arguments"] = {k: _fill(v, files) for k, v in self.arguments.items()}
        return out


def _fill(value: Any, files: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("{file:") and value.endswith("}"):
        return files[value[len("{file:") : -1]]
    if isinstance(value, dict):
        return {k: _fill(v, files) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Config:
    name: str
    tiers: tuple[tuple[Plugin, ...], ...]
    why: str

    @property
    def plugins(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier]


NODEGROUP = Plugin("nodegroup", {"strict": True})
USAGE = Plugin(
    "usage",
    {
        "usage.weight": 5,
        "cpu.weight": 1,
        "memory.weight": 1,
        "thresholds": {"cpu": 80, "mem": 80},
        "metrics.interval": "30s",
    },
)
RESOURCE_STRATEGY_FIT = Plugin(
    "resource-strategy-fit",
    {
        "resourceStrategyFitWeight": 10,
        "resources": {
            "nvidia.com/*": {"type": "MostAllocated", "weight": 2},
            "cpu": {"type": "LeastAllocated", "weight": 1},
            "memory": {"type": "LeastAllocated", "weight": 1},
        },
        "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 1},
        "proportional": {
            "enable": True,
            "resources": "nvidia.com/gpu",
            "resourceProportion": {"nvidia.com/gpu.cpu": 4, "nvidia.com/gpu.memory": 16},
        },
    },
)
TASK_TOPOLOGY = Plugin("task-topology", {"task-topology.weight": 1})
NODE_PLUGINS = (NODEGROUP, USAGE, RESOURCE_STRATEGY_FIT, TASK_TOPOLOGY)

EVICT_PLUGINS = (
    Plugin("priority"),
    Plugin("conformance"),
    Plugin("cdp"),
    Plugin("pdb", {"source": "file", "file": "{file:pdb}"}),
    Plugin(
        "min-runtime",
        {"defaultPreemptMinRuntime": "0s", "defaultReclaimMinRuntime": "0s"},
    ),
)
ENQUEUE_PLUGINS = (
    Plugin("sla", {"sla-waiting-time": "1h"}),
    Plugin("overcommit", {"overcommit-factor": 1.2}),
    Plugin("resourcequota"),
)

CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config(
            "node-plugins",
            (NODE_PLUGINS,),
            "predicate, prioritize and the allocate event with the four node plugins",
        ),
        Config(
            "evict-plugins",
            (EVICT_PLUGINS,),
            "preemptable / reclaimable: one tier, so a pod is a victim only if all agree",
        ),
        Config(
            "enqueue-plugins",
            (ENQUEUE_PLUGINS,),
            "jobEnqueueable: one tier, so a quota or over-commit Reject beats sla's Permit",
        ),
        Config(
            "all-plugins",
            (EVICT_PLUGINS, ENQUEUE_PLUGINS, NODE_PLUGINS),
            "every plugin at once (session open and close, jobReady, the replayed cycle)",
        ),
    )
}

VERB_CONFIG: dict[str, str] = {
    "predicate": "node-plugins",
    "prioritize": "node-plugins",
    "allocate": "node-plugins",
    "preemptable": "evict-plugins",
    "reclaimable": "evict-plugins",
    "jobEnqueueable": "enqueue-plugins",
    "jobReady": "all-plugins",
    "onSessionOpen": "all-plugins",
    "onSessionClose": "all-plugins",
    "cycle": "all-plugins",
}


def render(config: Config, files: dict[str, str]) -> str:
    """The configuration file (YAML; JSON is a subset of it)."""
    doc = {
        "volcanoVersion": VOLCANO_VERSION,
        "maxRequestBytes": MAX_REQUEST_BYTES,
        "tiers": [{"plugins": [p.entry(files) for p in tier]} for tier in config.tiers],
    }
    return json.dumps(doc, indent=1) + "\n"


def write(config: Config, directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"caldera-{config.name}.yaml"
    path.write_text(render(config, files))
    return path


def describe(config: Config) -> str:
    """What a result row records: the name and the tiers."""
    return f"{config.name}: " + " | ".join(", ".join(p.name for p in t) for t in config.tiers)


# --------------------------------------------------------------------------- neutral answers


@dataclass(frozen=True)
class Expect:
    """What an answer must show. ``kind``: ``pass`` (predicate fits), ``reject`` (predicate
    fails with ``reason``), ``scores-differ``, ``some-victims`` (some but not all of
    ``evictees``), ``decided`` (jobEnqueueable Permit or Reject), ``enqueue-reject``."""

    kind: str
    reason: str = ""
    evictees: int = 0


def neutral_failure(expect: Expect, answer: Any) -> str | None:
    """None when ``answer`` (the decoded JSON) shows what ``expect`` asks, else why not."""
    if not isinstance(answer, dict):
        return f"answer is not a JSON object: {answer!r:.200}"
    if expect.kind in ("pass", "reject"):
        status, code = answer.get("status"), answer.get("code", 0)
        if not isinstance(status, str):
            return f"no predicate status in {answer!r:.200}"
        if expect.kind == "pass":
            return None if status == "" and code == 0 else f"rejected: {status!r} (code {code})"
        if status == "":
            return f"passed; expected a rejection {expect.reason!r}"
        if expect.reason not in status:
            return f"rejected with {status!r}, not {expect.reason!r}"
        return None
    if expect.kind == "scores-differ":
        scores = answer.get("nodeScore")
        if not isinstance(scores, dict) or not scores:
            return f"no node scores in {answer!r:.200}"
        if len(set(scores.values())) < 2:
            return f"all {len(scores)} nodes score {next(iter(scores.values()))}"
        return None
    if expect.kind == "some-victims":
        victims = answer.get("victims")
        if answer.get("status") == 0 or not isinstance(victims, list):
            return f"abstained: {answer!r:.200}"
        if not 0 < len(victims) < expect.evictees:
            return f"{len(victims)} victims of {expect.evictees} evictees"
        return None
    if expect.kind in ("decided", "enqueue-reject"):
        status = answer.get("status")
        want = {"decided": (1, -1), "enqueue-reject": (-1,)}[expect.kind]
        return None if status in want else f"jobEnqueueable status {status!r}, wanted {want}"
    raise ValueError(f"unknown expectation {expect.kind!r}")
