"""task-topology: ``pkg/scheduler/plugins/task-topology/topology_test.go`` at v1.15.1
(Test_readTopologyFromPgAnnotations, its seven cases), the worked scoring examples of the
reference (plugins-part2.md §4.4; upstream has no bucket or score tests), then bucket building,
scoring and allocate events against the upstream algorithm, driven through Caldera's framework."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import Session
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from plugins.task_topology import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    TASK_ORDER_ANNOTATION,
    TaskTopology,
    TaskTopologyPlugin,
    TopologyError,
    read_topology_from_pg_annotations,
)
from schemas.api import JobInfo, NodeInfo, PodGroup, Resource, TaskInfo, TaskStatus
from schemas.k8s import ObjectMeta, Pod

TASK_SPEC = "volcano.sh/task-spec"
GI = 2**30

# --- Test_readTopologyFromPgAnnotations ---------------------------------------------------------


def roles_job(roles: Sequence[tuple[str, str]], annotations: dict[str, str] | None) -> JobInfo:
    """The test's JobInfo: tasks given by (name, TaskRole), the PodGroup's annotations."""
    tasks = {str(i): TaskInfo(Name=name, TaskRole=role) for i, (name, role) in enumerate(roles)}
    return JobInfo(
        Name="job1",
        Namespace="default",
        Tasks=tasks,
        PodGroup=PodGroup(metadata=ObjectMeta(annotations=annotations)),
    )


SIX = [("job1-ps-0", "ps"), ("job1-ps-1", "ps"), ("job1-worker-0", "worker"),
       ("job1-worker-1", "worker"), ("job1-chief-0", "chief"), ("job1-evaluator-0", "evaluator")]  # fmt: skip
FOUR = SIX[:4]
DASHED = [("job1-ps-some-0", "ps-some"), ("job1-ps-some-1", "ps-some"),
          ("job1-worker-another-some-0", "worker-another-some"),
          ("job1-worker-another-some-1", "worker-another-some"),
          ("job1-chief-kk-0", "chief-kk"), ("job1-evaluator-tt-0", "evaluator-tt")]  # fmt: skip


def annotations(affinity: str, anti: str, order: str) -> dict[str, str]:
    return {AFFINITY_ANNOTATION: affinity, ANTI_AFFINITY_ANNOTATION: anti,
            TASK_ORDER_ANNOTATION: order}  # fmt: skip


@pytest.mark.parametrize(
    ("job", "topology", "error"),
    [
        pytest.param(
            roles_job(SIX, annotations("ps,worker;ps,chief", "ps;worker,chief",
                                       "ps,worker,chief,evaluator")),
            TaskTopology([["ps", "worker"], ["ps", "chief"]], [["ps"], ["worker", "chief"]],
                         ["ps", "worker", "chief", "evaluator"]),
            None, id="case 0: correct annotation"),
        pytest.param(
            roles_job(DASHED, annotations(
                "ps-some,worker-another-some;ps-some,chief-kk",
                "ps-some;worker-another-some,chief-kk",
                "ps-some,worker-another-some,chief-kk,evaluator-tt")),
            TaskTopology([["ps-some", "worker-another-some"], ["ps-some", "chief-kk"]],
                         [["ps-some"], ["worker-another-some", "chief-kk"]],
                         ["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"]),
            None, id="case 1: correct annotation with hyphen"),
        pytest.param(roles_job([], None), None, None, id="case 2: nil annotation"),
        pytest.param(
            roles_job(SIX, annotations("$%GF$^trtqwrg^", "ps;worker,chief;#@FGEW^vfa897bgs;;",
                                       "ps,worker,chief,evaluator,,,")),
            None, "task $%GF$^trtqwrg^ do not exist in job <default/job1>",
            id="case 3: invalid annotation"),
        pytest.param(
            roles_job(FOUR, annotations("ps,worker", "ps", "ps,worker,chief")),
            None, "task chief do not exist in job <default/job1>",
            id="case 4: invalid task name"),
        pytest.param(
            roles_job(FOUR, annotations("ps,worker", "ps,ps", "ps,worker")),
            None, "task ps is duplicate in job <default/job1>",
            id="case 5: duplicate task name"),
        pytest.param(
            roles_job(SIX, annotations("ps,worker;ps,,chief,;", "ps;worker,chief;;;",
                                       "ps,worker,chief,evaluator,,,")),
            TaskTopology([["ps", "worker"], ["ps", "", "chief", ""], [""]],
                         [["ps"], ["worker", "chief"], [""], [""], [""]],
                         ["ps", "worker", "chief", "evaluator", "", "", ""]),
            None, id="case 6: redundant punctuations"),
    ],
)  # fmt: skip
def test_read_topology_from_pg_annotations(
    job: JobInfo, topology: TaskTopology | None, error: str | None
) -> None:
    if error is not None:
        with pytest.raises(TopologyError) as raised:
            read_topology_from_pg_annotations(job)
        assert str(raised.value) == error
    else:
        assert read_topology_from_pg_annotations(job) == topology


# --- a session ------------------------------------------------------------------------------------


def pod_task(
    name: str,
    spec: str | None,
    *,
    node: str = "",
    status: TaskStatus = TaskStatus.Pending,
    cpu: float = 1000,
    memory: float = GI,
    scalars: dict[str, float] | None = None,
    role: str | None = None,
    labels: dict[str, str] | None = None,
) -> TaskInfo:
    pod_annotations = {"scheduling.k8s.io/group-name": "j"}
    if spec is not None:
        pod_annotations[TASK_SPEC] = spec
    return TaskInfo(
        UID=f"uid-{name}",
        Job="ns/j",
        Name=name,
        Namespace="ns",
        TaskRole=spec or "" if role is None else role,
        Resreq=Resource(cpu, memory, {"pods": 1.0, **(scalars or {})}),
        NodeName=node,
        Status=int(status),
        Pod=Pod(
            metadata=ObjectMeta(
                name=name, namespace="ns", uid=f"uid-{name}", labels=labels,
                annotations=pod_annotations,
            )
        ),
    )  # fmt: skip


def topology_job(tasks: Sequence[TaskInfo], **pg_annotations: str) -> JobInfo:
    keys = {"affinity": AFFINITY_ANNOTATION, "anti": ANTI_AFFINITY_ANNOTATION,
            "order": TASK_ORDER_ANNOTATION}  # fmt: skip
    return JobInfo(
        UID="ns/j",
        Name="j",
        Namespace="ns",
        Tasks={t.UID: t for t in tasks},
        PodGroup=PodGroup(
            metadata=ObjectMeta(
                name="j", namespace="ns",
                annotations={keys[k]: v for k, v in pg_annotations.items()},
            )
        ),
    )  # fmt: skip


def node(name: str, cpu: float = 8000, memory: float = 16 * GI, **extra: float) -> NodeInfo:
    idle = Resource(cpu, memory, {"pods": 110.0, **extra})
    return NodeInfo(Name=name, Idle=idle, Releasing=Resource(), Allocatable=idle)


class Recorder:
    def __init__(self) -> None:
        self.clamped: list[tuple[str, str]] = []

    def __call__(self, plugin: str, resource: str) -> None:
        self.clamped.append((plugin, resource))


def open_plugin(
    jobs: Sequence[JobInfo],
    arguments: dict[str, Any] | None = None,
    recorder: Recorder | None = None,
) -> tuple[TaskTopologyPlugin, Framework]:
    plugin = TaskTopologyPlugin(Arguments(arguments or {}, plugin="task-topology"))
    ssn = Session(jobs={j.UID: j for j in jobs}, has_snapshot=True,
                  clamped=recorder or Recorder())  # fmt: skip
    plugin.on_session_open(ssn)
    framework = Framework(
        [[Slot(PluginOption(name=plugin.name), plugin, plugin.hooks())]], Release(1, 15), Metrics()
    )
    return plugin, framework


def allocated(task: TaskInfo, node_name: str) -> TaskInfo:
    """The allocate event's task: NodeName set, status Allocated."""
    return TaskInfo(UID=task.UID, Job=task.Job, Name=task.Name, Namespace=task.Namespace,
                    TaskRole=task.TaskRole, Resreq=task.Resreq, NodeName=node_name,
                    Status=int(TaskStatus.Allocated), Pod=task.Pod)  # fmt: skip


def bucket_of(plugin: TaskTopologyPlugin, task: TaskInfo) -> int:
    bucket = plugin.managers["ns/j"].get_bucket(task)
    return -1 if bucket is None else bucket.index


# --- the reference's worked examples (§4.4, derived) --------------------------------------------

PS0 = pod_task("j-ps-0", "ps")
PS1 = pod_task("j-ps-1", "ps")
W0 = pod_task("j-worker-0", "worker")
W1 = pod_task("j-worker-1", "worker")


def test_worked_example_one_bucket_then_an_allocation() -> None:
    plugin, framework = open_plugin([topology_job([PS0, W0, W1], affinity="ps,worker")])
    assert [bucket_of(plugin, t) for t in (PS0, W0, W1)] == [0, 0, 0]
    assert plugin.managers["ns/j"].bucket_max_size == 3
    a, b = node("A"), node("B")
    assert framework.score_sum(BY_VERB["prioritize"], W0, [a, b]) == {
        "A": 100.0,
        "B": 100.0,
    }  # 3 * 1 * 100 / 3
    assert framework.event(BY_VERB["allocate"], allocated(PS0, "A")) == ""
    assert framework.score_sum(BY_VERB["prioritize"], W0, [a, b]) == {
        "A": 100.0,
        "B": pytest.approx(200 / 3),
    }


def test_worked_example_anti_affinity_splits_the_ps_pods() -> None:
    job = topology_job([PS0, PS1, W0, W1], affinity="ps,worker", anti="ps")
    plugin, framework = open_plugin([job])
    # ps (priority 4) first: ps-1 opens bucket 1; worker-0 ties and keeps bucket 0; worker-1
    # ties and takes bucket 1, whose request is smaller.
    assert [bucket_of(plugin, t) for t in (PS0, PS1, W0, W1)] == [0, 1, 0, 1]
    assert plugin.managers["ns/j"].bucket_max_size == 2
    framework.event(BY_VERB["allocate"], allocated(PS0, "A"))
    # ps-1 on A: bucket 1 has nothing there, one ps (self-anti) is: -1 + 2 unplaced = 1 -> 50.
    assert framework.score_sum(BY_VERB["prioritize"], PS1, [node("A"), node("B")]) == {
        "A": 50.0,
        "B": 100.0,
    }


def test_equal_tasks_are_bucketed_by_pod_name_whatever_the_payload_order() -> None:
    # The same job as above with its tasks listed backwards: the sort, not the payload, decides.
    job = topology_job([W1, W0, PS1, PS0], affinity="ps,worker", anti="ps")
    plugin, _ = open_plugin([job])
    assert [bucket_of(plugin, t) for t in (PS0, PS1, W0, W1)] == [0, 1, 0, 1]


# --- scoring -------------------------------------------------------------------------------------


def test_weight_multiplies_before_scaling() -> None:
    _, framework = open_plugin(
        [topology_job([PS0, W0, W1], affinity="ps,worker")], {"task-topology.weight": 7}
    )
    assert framework.score_sum(BY_VERB["prioritize"], W0, [node("A")]) == {"A": 700.0}


def test_a_node_the_task_cannot_fit_scores_zero() -> None:
    gpu = pod_task("j-worker-9", "worker", scalars={"nvidia.com/gpu": 1000.0})
    _, framework = open_plugin([topology_job([PS0, gpu], affinity="ps,worker")])
    lacking = node("no-gpu")  # no such scalar at all, even if 0 were asked: LessPartly
    small = node("small", cpu=500, **{"nvidia.com/gpu": 1000.0})
    releasing = NodeInfo(Name="rel", Idle=Resource(500, GI, {"pods": 1.0, "nvidia.com/gpu": 0.0}),
                         Releasing=Resource(500, 0, {"nvidia.com/gpu": 1000.0}))  # fmt: skip
    scores = framework.score_sum(BY_VERB["prioritize"], gpu, [lacking, small, releasing])
    # "rel" fits with its releasing resources; the bucket's request (ps-0 too) does not, so ps-0
    # leaves it: 2 - 1 = 1 of a largest bucket of 2.
    assert scores == {"no-gpu": 0.0, "small": 0.0, "rel": 50.0}


def test_unplaced_tasks_leave_the_bucket_until_the_rest_fits() -> None:
    tasks = [pod_task(f"j-w-{i}", "w", cpu=3000) for i in range(4)]
    _, framework = open_plugin([topology_job(tasks, affinity="w")])  # self-affinity: one bucket
    # 4 tasks of 3 cores: a 5-core node holds this one plus none of the others (4 -> 4-3 = 1),
    # an 8-core node two more (4 - 2 = 2); 12 cores hold all.
    scores = framework.score_sum(BY_VERB["prioritize"], tasks[0], [node("c5", cpu=5000), node("c8", cpu=8000),
                                             node("c12", cpu=12000)])  # fmt: skip
    assert scores == {"c5": 25.0, "c8": 50.0, "c12": 100.0}


def test_out_of_bucket_and_foreign_tasks_score_zero() -> None:
    lone = pod_task("j-eval-0", "evaluator")
    no_spec = pod_task("j-x-0", None, role="ps", labels={TASK_SPEC: "ps"})
    _, framework = open_plugin([topology_job([PS0, W0, lone, no_spec], affinity="ps,worker")])
    assert framework.score_sum(BY_VERB["prioritize"], lone, [node("A")]) == {"A": 0.0}
    assert framework.score_sum(BY_VERB["prioritize"], no_spec, [node("A")]) == {
        "A": 0.0
    }  # label only: validated, no bucket
    other_job = TaskInfo(UID="o", Job="ns/other", Name="o", Resreq=Resource(1, 1, {"pods": 1.0}))
    assert framework.score_sum(BY_VERB["prioritize"], other_job, [node("A")]) == {"A": 0.0}


def test_jobs_without_pending_tasks_or_valid_annotations_get_no_manager() -> None:
    running = pod_task("j-ps-0", "ps", node="A", status=TaskStatus.Running)
    plugin, _ = open_plugin([topology_job([running], affinity="ps")])
    assert plugin.managers == {}
    plugin, _ = open_plugin([topology_job([PS0, W0], affinity="ps,chief")])
    assert plugin.managers == {}
    plugin, _ = open_plugin([topology_job([PS0, W0])])  # no annotation at all
    assert plugin.managers == {}


def test_placed_tasks_make_one_bucket_per_node_and_count_there() -> None:
    placed_a = pod_task("j-worker-5", "worker", node="A", status=TaskStatus.Running)
    placed_b = pod_task("j-worker-6", "worker", node="B", status=TaskStatus.Running)
    plugin, framework = open_plugin(
        [topology_job([placed_b, placed_a, PS0, W0], affinity="ps,worker")]
    )
    # Placed tasks first, by node name: A's bucket 0, B's bucket 1; ps-0 joins bucket 0 (first of
    # equal affinity and request score), worker-0 too (affinity 1 with ps, 0 with B's worker).
    assert [bucket_of(plugin, t) for t in (placed_a, placed_b, PS0, W0)] == [0, 1, 0, 0]
    assert plugin.managers["ns/j"].bucket_max_size == 3
    # W0 on A: 1 placed + 2 unplaced = 3 -> 100; on B (not its bucket's node): 2 -> 66.67.
    assert framework.score_sum(BY_VERB["prioritize"], W0, [node("A"), node("B")]) == pytest.approx(
        {"A": 100.0, "B": 200 / 3}
    )


def test_task_order_and_priority_decide_who_opens_buckets() -> None:
    # Self-anti-affinity on worker; order "worker,ps": workers first, each in its own bucket,
    # then ps joins the first bucket of highest affinity (inter-affinity with worker).
    job = topology_job([PS0, W0, W1], affinity="ps,worker", anti="worker", order="worker,ps")
    plugin, _ = open_plugin([job])
    assert [bucket_of(plugin, t) for t in (W0, W1, PS0)] == [0, 1, 0]


# --- allocate events --------------------------------------------------------------------------


def test_allocate_moves_the_task_and_accumulates_on_the_node() -> None:
    plugin, framework = open_plugin([topology_job([PS0, W0, W1], affinity="ps,worker")])
    framework.event(BY_VERB["allocate"], allocated(W0, "A"))
    bucket = plugin.managers["ns/j"].buckets[0]
    assert list(bucket.tasks) == ["uid-j-ps-0", "uid-j-worker-1"]
    assert bucket.node == {"A": 1}
    assert bucket.bound_task == 1
    assert bucket.request == Resource(2000, 2 * GI, {"pods": 2.0})
    assert plugin.managers["ns/j"].node_task_set == {"A": {"worker": 1}}
    assert plugin.managers["ns/j"].bucket_max_size == 3  # never reduced


def test_a_second_allocation_of_the_same_task_is_clamped_not_a_crash() -> None:
    recorder = Recorder()
    plugin, framework = open_plugin([topology_job([W0], affinity="worker")], recorder=recorder)
    framework.event(BY_VERB["allocate"], allocated(W0, "A"))
    framework.event(
        BY_VERB["allocate"], allocated(W0, "B")
    )  # no deallocate in between: drift, as upstream
    bucket = plugin.managers["ns/j"].buckets[0]
    assert bucket.request == Resource(0, 0, {"pods": 0.0})
    assert bucket.node == {"A": 1, "B": 1}
    assert ("task-topology", "cpu") in recorder.clamped
    # On A: 1 placed there, nothing unplaced, a largest bucket of 1.
    assert framework.score_sum(BY_VERB["prioritize"], W0, [node("A")]) == {"A": 100.0}


def test_no_deallocate_handler_and_events_for_unknown_jobs() -> None:
    plugin, framework = open_plugin([topology_job([PS0, W0], affinity="ps,worker")])
    assert "deallocate" not in plugin.hooks()
    assert not framework.answers(BY_VERB["deallocate"])
    stranger = TaskInfo(UID="s", Job="ns/other", NodeName="A")
    assert framework.event(BY_VERB["allocate"], stranger) == ""
    assert plugin.managers["ns/j"].node_task_set == {}


def test_plugin_declarations() -> None:
    assert TaskTopologyPlugin.requires_verbs == ("allocate",)
    assert TaskTopologyPlugin.needs_snapshot
    assert any(hook.startswith("TaskOrderFn") for hook in TaskTopologyPlugin.in_tree_only)
    plugin, _ = open_plugin([])
    assert plugin.hooks() == frozenset({"node_order", "allocate"})


@pytest.mark.parametrize(
    ("value", "weight"),
    [(3, 3), (-2, -2), ("3", 1), (2.5, 1), (True, 1), (2**70, 1)],
    ids=["int", "negative kept", "string", "float", "bool", "beyond int64"],
)
def test_weight_argument_follows_get_int(value: Any, weight: int) -> None:
    plugin = TaskTopologyPlugin(Arguments({"task-topology.weight": value}, plugin="task-topology"))
    assert plugin.weight == weight


def test_prioritize_computes_the_partial_requests_once_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks = [pod_task(f"j-w-{i:03}", "w", cpu=1000) for i in range(300)]
    _, framework = open_plugin([topology_job(tasks, affinity="w")])
    calls = 0
    original = TaskTopologyPlugin._partial_requests

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(*args)

    monkeypatch.setattr(TaskTopologyPlugin, "_partial_requests", staticmethod(counting))
    nodes = [node(f"n{i:03}", cpu=float(1000 * (i % 50 + 1)), memory=512 * GI, pods=1000.0)
             for i in range(150)]  # fmt: skip
    scores = framework.score_sum(BY_VERB["prioritize"], tasks[0], nodes)
    assert calls == 1
    # A node of k cores keeps k of the 300 tasks (this one and k - 1 others).
    assert scores["n009"] == pytest.approx(10 * 100 / 300)
    assert scores["n049"] == pytest.approx(50 * 100 / 300)


def test_the_binary_search_agrees_with_upstream_linear_loop() -> None:
    import random

    from plugins.task_topology import PartialRequests

    rng = random.Random(7)
    for _ in range(200):
        partials: list[Resource] = []
        remains = Resource(0, 0, {"pods": 0.0, "g": 0.0})
        members = [Resource(rng.choice([0, 0.05, 500, 1000]), rng.choice([0, GI]),
                            {"pods": 1.0, "g": rng.choice([0.0, 1000.0])})
                   for _ in range(rng.randint(0, 12))]  # fmt: skip
        for member in members:
            remains.MilliCPU += member.MilliCPU
            remains.Memory += member.Memory
            for key, value in (member.ScalarResources or {}).items():
                assert remains.ScalarResources is not None
                remains.ScalarResources[key] += value
        for member in members:
            remains = Resource(remains.MilliCPU - member.MilliCPU, remains.Memory - member.Memory,
                               {k: v - (member.ScalarResources or {}).get(k, 0.0)
                                for k, v in (remains.ScalarResources or {}).items()})  # fmt: skip
            partials.append(remains)
        capacity = Resource(rng.choice([0, 999.95, 2000, 5000]), rng.choice([0, 3 * GI]),
                            {"pods": float(rng.randint(0, 6)), "g": rng.choice([0.0, 2000.0])})  # fmt: skip
        fast = PartialRequests(partials, True).removed_until_fit(capacity)
        assert fast == PartialRequests(partials, False).removed_until_fit(capacity)


def test_a_negative_request_falls_back_to_trying_every_partial_request() -> None:
    odd = pod_task("j-w-2", "w", cpu=-3000)  # removing it grows the request: not monotone
    tasks = [pod_task("j-w-0", "w", cpu=1000), pod_task("j-w-1", "w", cpu=4000), odd,
             pod_task("j-w-3", "w", cpu=4000)]  # fmt: skip
    _, framework = open_plugin([topology_job(tasks, affinity="w")])
    # Request 6000 on a 4-core node: taking out w-1 leaves 2000, which fits: 4 - 1 = 3 of 4.
    # (Partial requests 2000, 5000, 1000: fits, does not, fits; a bisection would say 3.)
    assert framework.score_sum(BY_VERB["prioritize"], tasks[0], [node("c4", cpu=4000)]) == {
        "c4": 75.0
    }
