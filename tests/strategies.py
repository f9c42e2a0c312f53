"""Hypothesis strategies for Volcano-shaped bodies: a small cluster (namespaces, a queue tree,
nodes, jobs with tasks and PodGroups) and, drawn from it, the body of every verb, as Volcano's
json.Marshal would write them — plus mutations that take a body out of that shape.

Everything Go's decoder checks is kept valid in the "Volcano could send it" strategies (integer
ranges, quantities, timestamps); what Volcano forwards unchecked (annotation and label values,
names) is drawn freely, garbage included, since plugins must cope with it as upstream does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

INT32 = st.integers(-(2**31), 2**31 - 1)
TASK_STATUSES = [1 << i for i in range(10)]  # Pending … Unknown
ROLES = ["master", "worker", "ps", ""]
QUANTITIES = ["0", "1", "100m", "250m", "2", "3500m", "1Gi", "512Mi", "2G", "1e3", "8", "0.5"]
DURATIONS = ["0s", "30s", "5m", "1h", "1h30m", "2d", "-1m", "soon", "", "10"]
TIMESTAMPS = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
FREE_TEXT = st.text(max_size=12)
"""An annotation or label value: Volcano forwards whatever the API server holds."""


def timestamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def quantity() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(QUANTITIES),
        st.integers(0, 10**6).map(str),
        st.tuples(st.integers(0, 4096), st.sampled_from(["m", "Ki", "Mi", "Gi", "k", "M"])).map(
            lambda pair: f"{pair[0]}{pair[1]}"
        ),
    )


def resource_list() -> st.SearchStrategy[dict[str, str]]:
    names = st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "example.com/fpga"])
    return st.dictionaries(names, quantity(), max_size=4)


def resource() -> st.SearchStrategy[dict[str, Any]]:
    amount = st.floats(-1000, 1e12, allow_nan=False, allow_infinity=False)
    return st.fixed_dictionaries(
        {
            "MilliCPU": amount,
            "Memory": amount,
            "ScalarResources": st.none()
            | st.dictionaries(st.sampled_from(["pods", "nvidia.com/gpu"]), amount, max_size=2),
            "MaxTaskNum": st.integers(0, 110),
        }
    )


def annotations(keys: list[str], values: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.none() | st.dictionaries(st.sampled_from(keys), values | FREE_TEXT, max_size=3)


def pod(name: str, namespace: str, group: str) -> st.SearchStrategy[dict[str, Any]]:
    container = st.fixed_dictionaries(
        {
            "name": st.just("main"),
            "resources": st.fixed_dictionaries(
                {"requests": resource_list(), "limits": resource_list()}
            ),
        }
    )
    return st.fixed_dictionaries(
        {
            "metadata": st.fixed_dictionaries(
                {
                    "name": st.just(name),
                    "namespace": st.just(namespace),
                    "uid": st.just(f"{namespace}-{name}"),
                    "annotations": st.one_of(
                        st.just({"scheduling.k8s.io/group-name": group}),
                        annotations(
                            ["volcano.sh/task-spec", "volcano.sh/cooldown-time"],
                            st.sampled_from([*ROLES, *DURATIONS]),
                        ),
                    ),
                    "labels": annotations(["volcano.sh/task-spec", "app"], st.sampled_from(ROLES)),
                    "creationTimestamp": TIMESTAMPS.map(timestamp),
                }
            ),
            "spec": st.fixed_dictionaries(
                {
                    "containers": st.lists(container, max_size=2),
                    "initContainers": st.none() | st.lists(container, max_size=1),
                    "priorityClassName": st.sampled_from(
                        ["", "system-node-critical", "system-cluster-critical", "high"]
                    ),
                    "schedulingGates": st.none()
                    | st.just([{"name": "volcano.sh/queue-num-per-job"}]),
                }
            ),
            "status": st.fixed_dictionaries(
                {
                    "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
                    "startTime": st.none() | TIMESTAMPS.map(timestamp),
                    "conditions": st.none()
                    | st.lists(
                        st.fixed_dictionaries(
                            {
                                "type": st.sampled_from(["PodScheduled", "Ready"]),
                                "status": st.sampled_from(["True", "False"]),
                                "lastTransitionTime": TIMESTAMPS.map(timestamp),
                            }
                        ),
                        max_size=2,
                    ),
                }
            ),
        }
    )


@st.composite
def task(draw: st.DrawFn, uid: str, job: str, namespace: str, nodes: list[str]) -> dict[str, Any]:
    name = uid.rsplit("/", 1)[-1]
    group = job.split("/", 1)[-1]
    return {
        "UID": uid,
        "Job": job,
        "Name": name,
        "Namespace": namespace,
        "TaskRole": draw(st.sampled_from(ROLES)),
        "Resreq": draw(resource()),
        "InitResreq": draw(resource()),
        "NodeName": draw(st.sampled_from(["", *nodes])),
        "Status": draw(st.sampled_from(TASK_STATUSES)),
        "Priority": draw(st.one_of(st.integers(-10, 1000), INT32)),
        "Preemptable": draw(st.booleans()),
        "SchGated": draw(st.booleans()),
        "Pod": draw(st.none() | pod(name, namespace, group)),
    }


@st.composite
def job(
    draw: st.DrawFn, uid: str, queue: str, nodes: list[str], legacy_shape: bool
) -> dict[str, Any]:
    namespace, name = uid.split("/", 1)
    count = draw(st.integers(0, 4))
    tasks = {}
    for index in range(count):
        task_uid = f"{namespace}-{name}-{index}"
        tasks[task_uid] = draw(task(task_uid, uid, namespace, nodes))
    pg_annotations = draw(
        annotations(
            [
                "volcano.sh/sla-waiting-time",
                "volcano.sh/task-topology-affinity",
                "volcano.sh/task-topology-anti-affinity",
                "volcano.sh/task-topology-task-order",
                "kai.scheduler/last-start-timestamp",
            ],
            st.one_of(
                st.sampled_from([*DURATIONS, "master,worker", "worker;ps", "master"]),
                TIMESTAMPS.map(timestamp),
            ),
        )
    )
    spec = {
        "minMember": draw(st.integers(0, 5)),
        "minTaskMember": draw(
            st.none() | st.dictionaries(st.sampled_from(ROLES), st.integers(0, 3))
        ),
        "queue": queue,
        "priorityClassName": draw(st.sampled_from(["", "high", "system-node-critical"])),
        "minResources": draw(st.none() | resource_list()),
    }
    status = {"phase": draw(st.sampled_from(["Pending", "Inqueue", "Running", ""]))}
    created = draw(TIMESTAMPS)
    if legacy_shape:  # v1.6–v1.13: flattened metadata, untagged Spec/Status
        podgroup: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{name}",
            "creationTimestamp": timestamp(created),
            "annotations": pg_annotations,
            "Spec": {key[0].upper() + key[1:]: value for key, value in spec.items()},
            "Status": {"Phase": status["phase"]},
            "Version": "v1beta1",
        }
    else:
        podgroup = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"pg-{name}",
                "creationTimestamp": timestamp(created),
                "annotations": pg_annotations,
            },
            "spec": spec,
            "status": status,
            "Version": "v1beta1",
        }
    return {
        "UID": uid,
        "PgUID": f"pg-{name}",
        "Name": name,
        "Namespace": namespace,
        "Queue": queue,
        "Priority": draw(st.integers(-10, 1000)),
        "MinAvailable": spec["minMember"],
        "WaitingTime": draw(st.none() | st.integers(0, 10**13)),
        "Tasks": tasks,
        "TaskMinAvailable": spec["minTaskMember"],
        "TaskMinAvailableTotal": sum((spec["minTaskMember"] or {}).values()),
        "Allocated": draw(resource()),
        "TotalRequest": draw(resource()),
        "CreationTimestamp": timestamp(created),
        "PodGroup": None if draw(st.integers(0, 9)) == 0 else podgroup,
        "Preemptable": draw(st.booleans()),
        "Budget": {"MinAvailable": "", "MaxUnavailable": ""},
    }


@st.composite
def node(draw: st.DrawFn, name: str) -> dict[str, Any]:
    return {
        "Name": name,
        "Node": {
            "metadata": {
                "name": name,
                "labels": draw(
                    annotations(["kubernetes.io/hostname", "nvidia.com/gpu.product"], FREE_TEXT)
                ),
            }
        },
        "State": {"Phase": draw(st.sampled_from([1, 2])), "Reason": ""},
        "Releasing": draw(resource()),
        "Pipelined": draw(resource()),
        "Idle": draw(resource()),
        "Used": draw(resource()),
        "Allocatable": draw(resource()),
        "Capacity": draw(resource()),
        "Tasks": None,
        "RevocableZone": "",
    }


@st.composite
def queue(draw: st.DrawFn, name: str, parent: str, legacy_shape: bool) -> dict[str, Any]:
    queue_annotations = draw(
        annotations(["preempt-min-runtime", "reclaim-min-runtime"], st.sampled_from(DURATIONS))
    )
    spec = {
        "weight": draw(st.integers(0, 10)),
        "capability": draw(st.none() | resource_list()),
        "reclaimable": draw(st.none() | st.booleans()),
        "deserved": draw(st.none() | resource_list()),
        "guarantee": {"resource": draw(st.none() | resource_list())},
        "parent": parent,
    }
    status = {"state": "Open", "allocated": draw(st.none() | resource_list())}
    if legacy_shape:
        body: dict[str, Any] = {
            "name": name,
            "uid": name,
            "annotations": queue_annotations,
            "Spec": {
                "Weight": spec["weight"],
                "Capability": spec["capability"],
                "Reclaimable": spec["reclaimable"],
                "deserved": spec["deserved"],
                "guarantee": spec["guarantee"],
                "parent": parent,
            },
            "Status": {"State": "Open", "Allocated": status["allocated"]},
        }
    else:
        body = {
            "metadata": {"name": name, "uid": name, "annotations": queue_annotations},
            "spec": spec,
            "status": status,
        }
    return {
        "UID": name,
        "Name": name,
        "Weight": spec["weight"],
        "Weights": "",
        "Hierarchy": "",
        "Queue": body,
    }


@dataclass
class Cluster:
    """One snapshot, and the objects of it a verb's body is drawn from."""

    snapshot: dict[str, Any]
    tasks: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)


@st.composite
def cluster(draw: st.DrawFn, legacy_shape: bool = False) -> Cluster:
    """Namespaces ns-a and ns-b, queues root > q1 > q2 (and q3 under root), up to 4 nodes and
    up to 4 jobs."""
    node_names = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    queues = {
        name: draw(queue(name, parent, legacy_shape))
        for name, parent in (("root", ""), ("q1", "root"), ("q2", "q1"), ("q3", "root"))
    }
    jobs = {}
    for index in range(draw(st.integers(0, 4))):
        uid = f"{draw(st.sampled_from(['ns-a', 'ns-b']))}/pg{index}"
        jobs[uid] = draw(job(uid, draw(st.sampled_from(list(queues))), node_names, legacy_shape))
    nodes = {name: draw(node(name)) for name in node_names}
    namespaces = {
        name: {
            "Name": name,
            "QuotaStatus": draw(
                st.none()
                | st.dictionaries(
                    st.just("quota"),
                    st.fixed_dictionaries({"hard": resource_list(), "used": resource_list()}),
                )
            ),
        }
        for name in ("ns-a", "ns-b")
    }
    snapshot = {
        "Jobs": jobs,
        "Nodes": nodes,
        "Queues": queues,
        "NamespaceInfo": namespaces,
        "RevocableNodes": {},
        "NodeList": None,
    }
    tasks = [task for job in jobs.values() for task in job["Tasks"].values()]
    return Cluster(
        snapshot, tasks, list(jobs.values()), list(nodes.values()), list(queues.values())
    )


@st.composite
def stranger_task(draw: st.DrawFn, cluster: Cluster) -> dict[str, Any]:
    """A task of the cluster, or one the snapshot does not know (Volcano's view moved on)."""
    if cluster.tasks and draw(st.integers(0, 3)):
        known: dict[str, Any] = draw(st.sampled_from(cluster.tasks))
        return known
    nodes = [n["Name"] for n in cluster.nodes]
    return draw(task(f"ns-x-new-{draw(st.integers(0, 99))}", "ns-x/new", "ns-x", nodes))


@st.composite
def verb_body(draw: st.DrawFn, cluster: Cluster, verb: str) -> dict[str, Any]:
    """The body Volcano would post for ``verb`` in a session opened on ``cluster``."""
    if verb in ("predicate", "allocate", "deallocate", "prioritize"):
        body: dict[str, Any] = {"task": draw(stranger_task(cluster))}
        if verb == "predicate":
            body["node"] = draw(st.sampled_from(cluster.nodes))
        elif verb == "prioritize":
            body["nodes"] = draw(st.lists(st.sampled_from(cluster.nodes), unique_by=id))
        return body
    if verb in ("preemptable", "reclaimable"):
        candidates = cluster.tasks or [draw(stranger_task(cluster))]
        evictees = draw(st.lists(st.sampled_from(candidates), max_size=6, unique_by=id))
        return {"evictor": draw(stranger_task(cluster)), "evictees": evictees}
    if verb in ("jobEnqueueable", "jobEnqueued", "jobReady"):
        if cluster.jobs and draw(st.integers(0, 3)):
            return {"job": draw(st.sampled_from(cluster.jobs))}
        nodes = [n["Name"] for n in cluster.nodes]
        return {"job": draw(job("ns-x/new", "q1", nodes, legacy_shape=False))}
    if verb == "queueOverused":
        return {"queue": draw(st.sampled_from(cluster.queues))}
    raise ValueError(f"no body strategy for {verb}")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """``document`` with one node of its JSON tree replaced by an arbitrary value or removed."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, at: tuple[Any, ...]) -> None:
        paths.append(at)
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, (*at, key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, (*at, index))

    walk(document, ())
    path = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(document))
    if not path:
        return draw(JSON_VALUES)
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(JSON_VALUES)
    return copy


def compact(document: Any) -> bytes:
    """As Go's json.Marshal writes it."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
