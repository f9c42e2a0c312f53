"""nodegroup: ``pkg/scheduler/plugins/nodegroup/nodegroup_test.go`` at master ed72c7c81 (=
v1.16.0-alpha.x): TestNodeGroup (its seven cases, ids as upstream's ``t.Run`` names),
TestNodeGroupResourceLimits (six cases), TestNodeGroupResourceLimitAllocationEvent; then the
per-release behaviour, hierarchy edge cases, the annotation's JSON rules, events and rollback,
driven through Caldera's framework as Volcano's session would call the plugin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import FitError, Session, StatusCode
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from plugins.nodegroup import (
    ERR_AFFINITY_NOT_FOUND,
    ERR_LABEL_NOT_FOUND,
    ERR_LIMIT_EXCEEDED,
    ERR_LIMIT_INVALID,
    ERR_NODE_UNSATISFIED,
    LimitsError,
    NodeGroupPlugin,
    parse_resource_limits,
)
from schemas.api import (
    Affinity,
    JobInfo,
    NodeGroupAffinity,
    NodeInfo,
    Queue,
    QueueInfo,
    QueueSpec,
    Resource,
    TaskInfo,
    TaskStatus,
)
from schemas.k8s import Node, ObjectMeta

GI = 2**30
LIMITS = "volcano.sh/nodegroup-resource-limits"
V1_16 = Release(1, 16)


class Recorder:
    def __init__(self) -> None:
        self.clamped: list[tuple[str, str]] = []

    def __call__(self, plugin: str, resource: str) -> None:
        self.clamped.append((plugin, resource))


def node(name: str, group: str | None) -> NodeInfo:
    labels = {} if group is None else {"volcano.sh/nodegroup-name": group}
    return NodeInfo(Name=name, Node=Node(metadata=ObjectMeta(name=name, labels=labels)))


def affinity(
    req: Sequence[str] | None = None,
    pref: Sequence[str] | None = None,
    anti_req: Sequence[str] | None = None,
    anti_pref: Sequence[str] | None = None,
) -> Affinity:
    group = None
    if req is not None or pref is not None:
        group = NodeGroupAffinity(
            list(req) if req is not None else None, list(pref) if pref is not None else None
        )
    anti = None
    if anti_req is not None or anti_pref is not None:
        anti = NodeGroupAffinity(
            list(anti_req) if anti_req is not None else None,
            list(anti_pref) if anti_pref is not None else None,
        )
    return Affinity(group, anti)


def queue(
    name: str,
    aff: Affinity | None = None,
    parent: str = "",
    annotations: dict[str, str] | None = None,
) -> QueueInfo:
    return QueueInfo(
        UID=name,
        Name=name,
        Queue=Queue(
            metadata=ObjectMeta(name=name, annotations=annotations),
            spec=QueueSpec(parent=parent, affinity=aff),
        ),
    )


def task(
    name: str,
    job: str,
    cpu: float = 2000,
    mem: float = 4 * GI,
    node_name: str = "",
    status: TaskStatus = TaskStatus.Pending,
) -> TaskInfo:
    return TaskInfo(
        UID=f"uid-{name}",
        Job=job,
        Name=name,
        Namespace=job.split("/")[0],
        Resreq=Resource(cpu, mem, {"pods": 1}),
        NodeName=node_name,
        Status=int(status),
    )


def job(key: str, queue_name: str, tasks: Sequence[TaskInfo] = ()) -> JobInfo:
    namespace, name = key.split("/")
    return JobInfo(UID=key, Name=name, Namespace=namespace, Queue=queue_name,
                   Tasks={t.UID: t for t in tasks})  # fmt: skip


def open_plugin(
    queues: Sequence[QueueInfo],
    jobs: Sequence[JobInfo],
    nodes: Sequence[NodeInfo] = (),
    arguments: dict[str, Any] | None = None,
    hierarchy: bool = False,
    release: Release = V1_16,
    recorder: Recorder | None = None,
) -> tuple[NodeGroupPlugin, Framework]:
    flags = {"enableHierarchy": True} if hierarchy else None
    plugin = NodeGroupPlugin(Arguments(arguments or {}, plugin="nodegroup", flags=flags))
    ssn = Session(
        jobs={j.UID: j for j in jobs},
        nodes={n.Name: n for n in nodes},
        queues={q.Name: q for q in queues},
        has_snapshot=True,
        release=release,
        clamped=recorder or Recorder(),
    )
    plugin.on_session_open(ssn)
    framework = Framework(
        [[Slot(PluginOption(name=plugin.name), plugin, plugin.hooks())]], release, Metrics()
    )
    return plugin, framework


def code(failure: FitError | None) -> int:
    return 0 if failure is None else int(failure.code)


# --- TestNodeGroup ---------------------------------------------------------------------------

NODES = [node("n1", "group1"), node("n2", "group2"), node("n3", "group3"),
         node("n4", "group4"), node("n5", None)]  # fmt: skip
Q1_AFFINITY = affinity(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"])
Q2_AFFINITY = affinity(["group1"], ["group3"], ["group2"], ["group4"])
ROOT_Q = queue("root", Q1_AFFINITY)
Q1 = queue("q1", Q1_AFFINITY, parent="root")
Q2 = queue("q2", Q2_AFFINITY, parent="root")
Q3 = queue("q3", affinity(pref=["group1", "group3"]))
NO_AFFINITY_ROOT_Q = queue("root-no-affinity")
NO_AFFINITY_Q = queue("q-no-affinity", parent="root")
Q1_CHILD = queue("q1-child", parent="q1")
NO_AFFINITY_Q_CHILD = queue("q-no-affinity-child", parent="q-no-affinity")

STANDARD = ([100.0, 0.0, 150.0, -1.0, 0.0], [0, 3, 0, 0, 3])


@pytest.mark.parametrize(
    ("queues", "task_queue", "arguments", "hierarchy", "expected"),
    [
        pytest.param([Q1], "q1", {}, False, STANDARD,
                     id="case 0 case: soft constraints is subset of hard constraints"),
        pytest.param([Q2], "q2", {}, False, ([100.0, 0.0, 50.0, -1.0, 0.0], [0, 3, 0, 0, 3]),
                     id="case 1 case: soft constraints is not subset of hard constraints"),
        pytest.param([NO_AFFINITY_ROOT_Q], "root-no-affinity", {"strict": False}, False,
                     ([0.0] * 5, [3, 3, 3, 3, 0]),
                     id="case 2 case: affinity is not set for the queue, pods still cannot be"
                        " scheduled to nodes with the nodegroup label when strict=false"),
        pytest.param([ROOT_Q, Q1, Q1_CHILD], "q1-child", {}, True, STANDARD,
                     id="case 3 case: affinity inherits from parent queue"),
        pytest.param([ROOT_Q, NO_AFFINITY_Q, NO_AFFINITY_Q_CHILD], "q-no-affinity-child", {},
                     True, STANDARD,
                     id="case 4 case: affinity inherits from ancestor queue if parent queue has"
                        " no affinity"),
        pytest.param([NO_AFFINITY_Q], "q-no-affinity", {}, False, ([0.0] * 5, [3] * 5),
                     id="case 5 case: queue without affinity"),
        pytest.param([Q3], "q3", {"enablePreferredOrder": True}, False,
                     ([50.0, 0.0, 25.0, 0.0, 0.0], [0, 3, 0, 3, 3]),
                     id="case 6 case: preferred nodegroup priority ordering"),
    ],
)  # fmt: skip
def test_node_group(
    queues: list[QueueInfo],
    task_queue: str,
    arguments: dict[str, Any],
    hierarchy: bool,
    expected: tuple[list[float], list[int]],
) -> None:
    pending = task("p", "c1/pg")
    _, framework = open_plugin(queues, [job("c1/pg", task_queue, [pending])], NODES,
                               arguments, hierarchy)  # fmt: skip
    scores = framework.score_sum(BY_VERB["prioritize"], pending, NODES)
    assert [scores[n.Name] for n in NODES] == expected[0]
    codes = [code(framework.first_failure(BY_VERB["predicate"], pending, n)) for n in NODES]
    assert codes == expected[1]


# --- TestNodeGroupResourceLimits -------------------------------------------------------------

LIMIT_NODES = [node("n1", "group1"), node("n2", "group2")]
LIMIT_AFFINITY = affinity(["group1", "group2"], ["group1"])


@pytest.mark.parametrize(
    ("annotation", "used", "expected"),
    [
        pytest.param(None, False, [0, 0], id="no annotation keeps existing behavior"),
        pytest.param('{"group1":{"cpu":"3","memory":"8Gi"}}', False, [0, 0],
                     id="under nodegroup limit permits preferred nodegroup"),
        pytest.param('{"group1":{"cpu":"3"}}', False, [0, 0],
                     id="omitted resource dimension is unlimited"),
        pytest.param('{"group1":{"cpu":"1"}}', False, [3, 0],
                     id="specified resource dimension is enforced"),
        pytest.param('{"group1":{"cpu":"3","memory":"8Gi"}}', True, [3, 0],
                     id="over nodegroup limit rejects preferred nodegroup and permits fallback"),
        pytest.param('{"group1":{"cpu":', False, [3, 3],
                     id="invalid annotation rejects queue tasks"),
    ],
)  # fmt: skip
def test_node_group_resource_limits(
    annotation: str | None, used: bool, expected: list[int]
) -> None:
    annotations = None if annotation is None else {LIMITS: annotation}
    pending = task("pending", "limit/pg-pending")
    jobs = [job("limit/pg-pending", "q", [pending])]
    if used:
        running = task("used", "limit/pg-used", node_name="n1", status=TaskStatus.Running)
        jobs.append(job("limit/pg-used", "q", [running]))
    _, framework = open_plugin([queue("q", LIMIT_AFFINITY, annotations=annotations)], jobs,
                               LIMIT_NODES)  # fmt: skip
    failures = [framework.first_failure(BY_VERB["predicate"], pending, n) for n in LIMIT_NODES]
    assert [code(f) for f in failures] == expected
    reasons = {f.reason for f in failures if f is not None}
    if annotation == '{"group1":{"cpu":':
        assert reasons == {ERR_LIMIT_INVALID}
    elif reasons:
        assert reasons == {ERR_LIMIT_EXCEEDED}


EVENT_QUEUE = queue("q-event-limit", affinity(["group1"]),
                    annotations={LIMITS: '{"group1":{"cpu":"3","memory":"8Gi"}}'})  # fmt: skip


def test_node_group_resource_limit_allocation_event() -> None:
    """TestNodeGroupResourceLimitAllocationEvent: allocation event updates nodegroup usage."""
    t1, t2 = task("pending-1", "limit/pg-1"), task("pending-2", "limit/pg-2")
    n1 = node("n1", "group1")
    _, framework = open_plugin([EVENT_QUEUE], [job("limit/pg-1", "q-event-limit", [t1]),
                               job("limit/pg-2", "q-event-limit", [t2])], [n1])  # fmt: skip
    assert framework.first_failure(BY_VERB["predicate"], t1, n1) is None
    allocated = task("pending-1", "limit/pg-1", node_name="n1", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["allocate"], allocated) == ""
    assert framework.first_failure(BY_VERB["predicate"], t2, n1) == FitError(ERR_LIMIT_EXCEEDED)


# --- reasons, codes and per-release behaviour ------------------------------------------------


def test_reasons_and_codes() -> None:
    pending = task("p", "c1/pg")
    _, framework = open_plugin([Q2], [job("c1/pg", "q2", [pending])], NODES)
    first = [framework.first_failure(BY_VERB["predicate"], pending, n) for n in NODES]
    assert first == [None, FitError(ERR_NODE_UNSATISFIED), None, None,
                     FitError(ERR_LABEL_NOT_FOUND)]  # fmt: skip
    _, framework = open_plugin([NO_AFFINITY_Q], [job("c1/pg", "q-no-affinity", [pending])], NODES)
    assert framework.first_failure(BY_VERB["predicate"], pending, NODES[0]) == FitError(
        ERR_AFFINITY_NOT_FOUND, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE
    )


def test_a_job_missing_from_the_session_is_a_plain_error() -> None:
    """Upstream returns ``fmt.Errorf`` (not a FitError): Volcano wraps it with code 1."""
    stranger = task("s", "c1/gone")
    _, framework = open_plugin([Q1], [], NODES)
    failure = framework.first_failure(BY_VERB["predicate"], stranger, NODES[0])
    assert failure == FitError("job c1/gone not found in session", StatusCode.ERROR)
    assert framework.score_sum(BY_VERB["prioritize"], stranger, NODES) == dict.fromkeys(
        (n.Name for n in NODES), 0.0
    )


def test_a_queue_missing_from_the_session_is_unset_affinity() -> None:
    pending = task("p", "c1/pg")
    _, framework = open_plugin([], [job("c1/pg", "elsewhere", [pending])], NODES,
                               {"strict": False})  # fmt: skip
    codes = [code(framework.first_failure(BY_VERB["predicate"], pending, n)) for n in NODES]
    assert codes == [3, 3, 3, 3, 0]


def test_strict_false_still_rejects_unlabelled_nodes_when_the_queue_has_affinity() -> None:
    pending = task("p", "c1/pg")
    _, framework = open_plugin([Q1], [job("c1/pg", "q1", [pending])], NODES, {"strict": "false"})
    assert framework.first_failure(BY_VERB["predicate"], pending, NODES[4]) == FitError(
        ERR_LABEL_NOT_FOUND
    )


def test_empty_affinity_is_unset_and_does_not_inherit() -> None:
    pending = task("p", "c1/pg")
    empty = queue("q-empty", Affinity(), parent="root")
    _, framework = open_plugin([ROOT_Q, empty], [job("c1/pg", "q-empty", [pending])], NODES,
                               {"strict": False}, hierarchy=True)  # fmt: skip
    codes = [code(framework.first_failure(BY_VERB["predicate"], pending, n)) for n in NODES]
    assert codes == [3, 3, 3, 3, 0]
    assert set(framework.score_sum(BY_VERB["prioritize"], pending, NODES).values()) == {0.0}


def test_anti_preferred_allows_an_anti_required_group_and_scores_minus_one() -> None:
    pending = task("p", "c1/pg")
    q = queue("q", affinity(["group1"], ["group1"], ["group1"], ["group1"]))
    _, framework = open_plugin([q], [job("c1/pg", "q", [pending])], NODES)
    assert framework.first_failure(BY_VERB["predicate"], pending, NODES[0]) is None
    assert framework.score_sum(BY_VERB["prioritize"], pending, NODES)["n1"] == -1.0


def test_preferred_order_with_a_repeated_group_keeps_the_last_position() -> None:
    pending = task("p", "c1/pg")
    q = queue("q", affinity(pref=["group1", "group2", "group1"]))
    _, framework = open_plugin([q], [job("c1/pg", "q", [pending])], NODES[:2],
                               {"enablePreferredOrder": True})  # fmt: skip
    # n = 2 distinct groups; group1 at 2: 50 * 0 / 2 = 0; group2 at 1: 50 * 1 / 2 = 25.
    assert framework.score_sum(BY_VERB["prioritize"], pending, NODES[:2]) == {"n1": 0.0, "n2": 25.0}


def test_preferred_order_fractions_are_go_float_arithmetic() -> None:
    pending = task("p", "c1/pg")
    q = queue("q", affinity(pref=["group1", "group2", "group3"]))
    _, framework = open_plugin([q], [job("c1/pg", "q", [pending])], NODES[:3],
                               {"enablePreferredOrder": True})  # fmt: skip
    scores = framework.score_sum(BY_VERB["prioritize"], pending, NODES[:3])
    assert scores == {"n1": 50.0, "n2": 0.5 * 100 * 2.0 / 3.0, "n3": 0.5 * 100 * 1.0 / 3.0}


def test_v1_14_ignores_enable_preferred_order() -> None:
    pending = task("p", "c1/pg")
    _, framework = open_plugin([Q3], [job("c1/pg", "q3", [pending])], NODES,
                               {"enablePreferredOrder": True}, release=Release(1, 14))  # fmt: skip
    assert framework.score_sum(BY_VERB["prioritize"], pending, NODES)["n3"] == 50.0


def test_before_v1_16_the_limits_annotation_and_events_change_nothing() -> None:
    pending = task("pending", "limit/pg")
    q = queue("q", LIMIT_AFFINITY, annotations={LIMITS: '{"group1":{"cpu":"1"}}'})
    bad = queue("bad", LIMIT_AFFINITY, annotations={LIMITS: "{"})
    other = task("other", "limit/bad")
    plugin, framework = open_plugin([q, bad], [job("limit/pg", "q", [pending]),
                                    job("limit/bad", "bad", [other])], LIMIT_NODES,
                                    release=Release(1, 15))  # fmt: skip
    assert framework.first_failure(BY_VERB["predicate"], pending, LIMIT_NODES[0]) is None
    assert framework.first_failure(BY_VERB["predicate"], other, LIMIT_NODES[0]) is None
    placed = task("pending", "limit/pg", node_name="n1", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["allocate"], placed) == ""
    assert plugin.queue_attrs["q"].allocated == {}


# --- hierarchy -------------------------------------------------------------------------------


def scores_for(queues: list[QueueInfo], queue_name: str, hierarchy: bool = True) -> list[float]:
    pending = task("p", "c1/pg")
    _, framework = open_plugin(queues, [job("c1/pg", queue_name, [pending])], NODES,
                               hierarchy=hierarchy)  # fmt: skip
    scores = framework.score_sum(BY_VERB["prioritize"], pending, NODES)
    return [scores[n.Name] for n in NODES]


def test_hierarchy_off_does_not_inherit() -> None:
    assert scores_for([ROOT_Q, Q1, Q1_CHILD], "q1-child", hierarchy=False) == [0.0] * 5


def test_nearest_ancestor_wins() -> None:
    mid = queue("mid", Q2_AFFINITY, parent="root")
    leaf = queue("leaf", parent="mid")
    assert scores_for([ROOT_Q, mid, leaf], "leaf") == [100.0, 0.0, 50.0, -1.0, 0.0]


def test_a_missing_parent_cuts_the_chain() -> None:
    """Upstream builds no ancestors for a queue whose parent is not in the session."""
    orphan = queue("orphan", parent="gone")
    child = queue("child", parent="orphan")
    assert scores_for([ROOT_Q, orphan, child], "child") == [0.0] * 5
    assert scores_for([ROOT_Q, orphan], "orphan") == [0.0] * 5


def test_an_empty_parent_means_root_and_root_must_be_in_the_session() -> None:
    child = queue("child")
    assert scores_for([ROOT_Q, child], "child") == [100.0, 0.0, 150.0, -1.0, 0.0]
    assert scores_for([child], "child") == [0.0] * 5


def test_root_never_follows_its_own_parent() -> None:
    root = queue("root", parent="q1")
    assert scores_for([root, Q1], "root") == [0.0] * 5


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")], ids=["a first", "b first"])
def test_a_parent_cycle_stops_the_walk(order: tuple[str, str]) -> None:
    a = queue("a", parent="b")
    b = queue("b", Q2_AFFINITY, parent="a")
    queues = {"a": a, "b": b}
    assert scores_for([queues[n] for n in order], "a") == [100.0, 0.0, 50.0, -1.0, 0.0]
    a2 = queue("a", parent="a")
    assert scores_for([a2, ROOT_Q], "a") == [0.0] * 5


def test_a_legacy_queue_shape_carries_affinity() -> None:
    body = (b'{"UID":"lq","Name":"lq","Queue":{"name":"lq","Spec":{"Weight":1,"affinity":'
            b'{"nodeGroupAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":["group1"]}}}}}')  # fmt: skip
    legacy = msgspec.json.decode(body, type=QueueInfo)
    assert scores_for([legacy], "lq", hierarchy=False) == [100.0, 0.0, 0.0, 0.0, 0.0]


# --- limits: accounting and events -----------------------------------------------------------


def limit_session(
    annotation: str, tasks: Sequence[TaskInfo] = (), recorder: Recorder | None = None
) -> tuple[NodeGroupPlugin, Framework]:
    q = queue("q", LIMIT_AFFINITY, annotations={LIMITS: annotation})
    return open_plugin([q], [job("limit/pg", "q", list(tasks))], LIMIT_NODES, recorder=recorder)


def test_only_allocated_statuses_count_at_session_open() -> None:
    tasks = [task(f"t{status.name}", "limit/pg", node_name="n1", status=status)
             for status in TaskStatus]  # fmt: skip
    plugin, _ = limit_session('{"group1":{"cpu":"100"}}', tasks)
    # Bound, Binding, Running, Allocated: 4 tasks of 2 cpu, 4Gi, 1 pod.
    assert plugin.queue_attrs["q"].allocated == {"group1": Resource(8000, 16 * GI, {"pods": 4})}


def test_tasks_on_unknown_or_unlabelled_nodes_are_not_counted() -> None:
    tasks = [task("a", "limit/pg", node_name="gone", status=TaskStatus.Running),
             task("b", "limit/pg", node_name="", status=TaskStatus.Running)]  # fmt: skip
    q = queue("q", LIMIT_AFFINITY, annotations={LIMITS: '{"group1":{"cpu":"1"}}'})
    plugin, _ = open_plugin([q], [job("limit/pg", "q", tasks)],
                            [*LIMIT_NODES, node("bare", None)])  # fmt: skip
    placed = task("c", "limit/pg", node_name="bare", status=TaskStatus.Allocated)
    assert plugin.allocate(placed) is None
    assert plugin.queue_attrs["q"].allocated == {}


def test_the_limit_counts_pods_and_extended_resources_in_volcano_units() -> None:
    gpu_task = TaskInfo(UID="g", Job="limit/pg", Name="g",
                        Resreq=Resource(1000, GI, {"pods": 1, "nvidia.com/gpu": 1000}))  # fmt: skip
    plugin, framework = limit_session('{"group1":{"pods":"1","nvidia.com/gpu":"1"}}', [gpu_task])
    n1 = LIMIT_NODES[0]
    assert framework.first_failure(BY_VERB["predicate"], gpu_task, n1) is None
    placed = TaskInfo(UID="g", Job="limit/pg", Name="g", NodeName="n1", Status=2,
                      Resreq=gpu_task.Resreq)  # fmt: skip
    framework.event(BY_VERB["allocate"], placed)
    failure = framework.first_failure(BY_VERB["predicate"], gpu_task, n1)
    assert failure == FitError(ERR_LIMIT_EXCEEDED)
    assert plugin.limit_exceeded(plugin.queue_attrs["q"], gpu_task, "group1") == [
        "pods",
        "nvidia.com/gpu",
    ]


def test_exceeding_by_less_than_the_minimum_resource_is_allowed() -> None:
    tiny = TaskInfo(UID="t", Job="limit/pg", Name="t", Resreq=Resource(1000.05, 0, None))
    _, framework = limit_session('{"group1":{"cpu":"1"}}', [tiny])
    assert framework.first_failure(BY_VERB["predicate"], tiny, LIMIT_NODES[0]) is None


def test_rollback_deallocate_frees_the_limit() -> None:
    t1, t2 = task("a", "limit/pg"), task("b", "limit/pg")
    plugin, framework = limit_session('{"group1":{"cpu":"3","memory":"8Gi"}}', [t1, t2])
    n1 = LIMIT_NODES[0]
    placed = task("a", "limit/pg", node_name="n1", status=TaskStatus.Allocated)
    framework.event(BY_VERB["allocate"], placed)
    assert framework.first_failure(BY_VERB["predicate"], t2, n1) == FitError(ERR_LIMIT_EXCEEDED)
    assert framework.first_failure(BY_VERB["predicate"], t2, LIMIT_NODES[1]) is None
    framework.event(BY_VERB["deallocate"], placed)
    assert framework.first_failure(BY_VERB["predicate"], t2, n1) is None
    assert plugin.queue_attrs["q"].allocated["group1"] == Resource(0, 0, {"pods": 0})


def test_an_unmatched_deallocate_is_clamped_not_a_crash() -> None:
    recorder = Recorder()
    running = task("r", "limit/pg", cpu=1000, mem=GI, node_name="n1", status=TaskStatus.Running)
    plugin, framework = limit_session('{"group1":{"cpu":"3"}}', [running], recorder)
    big = task("x", "limit/pg", node_name="n1", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["deallocate"], big) == ""
    assert plugin.queue_attrs["q"].allocated["group1"] == Resource(0, 0, {"pods": 0})
    # 2 cpu / 4Gi / 1 pod taken from 1 cpu / 1Gi / 1 pod: cpu and memory floored, pods reach 0.
    assert recorder.clamped == [("nodegroup", "cpu"), ("nodegroup", "memory")]
    # A group with nothing recorded is left alone (upstream skips it).
    other = task("y", "limit/pg", node_name="n2", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["deallocate"], other) == ""
    assert "group2" not in plugin.queue_attrs["q"].allocated


def test_events_for_unknown_jobs_are_ignored() -> None:
    plugin, framework = limit_session('{"group1":{"cpu":"3"}}')
    stranger = task("s", "limit/other", node_name="n1", status=TaskStatus.Allocated)
    assert framework.event(BY_VERB["allocate"], stranger) == ""
    assert framework.event(BY_VERB["deallocate"], stranger) == ""
    assert plugin.queue_attrs["q"].allocated == {}


def test_an_invalid_annotation_rejects_even_unlabelled_nodes_before_affinity() -> None:
    pending = task("p", "limit/pg")
    q = queue("q", None, annotations={LIMITS: "[]"})
    _, framework = open_plugin([q], [job("limit/pg", "q", [pending])], [node("bare", None)],
                               {"strict": False})  # fmt: skip
    assert framework.first_failure(BY_VERB["predicate"], pending, node("bare", None)) == FitError(
        ERR_LIMIT_INVALID
    )


@pytest.mark.parametrize(
    ("raw", "cpu", "names"),
    [
        ('{"group1":{"cpu":3}}', 3000.0, ("cpu",)),
        ('{"group1":{"cpu":1.5}}', 1500.0, ("cpu",)),
        ('{"group1":{"cpu":" 2 "}}', 2000.0, ("cpu",)),
        ('{"group1":{"cpu":null}}', 0.0, ("cpu",)),
        ('{"group1":null}', 0.0, ()),
        ('{"group1":{"cpu":"1"},"group1":{"cpu":"2"}}', 2000.0, ("cpu",)),
    ],
    ids=["number", "fraction", "spaces", "null quantity", "null list", "last duplicate wins"],
)
def test_limits_follow_go_json(raw: str, cpu: float, names: tuple[str, ...]) -> None:
    limit = parse_resource_limits(raw)["group1"]
    assert limit.resource.MilliCPU == cpu
    assert limit.names == names


def test_a_null_annotation_means_no_limits() -> None:
    assert parse_resource_limits("null") == {}


@pytest.mark.parametrize(
    "raw",
    ['{"group1":{"cpu":', "[]", '"x"', '{"group1":[]}', '{"group1":{"cpu":true}}',
     '{"group1":{"cpu":"lots"}}', '{"group1":{"cpu":NaN}}', '{"group1":{"cpu":{}}}'],
    ids=["truncated", "array", "string", "list value", "bool quantity", "bad quantity", "NaN",
         "object quantity"],
)  # fmt: skip
def test_invalid_limits(raw: str) -> None:
    with pytest.raises(LimitsError):
        parse_resource_limits(raw)


def test_an_empty_annotation_is_no_limit() -> None:
    pending = task("p", "limit/pg")
    plugin, framework = limit_session("", [pending])
    assert plugin.queue_attrs["q"].limits == {}
    assert framework.first_failure(BY_VERB["predicate"], pending, LIMIT_NODES[0]) is None


# --- declarations and arguments --------------------------------------------------------------


def test_plugin_declarations() -> None:
    assert NodeGroupPlugin.requires_verbs == ("allocate", "deallocate")
    assert NodeGroupPlugin.needs_snapshot
    assert NodeGroupPlugin.in_tree_only == ()
    plugin, _ = open_plugin([], [])
    assert plugin.hooks() == frozenset({"predicate", "node_order", "allocate", "deallocate"})


@pytest.mark.parametrize(
    ("value", "strict"),
    [(False, False), ("0", False), ("F", False), ("nope", True), (0, True), (None, True)],
    ids=["bool", "string 0", "string F", "unparsable", "int", "null"],
)
def test_strict_follows_get_bool(value: Any, strict: bool) -> None:
    plugin = NodeGroupPlugin(Arguments({"strict": value}, plugin="nodegroup"))
    assert plugin.strict is strict


def test_hierarchy_flag_defaults_off() -> None:
    assert not NodeGroupPlugin(Arguments({}, plugin="nodegroup")).hierarchy
    flags = {"enableHierarchy": True}
    assert NodeGroupPlugin(Arguments({}, plugin="nodegroup", flags=flags)).hierarchy


def test_prioritize_reads_the_task_queue_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    pending = task("p", "c1/pg")
    plugin, framework = open_plugin([Q1], [job("c1/pg", "q1", [pending])], NODES)
    calls = []
    original = plugin._task_attr

    def counting(t: TaskInfo) -> Any:
        calls.append(t.UID)
        return original(t)

    monkeypatch.setattr(plugin, "_task_attr", counting)
    many = [node(f"x{i}", f"group{i % 5}") for i in range(150)]
    scores = framework.score_sum(BY_VERB["prioritize"], pending, many)
    assert len(scores) == 150 and calls == ["uid-p"]
