"""Each verb's two answers compared (app/shadow/diff.py): what the shadow would do differently,
with each side's deciding plugin and reason read from its own session log."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from app.explain import SessionLog
from app.shadow.diff import compare
from plugins.api.base import FitError
from plugins.api.reasons import Reason
from schemas.api import TaskInfo

AT = datetime(2026, 11, 27, tzinfo=UTC)
JOB = {"job": {"UID": "u1", "Name": "train-42", "Namespace": "team-a", "Queue": "q"}}
TASK = {"UID": "t1", "Name": "train-42-0", "Namespace": "team-a", "Job": "u1"}
NODE = {"Name": "n1"}


def log(fill: Any = None) -> SessionLog:
    session = SessionLog(1, AT, 1000)
    if fill is not None:
        fill(session)
    return session


def quota_rejects(s: SessionLog) -> None:
    s.job_verdict("team-a/train-42", "q", "jobEnqueueable", "resourcequota", "reject",
                  Reason("quota-exceeded", "needs 8 CPU, 2 CPU left of team-a's quota"), AT)  # fmt: skip


def sla_permits(s: SessionLog) -> None:
    s.job_verdict("team-a/train-42", "q", "jobEnqueueable", "sla", "permit", None, AT)


def gang_not_ready(s: SessionLog) -> None:
    s.job_verdict("team-a/train-42", "q", "jobReady", "gang", "not ready",
                  Reason("too-few", "2 of 4 tasks ready"), AT)  # fmt: skip


def queue_overused(s: SessionLog) -> None:
    s.queue_verdict("q", "capacity", "overused", Reason("over", "q uses 12 of 10 CPU"), AT)


def node_filtered(s: SessionLog) -> None:
    s.predicate(TaskInfo(UID="t1", Name="train-42-0", Namespace="team-a"), "n1", "nodegroup",
                FitError("node n1 is not in group gpu"))  # fmt: skip


def victim_vetoed(s: SessionLog) -> None:
    evictor = TaskInfo(UID="t1", Name="train-42-0", Namespace="team-a")
    evictees = [TaskInfo(UID="v1", Name="web-1", Namespace="web"),
                TaskInfo(UID="v2", Name="web-2", Namespace="web")]  # fmt: skip
    s.evictions("preemptable", evictor, evictees,
                [("pdb", 1, {"v2": Reason("pdb", "web-pdb allows 0 disruptions")})], AT)  # fmt: skip


@dataclass
class Case:
    name: str
    verb: str
    body: dict[str, Any]
    live: dict[str, Any]
    shadow: dict[str, Any]
    live_log: Any = None
    shadow_log: Any = None
    expected: list[dict[str, Any]] = field(default_factory=list)


EVICT = {"evictor": TASK, "evictees": [{"UID": "v1", "Name": "web-1", "Namespace": "web"},
                                       {"UID": "v2", "Name": "web-2", "Namespace": "web"}]}  # fmt: skip
CASES = [
    Case("same answer: nothing", "jobEnqueueable", JOB, {"status": 1}, {"status": 1}),
    Case(
        "the shadow would hold an admitted job", "jobEnqueueable", JOB,
        {"status": 1}, {"status": -1}, sla_permits, quota_rejects,
        [{"verb": "jobEnqueueable", "job": "team-a/train-42", "change": "would hold it",
          "live": {"answer": "permit", "plugin": "sla"},
          "shadow": {"answer": "reject", "plugin": "resourcequota",
                     "reason": "needs 8 CPU, 2 CPU left of team-a's quota"}}],
    ),
    Case(
        "the shadow would admit a held job", "jobEnqueueable", JOB,
        {"status": -1}, {"status": 0}, quota_rejects, None,
        [{"verb": "jobEnqueueable", "job": "team-a/train-42",
          "change": "would leave it to Volcano's other plugins",
          "live": {"answer": "reject", "plugin": "resourcequota",
                   "reason": "needs 8 CPU, 2 CPU left of team-a's quota"},
          "shadow": {"answer": "abstain"}}],
    ),
    Case(
        "a job not ready in the shadow", "jobReady", JOB,
        {"status": True}, {"status": False}, None, gang_not_ready,
        [{"verb": "jobReady", "job": "team-a/train-42", "change": "would hold it as not ready",
          "live": {"answer": "ready"},
          "shadow": {"answer": "not ready", "plugin": "gang", "reason": "2 of 4 tasks ready"}}],
    ),
    Case(
        "a queue overused in the shadow", "queueOverused", {"queue": {"Name": "q"}},
        {"overused": False}, {"overused": True}, None, queue_overused,
        [{"verb": "queueOverused", "queue": "q", "change": "would find it overused",
          "live": {"answer": "ok"},
          "shadow": {"answer": "overused", "plugin": "capacity", "reason": "q uses 12 of 10 CPU"}}],
    ),
    Case(
        "a node filtered in the shadow", "predicate", {"task": TASK, "node": NODE},
        {"status": "", "code": 0}, {"status": "node n1 is not in group gpu", "code": 3},
        None, node_filtered,
        [{"verb": "predicate", "task": "team-a/train-42-0", "change": "would filter the node",
          "detail": "node n1", "live": {"answer": "fits"},
          "shadow": {"answer": "filtered", "plugin": "nodegroup",
                     "reason": "node n1 is not in group gpu"}}],
    ),
    Case(
        "the same pass in another shape: nothing", "predicate", {"task": TASK, "node": NODE},
        {"status": []}, {"status": ""},
    ),
    Case(
        "scores differ on one node", "prioritize", {"task": TASK, "nodes": [NODE]},
        {"nodeScore": {"n1": 10, "n2": 5}}, {"nodeScore": {"n1": 10, "n2": 7.5}},
        expected=[{"verb": "prioritize", "task": "team-a/train-42-0", "detail": "node n2",
                   "change": "would score the node 7.5",
                   "live": {"answer": "5"}, "shadow": {"answer": "7.5"}}],
    ),
    Case(
        "a victim spared by the shadow", "preemptable", EVICT,
        {"status": 1, "victims": EVICT["evictees"]},
        {"status": 1, "victims": EVICT["evictees"][:1]}, None, victim_vetoed,
        [{"verb": "preemptable", "task": "team-a/train-42-0", "detail": "victim web/web-2",
          "change": "would spare the victim", "live": {"answer": "offered"},
          "shadow": {"answer": "spared", "plugin": "pdb",
                     "reason": "web-pdb allows 0 disruptions"}}],
    ),
    Case(
        "an allocate error only in the shadow", "allocate", {"task": TASK}, {},
        {"errorMessage": "no room"},
        expected=[{"verb": "allocate", "task": "team-a/train-42-0",
                   "change": "would answer an error", "live": {"answer": "ok"},
                   "shadow": {"answer": "error", "reason": "no room"}}],
    ),
    Case("onSessionClose answers nothing to compare", "onSessionClose", {}, {}, {"x": 1}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compare(case: Case) -> None:
    found = compare(
        case.verb,
        json.dumps(case.body).encode(),
        json.dumps(case.live).encode(),
        json.dumps(case.shadow).encode(),
        (log(case.live_log), log(case.shadow_log)),
    )
    assert [d.describe() for d in found] == case.expected


def test_the_metric_label_is_the_deciding_plugin() -> None:
    [held] = compare(
        "jobEnqueueable", json.dumps(JOB).encode(), b'{"status":1}', b'{"status":-1}',
        (log(sla_permits), log(quota_rejects)),
    )  # fmt: skip
    assert held.plugin == "resourcequota"
    [scored] = compare(
        "prioritize", json.dumps({"task": TASK, "nodes": [NODE]}).encode(),
        b'{"nodeScore":{"n1":1}}', b'{"nodeScore":{"n1":2}}', (None, None),
    )  # fmt: skip
    assert scored.plugin == "none"
