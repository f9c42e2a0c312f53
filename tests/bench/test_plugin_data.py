"""The data the bench puts in its bodies for the plugins to read (bench/workloads.py): fresh
metrics that can be re-timed, queue affinities, evictees each plugin protects, PDBs, and the
probe bodies; and the suite's re-timing (bench/run.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from bench import run, workloads

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def cluster() -> workloads.Cluster:
    return workloads.plugin_cluster(8, 120, NOW)


def test_every_node_carries_metrics_sampled_30_seconds_before_now(
    cluster: workloads.Cluster,
) -> None:
    for idx, name in enumerate(cluster.node_names):
        usage = orjson.loads(cluster.nodes[name])["ResourceUsage"]
        assert usage["MetricsTime"] == "2026-11-22T11:59:30Z"
        assert (usage["CPUUsageAvg"]["10m"], usage["MEMUsageAvg"]["10m"]) == workloads.node_load(
            idx
        )


def test_some_nodes_are_over_usages_default_cpu_threshold() -> None:
    loads = [workloads.node_load(i)[0] for i in range(100)]
    assert 0 < sum(cpu > 80 for cpu in loads) < 50


def test_each_queue_allows_two_groups_and_rejects_two(cluster: workloads.Cluster) -> None:
    for name, q in cluster.queues.items():
        aff = q["Queue"]["spec"]["affinity"]
        allowed = workloads.allowed_groups(name)
        anti = aff["nodeGroupAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert len(set(allowed)) == 2 and not set(anti) & set(allowed)
        assert q["Queue"]["metadata"]["annotations"]["preempt-min-runtime"] == "2h"


def test_podgroups_carry_topology_and_recent_starts(cluster: workloads.Cluster) -> None:
    for k, job in enumerate(cluster.jobs):
        ann = orjson.loads(cluster.job_bytes[f"{job.namespace}/{job.name}"])["PodGroup"][
            "metadata"
        ]["annotations"]
        assert ann[workloads.TOPOLOGY_AFFINITY] == "worker"
        assert (
            ann.get(workloads.LAST_START) == "2026-11-22T11:50:00Z"
        ) is workloads.recently_started(k)


def test_node_task_fits_the_nodes_group(cluster: workloads.Cluster) -> None:
    for name in cluster.node_names[:4]:
        job, _, _ = workloads.node_task(cluster, name)
        group = workloads.GROUPS[cluster.node_names.index(name) % 4]
        assert group in workloads.allowed_groups(job.queue)


def test_every_eviction_plugin_has_evictees_to_protect(cluster: workloads.Cluster) -> None:
    case = workloads.evict_case(cluster, 30, NOW)
    assert len(case.evictees) == 30
    assert all(case.protected[p] > 0 for p in ("priority", "pdb", "conformance", "cdp"))
    assert sum(case.protected.values()) < 30
    cooled = [orjson.loads(t) for t in case.evictees
              if workloads.COOLDOWN in (orjson.loads(t)["Pod"]["metadata"]["annotations"] or {})]  # fmt: skip
    assert len(cooled) == case.protected["cdp"]


def test_pdbs_select_running_jobs_by_their_pod_label(cluster: workloads.Cluster) -> None:
    pdbs = workloads.pdb_objects(cluster)
    running = {j.name for j in cluster.jobs if any(p.node for p in j.pods)}
    assert {p["spec"]["selector"]["matchLabels"]["volcano.sh/job-name"] for p in pdbs} == running
    assert {p["status"]["disruptionsAllowed"] for p in pdbs} == {0, 1}


def test_predicate_probes_change_one_thing_each() -> None:
    pc = workloads.plugin_predicate_cluster(NOW, 9)
    node = pc.node_names[0]
    _, _, task = workloads.node_task(pc, node)
    probes = {
        k: orjson.loads(v) for k, v in workloads.predicate_probes(task, pc.nodes[node]).items()
    }
    group = probes["node does not satisfy the node group affinity"]["node"]["Node"]["metadata"][
        "labels"
    ]
    assert group["volcano.sh/nodegroup-name"] not in workloads.allowed_groups(
        "q-" + orjson.loads(task)["Namespace"]
    )
    hot = probes["the CPU load of the node exceeds the upper limit."]["node"]["ResourceUsage"]
    assert hot["CPUUsageAvg"]["10m"] > 80
    cpu_only = probes["proportional of resource nvidia.com/gpu check failed"]["task"]["Resreq"]
    assert "nvidia.com/gpu" not in cpu_only["ScalarResources"]


def test_retime_moves_every_sample_and_keeps_the_length() -> None:
    body = b'[{"MetricsTime":"2026-11-22T11:59:30Z"},{"MetricsTime":"2026-11-22T11:59:30Z"}]'
    out = workloads.retime_metrics(body, "2026-11-22T11:59:30Z", "2026-11-22T12:09:30Z")
    assert out.count(b"12:09:30Z") == 2 and len(out) == len(body)
    with pytest.raises(ValueError):
        workloads.retime_metrics(body, "2026-11-22T11:59:30Z", "2026-11-22T12:09:30.5Z")


def test_the_suite_retimes_its_files(tmp_path: Path) -> None:
    suite = run.build_suite("smoke", tmp_path, NOW)
    assert suite.metrics_time == "2026-11-22T11:59:30Z"
    assert any("prioritize" in f for f in suite.timed_files)
    later = NOW + timedelta(minutes=7)
    assert run.retime(suite, later) == "2026-11-22T12:06:30Z"
    for f in suite.timed_files:
        data = Path(f).read_bytes()
        assert b"2026-11-22T11:59:30Z" not in data and b"2026-11-22T12:06:30Z" in data
    assert suite.config_order() == [
        "node-plugins",
        "evict-plugins",
        "enqueue-plugins",
        "all-plugins",
    ]
