"""Memory of the cluster-state store (issue 36): the decoded views Caldera keeps per watched
object, per 1,000 pods and per 1,000 nodes, and the cost of one session's freeze + derive
(the minimum and median of ``--repeats`` sessions: the cores are shared): from scratch (the full
derivation), the incremental derivation's first session (everything built, and its indexes),
and its later sessions with 0, 10 and 100 pods changed since the previous one (pods binding and
finishing; decoding the changed objects is the watch's work, outside the session's time).
Then relists (the watch expired): every pod listed again with 0, 100 and 1,000 of them at a new
version, the store's replace (which decodes only those) and the next session, against listing
every pod into an empty store (every object decoded, as each relist did before the store kept
unchanged objects).

The objects are synthetic but shaped like an API server's (managedFields, env, probes, volumes,
status conditions and container statuses on pods; images, conditions and addresses on nodes),
because what the store drops matters as much as what it keeps. Memory is tracemalloc's count of
what the store holds after the objects are fed in and the dicts themselves are released.

Each size is measured (issue 50 item 4: 1,000 nodes / 10,000 pods, 5,000 / 50,000 and 5,000 /
150,000, the size of Volcano's issue 5819), so the results say how each figure grows. And the
resident memory cluster mode would have at each size, which tracemalloc does not see (the
interpreter, the app's modules, the allocator's own overhead): a fresh process
(``--rss-child``) imports the server and the watch, lists every node and pod into a store as
the reflectors do (every listed object held until the list ends, then the store's replace),
derives the first session, relists every pod and derives again, and reports its peak RSS
(``VmHWM``). ``caldera volcano-config`` sizes cluster mode from those peaks
(``app/commands/measured.py``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from app.cluster_state.derive import derive
from app.cluster_state.incremental import IncrementalDerivation
from app.cluster_state.store import ClusterStore
from schemas.requests import OnSessionOpenRequest

CHANGED_PODS = (0, 10, 100)
"""Pods changed between two sessions, per incremental measurement."""

RELIST_CHANGED = (0, 100, 1000)
"""Pods at a new version in a relist of every pod, per relist measurement."""

SIZES = ((1_000, 10_000), (5_000, 50_000), (5_000, 150_000))
"""(nodes, pods) measured by default: the largest is Volcano's issue 5819's cluster."""
SMOKE_SIZES = ((20, 200), (40, 600))
"""``--smoke``: two small sizes, one repeat: the code paths, quickly (the tests run it)."""
SERVING_MODULES = ("app.server.main", "app.cluster_state.cluster_mode")
"""What a sidecar serving cluster mode has imported before its first list: the server (its
routes, the plugins, the framework) and the watch (lightkube)."""
LARGE_PODS = 20_000
"""Sizes above this many pods get ``--large-repeats`` sessions (two cores shared by others)."""


def synthetic_pod(i: int, nodes: int) -> dict[str, Any]:
    name = f"job-{i // 10}-worker-{i % 10}"
    bound = i % 4 != 0
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"team-{(i // 10) % 20}",  # a job's pods share its namespace
            "uid": f"8c6f3b1e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-11-27T05:00:00Z",
            "labels": {
                "app": f"job-{i // 10}",
                "volcano.sh/job-name": f"job-{i // 10}",
                "volcano.sh/task-spec": "worker",
            },
            "annotations": {
                "scheduling.k8s.io/group-name": f"job-{i // 10}",
                "volcano.sh/task-spec": "worker",
                "volcano.sh/job-version": "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": f"job-{i // 10}",
                    "uid": "0c1d",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "vc-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-27T05:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {f"f:k{k}": {} for k in range(12)}}},
                }
            ],
        },
        "spec": {
            "schedulerName": "volcano",
            "priority": 0,
            "nodeName": f"node-{i % nodes}" if bound else "",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1.2.3",
                    "command": ["python", "-m", "train", "--epochs", "10"],
                    "env": [{"name": f"ENV_{k}", "value": f"value-{k}"} for k in range(10)],
                    "resources": {
                        "requests": {"cpu": "1", "memory": "2Gi"},
                        "limits": {"cpu": "2", "memory": "4Gi"},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {
            "phase": "Running" if bound else "Pending",
            "startTime": "2026-11-27T05:00:05Z" if bound else None,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-11-27T05:00:05Z"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example/train:1.2.3",
                    "imageID": "sha256:" + "a" * 64,
                    "containerID": "containerd://" + "b" * 64,
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                }
            ]
            if bound
            else None,
        },
    }


def synthetic_node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "uid": f"5a1e-{i:08d}",
            "resourceVersion": str(200000 + i),
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
                "node.kubernetes.io/instance-type": "m5.4xlarge",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i // 256}.{i % 256}.0/24"},
        "status": {
            "capacity": {
                "cpu": "16",
                "memory": "64Gi",
                "pods": "110",
                "ephemeral-storage": "100Gi",
            },
            "allocatable": {
                "cpu": "15",
                "memory": "62Gi",
                "pods": "110",
                "ephemeral-storage": "95Gi",
            },
            "conditions": [
                {
                    "type": t,
                    "status": "False",
                    "reason": "Fine",
                    "lastHeartbeatTime": "2026-11-27T05:00:00Z",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256}.{i % 256}"}],
            "images": [
                {"names": [f"registry.example/image-{k}:v1"], "sizeBytes": 10**8 + k}
                for k in range(50)
            ],
            "nodeInfo": {"kubeletVersion": "v1.34.1", "osImage": "Linux"},
        },
    }


def changed_pod(i: int, nodes: int, session: int) -> dict[str, Any]:
    """Pod ``i`` one step further in its life: a pending pod binds and runs, a running one
    finishes (Succeeded) and, the next time, runs again (a fresh resourceVersion each time)."""
    obj = synthetic_pod(i, nodes)
    obj["metadata"]["resourceVersion"] = str(1_000_000 + session * 100_000 + i)
    if session % 2 == 0:
        obj["spec"]["nodeName"] = f"node-{i % nodes}"
        obj["status"]["phase"] = "Running"
    else:
        obj["status"]["phase"] = "Succeeded"
    return obj


def ms(times: list[float]) -> dict[str, float]:
    return {"min": round(min(times), 2), "median": round(statistics.median(times), 2)}


def change_pods(store: ClusterStore, pods: int, nodes: int, changed: int, session: int) -> None:
    """``changed`` pods of the store changed for session ``session``, spread over nodes and jobs."""
    for k in range(changed):
        obj = changed_pod((session * 7919 + k * 97) % pods, nodes, session)
        store.pods.upsert(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", obj)


def measure_incremental(store: ClusterStore, pods: int, nodes: int, repeats: int) -> dict[str, Any]:
    """The incremental derivation's first session, then sessions after N pods changed."""
    first: list[float] = []
    for _ in range(repeats):
        store.derivation = IncrementalDerivation(store.settings)
        start = time.perf_counter()
        store.open_session()
        first.append((time.perf_counter() - start) * 1000)
    figures: dict[str, Any] = {"first_session_ms": ms(first)}
    session = 0
    for changed in CHANGED_PODS:
        times: list[float] = []
        for _ in range(repeats * 4):
            session += 1
            change_pods(store, pods, nodes, changed, session)
            start = time.perf_counter()
            store.open_session()
            times.append((time.perf_counter() - start) * 1000)
        figures[f"changed_{changed}_pods_ms"] = ms(times)
        figures[f"changed_{changed}_pods_rebuilt"] = dict(store.derivation.rebuilt)
    return figures


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def _state(snapshot: OnSessionOpenRequest) -> bytes:
    """Every field of a snapshot, nodes' tasks included (``NodeInfo.Tasks`` is no field)."""
    nodes = {name: info.Tasks for name, info in (snapshot.Nodes or {}).items()}
    return msgspec.json.encode((snapshot, nodes))


def measure_relist(store: ClusterStore, pods: int, nodes: int, repeats: int) -> dict[str, Any]:
    """Relists of every pod with N at a new version: the store's replace and the next session
    (what a relist costs once the list's JSON is parsed: lightkube's part is not measured);
    and listing every pod into an empty store, every object decoded."""
    listing = {_key(obj): obj for obj in (synthetic_pod(i, nodes) for i in range(pods))}
    store.pods.replace(listing)  # the versions listed from here on (sessions moved some)
    store.open_session()
    empty: list[float] = []
    for _ in range(repeats):
        fresh = ClusterStore()
        start = time.perf_counter()
        fresh.pods.replace(listing)
        empty.append((time.perf_counter() - start) * 1000)
        del fresh
    figures: dict[str, Any] = {"list_into_empty_store_ms": ms(empty)}
    session = 1000
    for changed in RELIST_CHANGED:
        replaced: list[float] = []
        opened: list[float] = []
        for _ in range(repeats):
            session += 1
            relisted = dict(listing)
            for k in range(changed):
                i = (session * 7919 + k * 97) % pods
                obj = changed_pod(i, nodes, session)
                relisted[_key(obj)] = obj
            start = time.perf_counter()
            store.pods.replace(relisted)
            middle = time.perf_counter()
            derived = store.open_session()
            opened.append((time.perf_counter() - middle) * 1000)
            replaced.append((middle - start) * 1000)
            listing = relisted
        # What the sessions after relists built is what a derivation from scratch builds.
        full = derive(store.freeze(), store.settings, store.overlay.placements())
        if _state(full.snapshot) != _state(derived.snapshot):
            raise AssertionError(
                f"after a relist of {changed} changed pods: not the full derivation"
            )
        figures[f"relist_{changed}_changed"] = {
            "replace_ms": ms(replaced),
            "session_ms": ms(opened),
            "rebuilt": dict(store.derivation.rebuilt),
        }
    return figures


def _held(feed: Any) -> int:
    """Bytes still allocated after ``feed()`` ran and its inputs were released."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = feed()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return after - before


def feed_pods(pods: int, nodes: int) -> ClusterStore:
    store = ClusterStore()
    for i in range(pods):
        obj = synthetic_pod(i, nodes)
        store.pods.upsert(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", obj)
    return store


def feed_nodes(nodes: int) -> ClusterStore:
    store = ClusterStore()
    for i in range(nodes):
        store.nodes.upsert(f"node-{i}", synthetic_node(i))
    return store


def populated_store(pods: int, nodes: int) -> ClusterStore:
    """Pods, nodes, one queue, and a PodGroup per 10 pods."""
    store = feed_pods(pods, nodes)
    for i in range(nodes):
        store.nodes.upsert(f"node-{i}", synthetic_node(i))
    store.queues.upsert("default", {"metadata": {"name": "default"}, "spec": {"weight": 1}})
    for j in range(pods // 10 + 1):
        store.podgroups.upsert(
            f"team-{j % 20}/job-{j}",
            {
                "metadata": {"name": f"job-{j}", "namespace": f"team-{j % 20}"},
                "spec": {"minMember": 10, "queue": "default"},
            },
        )
    return store


def measure(pods: int, nodes: int, repeats: int = 5) -> dict[str, Any]:
    pod_bytes = _held(lambda: feed_pods(pods, nodes))
    node_bytes = _held(lambda: feed_nodes(nodes))
    store = populated_store(pods, nodes)
    times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        derived = derive(store.freeze(), store.settings, store.overlay.placements())
        times.append((time.perf_counter() - start) * 1000)
    incremental = measure_incremental(store, pods, nodes, repeats)
    relist = measure_relist(store, pods, nodes, repeats)
    json_pod = len(json.dumps(synthetic_pod(1, nodes), separators=(",", ":")))
    json_node = len(json.dumps(synthetic_node(1), separators=(",", ":")))
    jobs = len(derived.snapshot.Jobs or {})
    del store, derived
    gc.collect()
    return {
        "pods": pods,
        "nodes": nodes,
        "repeats": repeats,
        "store_mib_per_1000_pods": round(pod_bytes / pods * 1000 / 2**20, 2),
        "store_mib_per_1000_nodes": round(node_bytes / nodes * 1000 / 2**20, 2),
        "store_mib": round((pod_bytes + node_bytes) / 2**20, 1),
        "api_json_kib_per_pod": round(json_pod / 1024, 2),
        "api_json_kib_per_node": round(json_node / 1024, 2),
        "freeze_and_derive_ms_min": round(min(times), 1),
        "freeze_and_derive_ms_median": round(statistics.median(times), 1),
        "derived_jobs": jobs,
        "incremental": incremental,
        "relist": relist,
        "rss": measure_rss(pods, nodes),
    }


# --- the process cluster mode would be: its peak RSS (a fresh interpreter per size) ---


def _status_mib(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024  # kB
    raise LookupError(field)


def _listed(store: Any, objects: Any) -> None:
    """A reflector's list (plugins/pdb/kube.py ``Reflector._list``): every object of the list
    held as a dict until the last page, then the store's replace, then the dicts released."""
    items = {key: obj for key, obj in objects}
    store.replace(items)


def rss_child(pods: int, nodes: int) -> dict[str, float]:
    """Run in a fresh process: the server's and the watch's modules imported (what a sidecar
    in cluster mode has loaded before its first list), then the start of cluster mode at this
    size: nodes, pods, PodGroups and the queue listed into the store, the first session
    derived (every task, node and job built, with the derivation's indexes), then a relist of
    every pod (the watch expired: the listed dicts beside the store) and the next session."""
    for module in SERVING_MODULES:
        importlib.import_module(module)

    gc.collect()
    idle = _status_mib("VmRSS")
    store = ClusterStore()
    _listed(store.nodes, ((f"node-{i}", synthetic_node(i)) for i in range(nodes)))
    _listed(store.pods, ((_key(o), o) for o in (synthetic_pod(i, nodes) for i in range(pods))))
    groups = (
        (f"team-{j % 20}/job-{j}", {"metadata": {"name": f"job-{j}", "namespace": f"team-{j % 20}"},
                                   "spec": {"minMember": 10, "queue": "default"}})
        for j in range(pods // 10 + 1)
    )  # fmt: skip
    _listed(store.podgroups, groups)
    _listed(store.queues, [("default", {"metadata": {"name": "default"}, "spec": {"weight": 1}})])
    derived = store.open_session()
    listed = _status_mib("VmRSS")
    del derived
    _listed(store.pods, ((_key(o), o) for o in (synthetic_pod(i, nodes) for i in range(pods))))
    derived = store.open_session()
    if len(derived.snapshot.Jobs or {}) != pods // 10 + 1:
        raise AssertionError("the relist's session lost jobs")
    return {
        "idle_mib": round(idle, 1),
        "after_first_session_mib": round(listed, 1),
        "after_relist_mib": round(_status_mib("VmRSS"), 1),
        "peak_mib": round(_status_mib("VmHWM"), 1),
    }


def measure_rss(pods: int, nodes: int) -> dict[str, float]:
    """:func:`rss_child` in a fresh interpreter (this one holds the other measurements)."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.cluster_state", "--rss-child", f"{nodes}/{pods}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    figures: dict[str, float] = json.loads(result.stdout)
    return figures


def growth(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    """How each figure grows from the first size to each later one: the ratio of the later
    figure to the first's, beside the ratio of pods and of nodes (linear growth matches them)."""
    first = sizes[0]

    def ratio(key: Callable[[dict[str, Any]], float], size: dict[str, Any]) -> float:
        return round(key(size) / key(first), 2) if key(first) else 0.0

    figures: dict[str, Callable[[dict[str, Any]], float]] = {
        "store_mib": lambda s: float(s["store_mib"]),
        "peak_rss_mib": lambda s: float(s["rss"]["peak_mib"]),
        "freeze_and_derive_ms_median": lambda s: float(s["freeze_and_derive_ms_median"]),
        "first_session_ms_median": lambda s: float(s["incremental"]["first_session_ms"]["median"]),
        **{
            f"changed_{n}_pods_ms_median": (
                lambda s, n=n: float(s["incremental"][f"changed_{n}_pods_ms"]["median"])
            )
            for n in CHANGED_PODS
        },
        **{
            f"relist_{n}_changed_replace_ms_median": (
                lambda s, n=n: float(s["relist"][f"relist_{n}_changed"]["replace_ms"]["median"])
            )
            for n in RELIST_CHANGED
        },
    }
    return {
        f"{size['nodes']}/{size['pods']}": {
            "pods": round(size["pods"] / first["pods"], 2),
            "nodes": round(size["nodes"] / first["nodes"], 2),
            **{name: ratio(key, size) for name, key in figures.items()},
        }
        for size in sizes[1:]
    }


def measure_sizes(sizes: list[tuple[int, int]], repeats: int, large_repeats: int) -> dict[str, Any]:
    measured = [
        measure(pods, nodes, large_repeats if pods > LARGE_PODS else repeats)
        for nodes, pods in sizes
    ]
    return {"sizes": measured, "growth": growth(measured) if len(measured) > 1 else {}}


def _size(text: str) -> tuple[int, int]:
    nodes, _, pods = text.partition("/")
    return int(nodes), int(pods)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_state", description=__doc__)
    parser.add_argument(
        "--size",
        action="append",
        type=_size,
        metavar="NODES/PODS",
        help="a size to measure (repeat it; default: "
        + ", ".join(f"{n}/{p}" for n, p in SIZES)
        + ")",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="two small sizes, one repeat (the tests' run)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="sessions derived (min, median)")
    parser.add_argument(
        "--large-repeats",
        type=int,
        default=2,
        help=f"sessions derived at sizes of more than {LARGE_PODS:,} pods (default 2)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the figures here (bench/results/cluster-state.json: bench/README"
        " renders it; app/commands/measured.py is generated from it)",
    )
    parser.add_argument("--rss-child", type=_size, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child is not None:
        print(json.dumps(rss_child(args.rss_child[1], args.rss_child[0])))
        return 0
    sizes = list(SMOKE_SIZES) if args.smoke else args.size or list(SIZES)
    repeats = 1 if args.smoke else args.repeats
    large = 1 if args.smoke else args.large_repeats
    return emit(lambda: measure_sizes(sizes, repeats, large), args.out)


def emit(measured: Callable[[], dict[str, Any]], out: Path | None) -> int:
    """Run a measurement, stamp it with the machine's load before and after (times here move
    with it) and its CPUs, print it, and write it to ``out`` too when given."""
    load_before = os.getloadavg()[0]
    figures = measured()
    figures["load_average_before_after"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    figures["cpus"] = os.cpu_count()
    text = json.dumps(figures, indent=2)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
