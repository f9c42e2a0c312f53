"""The test kit plugin authors import (plugins/api/testing.py): builders with defaults, the
captured bodies shipped in the package, bodies as Go writes them, the in-process harness."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from plugins.api import Arguments, FitError, StatusCode, testing
from plugins.conformance import ConformancePlugin
from schemas.api import NodePhase, TaskStatus
from schemas.k8s import Taint, Toleration
from schemas.requests import OnSessionOpenRequest, PredicateRequest
from tests.plugins.taint_toleration import TaintToleration
from tests.plugins.test_taint_toleration import CASES


def test_node_tasks_are_given_as_task_infos() -> None:
    """``NodeInfo(Tasks=...)`` is a TypeError (Tasks is decoded lazily from TasksRaw): the
    builder takes the tasks and the node reads them back, keyed namespace/name."""
    running = testing.task("a", status=TaskStatus.Running, node="node-1", milli_cpu=1500)
    node = testing.node(tasks=[running])
    assert node.Tasks == {"default/a": running}
    assert node.Idle is not None and node.Idle.MilliCPU == 8000 - 1500
    assert testing.node().Tasks == {}
    ready = testing.node().State
    assert ready is not None and ready.Phase == NodePhase.Ready


def test_builders_fill_what_a_volcano_body_carries() -> None:
    task = testing.task("p", namespace="ns", job="train")
    assert (task.UID, task.Job, task.Status) == ("uid-ns-p", "ns/train", TaskStatus.Pending)
    assert task.Pod is not None and task.Pod.metadata.annotations == {
        testing.GROUP_ANNOTATION: "train"
    }
    job = testing.job("train", namespace="ns", tasks=[task], min_resources={"cpu": "2"})
    assert job.UID == "ns/train" and job.Tasks == {"uid-ns-p": task}
    assert job.PodGroup is not None and job.PodGroup.spec.min_resources == {"cpu": "2"}
    queue = testing.queue("q", capability={"cpu": "4"})
    assert queue.Queue is not None and queue.Queue.spec.capability == {"cpu": "4"}
    assert testing.task(BestEffort=True).BestEffort  # any field of the view, by name
    with pytest.raises(TypeError, match="Preemptable"):
        testing.task(Preemptable=True)  # a JobInfo field, not a TaskInfo one


def test_session_holds_the_snapshot_and_a_fixed_clock() -> None:
    at = datetime(2026, 8, 1, 10, tzinfo=UTC)
    ssn = testing.session(jobs=[testing.job()], nodes=[testing.node()], now=at, release="1.14")
    assert list(ssn.jobs) == ["default/job-1"] and list(ssn.nodes) == ["node-1"]
    assert ssn.now() == at and ssn.release.version == (1, 14) and ssn.has_snapshot
    assert ssn.total_resource.MilliCPU == 8000


def test_the_guides_unit_test_runs_and_passes() -> None:
    """docs/plugin-author-guide.md, "Unit tests": its example, run."""
    guide = (Path(__file__).resolve().parents[3] / "docs" / "plugin-author-guide.md").read_text()
    match = re.search(r"<!-- unit-test-example -->\n```python\n(.*?)```", guide, re.S)
    assert match, "the guide lost its unit test"
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), "plugin-author-guide.md", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 1
    for test in tests:
        test()


@pytest.mark.parametrize("release", testing.CAPTURED_RELEASES)
def test_every_captured_body_is_compact_and_decodes(release: str) -> None:
    verbs = testing.captured_verbs(release)
    assert {"onSessionOpen", "predicate", "prioritize", "preemptable"} <= set(verbs)
    for verb in verbs:
        body = testing.captured_body(release, verb)
        assert body == json.dumps(json.loads(body), separators=(",", ":")).encode()
    msgspec.json.decode(testing.captured_body(release, "onSessionOpen"), type=OnSessionOpenRequest)


def test_the_captured_releases_are_those_claimed_with_captures() -> None:
    assert testing.CAPTURED_RELEASES == ("1.14", "1.15")
    with pytest.raises(KeyError, match=r"no bodies captured from Volcano 1\.9 \(captured: 1\.14"):
        testing.captured_body("1.9", "predicate")
    with pytest.raises(KeyError, match=r"no captured jobEnqueued body for Volcano 1\.15"):
        testing.captured_body("1.15", "jobEnqueued")


def test_request_body_is_what_json_marshal_writes() -> None:
    body = testing.request_body(task=testing.task(), node=testing.node(labels={"a": "b"}))
    assert b" " not in body and body.startswith(b'{"task":{"UID":"uid-default-task-1"')
    request = msgspec.json.decode(body, type=PredicateRequest)
    assert request.node.Node is not None and request.node.Node.metadata.labels == {"a": "b"}


CONFIG = "volcanoVersion: '1.15'\ntiers: [{plugins: [{name: conformance}]}]\n"


def test_the_harness_answers_as_volcano_would_receive() -> None:
    harness = testing.Harness(CONFIG)
    opened = harness.answer("onSessionOpen", testing.captured_body("1.15", "onSessionOpen"))
    assert opened == testing.Answer(200, b"{}")
    system = testing.task("kube-proxy", namespace="kube-system", status=TaskStatus.Running)
    user = testing.task("worker", status=TaskStatus.Running)
    body = testing.request_body(evictor=testing.task("urgent"), evictees=[system, user])
    answer = harness.answer("preemptable", body)
    assert answer.status == 200
    assert [v["UID"] for v in answer.json()["victims"]] == [user.UID]  # conformance spares it
    assert harness.answer("predicate", b'{"task": 3}').status == 400


def test_the_harness_names_a_plugin_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(ConformancePlugin, "preemptable", broken)
    harness = testing.Harness(CONFIG)
    body = testing.request_body(evictor=testing.task(), evictees=[testing.task("b")])
    answer = harness.answer("preemptable", body)
    assert answer.status == 500 and "conformance" in answer.json()["error"]


def test_the_harness_refuses_an_unknown_verb_and_a_bad_configuration() -> None:
    with pytest.raises(KeyError, match="no verb 'predicates'"):
        testing.Harness(CONFIG).answer("predicates", b"{}")
    with pytest.raises(Exception, match="unknown plugin 'nope'"):
        testing.Harness("tiers: [{plugins: [{name: nope}]}]\n")


@pytest.mark.parametrize("name", CASES)
def test_taints_and_tolerations_from_the_builders_answer_as_volcanos_json(name: str) -> None:
    """Issue 47 item 9: the builders took no taints or tolerations, so an author built raw
    objects. ``node(taints=...)`` and ``task(tolerations=...)`` in Kubernetes' JSON shape give
    the answers the suite's taint-toleration plugin gives on Volcano's own JSON."""
    taints, tolerations, message = CASES[name]
    plugin = TaintToleration(Arguments({}, plugin="taint-toleration"))
    answer = plugin.predicate(testing.task(tolerations=tolerations), testing.node(taints=taints))
    expected = (
        None if message is None else FitError(message, StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
    )
    assert answer == expected


def test_taints_and_tolerations_take_the_typed_views_and_refuse_a_misspelt_key() -> None:
    node = testing.node(taints=[Taint(key="gpu", effect="NoSchedule")], unschedulable=True)
    assert node.Node is not None and node.Node.spec is not None
    assert node.Node.spec.taints == [Taint(key="gpu", effect="NoSchedule")]
    assert node.Node.spec.unschedulable
    task = testing.task(tolerations=[Toleration(key="gpu", operator="Exists")])
    assert task.Pod is not None and task.Pod.spec is not None
    assert task.Pod.spec.tolerations == [Toleration(key="gpu", operator="Exists")]
    # absent unless given, as Go's json.Marshal omits them
    assert testing.node().Node.spec is None  # type: ignore[union-attr]
    assert testing.task().Pod.spec.tolerations is None  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="Taint has no field 'kye'"):
        testing.node(taints=[{"kye": "gpu", "effect": "NoSchedule"}])
    with pytest.raises(msgspec.ValidationError, match=r"\$\.operator"):
        testing.task(tolerations=[{"key": "gpu", "operator": 1}])
    body = json.loads(testing.request_body(task=task, node=node))
    assert body["node"]["Node"]["spec"]["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]
    assert body["task"]["Pod"]["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
