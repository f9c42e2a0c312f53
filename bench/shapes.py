"""The sizes of the objects bench/workloads.py puts in its bodies (a pod by phase, a TaskInfo
around it, a node, a JobInfo's copies of each task), measured on the cluster of the full run's
onSessionOpen-100n. ``python -m bench shapes`` writes bench/results/workload-shapes.json, which
bench/README.md, "What is measured", quotes (bench/readme.py renders it); the bodies are seeded, so
tests/bench/test_shapes.py checks the committed file is what the workloads build today."""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench import workloads

RESULTS = Path(__file__).resolve().parent / "results" / "workload-shapes.json"
NODES, PODS = 100, 2000
"""The cluster of the full run's onSessionOpen-100n."""
NOW = datetime(2026, 11, 24, tzinfo=UTC)
"""Only timestamps depend on it, always of the same length: the sizes do not."""


def _kib(sizes: list[int]) -> float:
    return round(statistics.mean(sizes) / 1024, 2)


def _pod_kind(pod: dict[str, Any]) -> str:
    owners = {ref.get("kind") for ref in pod["metadata"].get("ownerReferences") or []}
    return "daemonset" if "DaemonSet" in owners else str(pod["status"]["phase"]).lower()


def measure(nodes: int = NODES, pods: int = PODS) -> dict[str, Any]:
    cluster = workloads.plugin_cluster(nodes, pods, NOW)
    pod_sizes: dict[str, list[int]] = {}
    wrapping: list[int] = []
    tasks = [tb for on_node in cluster.node_task_bytes.values() for tb in on_node]
    for task_bytes in tasks + [pending for _, _, pending, _ in cluster.pending]:
        pod = orjson.loads(task_bytes)["Pod"]
        size = len(orjson.dumps(pod))
        pod_sizes.setdefault(_pod_kind(pod), []).append(size)
        wrapping.append(len(task_bytes) - size)
    node_infos = [orjson.loads(body) for body in cluster.nodes.values()]
    job = next(iter(cluster.job_bytes.values()))
    first_task = next(iter(orjson.loads(job)["Tasks"].values()))
    return {
        "cluster": {"nodes": nodes, "pods": pods},
        "pod_KiB": {kind: _kib(sizes) for kind, sizes in sorted(pod_sizes.items())},
        "pods": {kind: len(sizes) for kind, sizes in sorted(pod_sizes.items())},
        "taskinfo_around_pod_KiB": _kib(wrapping),
        "node_KiB": _kib([len(orjson.dumps(info["Node"])) for info in node_infos]),
        "node_images": statistics.median_low(
            len(info["Node"]["status"]["images"]) for info in node_infos
        ),
        # Tasks, TaskStatusIndex, SubJobs: how many times a JobInfo body holds one task
        "jobinfo_copies_of_a_task": job.count(f'"UID":"{first_task["UID"]}"'.encode()),
    }


def main(out: Path) -> int:
    document = measure()
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"{out}: {json.dumps(document)}")
    return 0
