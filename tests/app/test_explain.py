"""The decision record (app/explain.py) as the framework fills it, and GET /debug/explain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import httpx
import pytest

from app.config import CalderaConfig
from app.explain import DecisionRecord, SessionLog
from app.framework import Framework, Slot
from app.metrics import Metrics
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api.arguments import Arguments
from plugins.api.base import EvictResult, FitError, Plugin, StatusCode, Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.reasons import Explained, Reason
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo
from tests.app.doubles import SENDS_JOB_ENQUEUED, framework, task

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
FULL = Reason("insufficient-idle", "needs 40 CPU with 8 CPU already admitted, 12 CPU idle")
ENQUEUEABLE, READY, OVERUSED = (BY_VERB[v] for v in ("jobEnqueueable", "jobReady", "queueOverused"))
PREDICATE, PRIORITIZE, PREEMPTABLE = (
    BY_VERB[v] for v in ("predicate", "prioritize", "preemptable")
)


class Explains(Plugin):
    """Every job hook, answered with a reason; a predicate failing on the nodes named."""

    name = "explains"

    def __init__(self, vote: Vote = Vote.REJECT, unfit: Sequence[str] = ()) -> None:
        super().__init__(Arguments())
        self.vote, self.unfit = vote, set(unfit)

    def job_enqueueable(self, job: JobInfo) -> Explained[Vote]:
        return Explained(self.vote, FULL)

    def job_ready(self, job: JobInfo) -> Explained[bool]:
        return Explained(False, Reason("gang", "2 of 4 tasks ready"))

    def overused(self, queue: QueueInfo) -> Explained[bool]:
        return Explained(True, Reason("deserved", "allocated 10 CPU of 8 CPU deserved"))

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError("node(s) didn't match") if node.Name in self.unfit else None

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        return {"n1": 10.0, "n2": 50.0}.get(node.Name, 0.0)

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        spared = {t.UID: Reason("protected", f"{t.Name} runs until noon") for t in preemptees[1:]}
        return Explained((list(preemptees[:1]), Vote.PERMIT), vetoes=spared)


class Plain(Plugin):
    """Answers without a reason, as a plugin of its own may."""

    name = "plain"

    def __init__(self) -> None:
        super().__init__(Arguments())

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return Vote.PERMIT

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError("Insufficient cpu", StatusCode.UNSCHEDULABLE) if node.Name == "n3" else None


def recorded(*tiers: Sequence[tuple[str, Plugin]]) -> tuple[Framework, DecisionRecord, Metrics]:
    built = framework(*tiers, release=SENDS_JOB_ENQUEUED)
    record, metrics = DecisionRecord(), Metrics()
    log = record.open(1, T0)
    fw = Framework(
        [[Slot(s.option, s.plugin, s.hooks) for s in tier] for tier in built.tiers],
        SENDS_JOB_ENQUEUED, metrics, log, clock=lambda: T0,
    )  # fmt: skip
    return fw, record, metrics


JOB = JobInfo(UID="team-a/train-42", Name="train-42", Namespace="team-a", Queue="q1")
POD = TaskInfo(UID="p0", Name="train-42-0", Namespace="team-a", Job="team-a/train-42")
NODES = [NodeInfo(Name=n) for n in ("n1", "n2", "n3", "n4")]


def rejections(metrics: Metrics) -> dict[tuple[str, str, str], float]:
    return {
        (s.labels["plugin"], s.labels["verb"], s.labels["reason"]): s.value
        for metric in metrics.rejections.collect()
        for s in metric.samples
        if s.name.endswith("_total")
    }


def test_a_rejected_job_is_explained_by_the_plugin_that_rejected_it() -> None:
    fw, record, metrics = recorded([("plain", Plain()), ("overcommit", Explains())])
    assert fw.vote(ENQUEUEABLE, JOB) == Vote.REJECT
    explained = record.explain_job("team-a/train-42")
    assert explained is not None
    assert explained["summary"] == [
        "overcommit rejects job team-a/train-42 (jobEnqueueable): " + FULL.message
    ]
    [first, second] = explained["verdicts"]  # the one that holds the job back first
    assert first == {"verb": "jobEnqueueable", "plugin": "overcommit", "answer": "reject",
                     "code": "insufficient-idle", "message": FULL.message, "at": T0.isoformat()}  # fmt: skip
    assert second["plugin"] == "plain" and second["answer"] == "permit" and "code" not in second
    assert explained["session"] == {"session": 1, "openedAt": T0.isoformat()}
    assert rejections(metrics) == {("overcommit", "jobEnqueueable", "insufficient-idle"): 1.0}


def test_job_ready_and_the_queue_verdicts_are_part_of_the_job() -> None:
    fw, record, metrics = recorded([("gang", Explains())])
    assert fw.all_true(READY, JOB) is False
    assert fw.any_true(OVERUSED, QueueInfo(Name="q1")) is True
    explained = record.explain_job("team-a/train-42")
    assert explained is not None
    assert explained["summary"] == [
        "gang holds back job team-a/train-42 (jobReady): 2 of 4 tasks ready",
        "gang finds overused queue q1 (queueOverused): allocated 10 CPU of 8 CPU deserved",
    ]
    assert explained["queue"] == "q1" and explained["queueVerdicts"][0]["answer"] == "overused"
    assert rejections(metrics) == {
        ("gang", "jobReady", "gang"): 1.0,
        ("gang", "queueOverused", "deserved"): 1.0,
    }


def test_predicate_failures_aggregate_by_plugin_and_reason_with_node_counts() -> None:
    fw, record, metrics = recorded(
        [("plain", Plain()), ("nodegroup", Explains(unfit=["n1", "n2", "n4"]))]
    )
    for node in NODES:
        fw.first_failure(PREDICATE, POD, node)
    fw.first_failure(PREDICATE, POD, NODES[0])  # asked again: one node still
    explained = record.explain_task("team-a/train-42-0")
    assert explained is not None
    summary = (
        "0/4 nodes are available: 3 nodegroup: node(s) didn't match, 1 plain: Insufficient cpu"
    )
    assert explained["summary"] == [summary]
    assert explained["predicate"]["failures"][0] == {
        "plugin": "nodegroup", "reason": "node(s) didn't match", "nodes": 3}  # fmt: skip
    job = record.explain_job("team-a/train-42")  # a task no node fits holds its job back
    assert job is not None and job["summary"] == [f"task team-a/train-42-0: {summary}"]
    assert rejections(metrics) == {
        ("nodegroup", "predicate", "unschedulable_and_unresolvable"): 4.0,
        ("plain", "predicate", "unschedulable"): 1.0,
    }


def test_a_node_that_fits_later_in_the_session_is_no_longer_a_failure() -> None:
    unfit = Explains(unfit=["n1"])
    fw, record, _ = recorded([("nodegroup", unfit)])
    fw.first_failure(PREDICATE, POD, NODES[0])
    unfit.unfit = set()
    fw.first_failure(PREDICATE, POD, NODES[0])
    explained = record.explain_task("team-a/train-42-0")
    assert explained is not None and explained["predicate"]["fit"] == 1


def test_each_plugin_best_scored_node() -> None:
    fw, record, _ = recorded([("binpack", Explains())])
    fw.score_sum(PRIORITIZE, POD, NODES)
    explained = record.explain_task("team-a/train-42-0")
    assert explained is not None
    assert explained["scores"] == [{"plugin": "binpack", "bestNode": "n2", "score": 50.0}]


def test_vetoed_victims_are_explained_for_the_preemptor_and_for_themselves() -> None:
    fw, record, metrics = recorded([("min-runtime", Explains())])
    evictees = [task("v1"), task("v2"), task("v3")]
    decision = fw.victims(PREEMPTABLE, POD, evictees)
    assert [v.UID for v in decision.victims] == ["v1"]
    preemptor = record.explain_task("team-a/train-42-0")
    assert preemptor is not None
    [eviction] = preemptor["evictions"]
    assert (eviction["evictees"], eviction["victims"], eviction["vetoed"]) == (3, 1, 2)
    assert eviction["vetoes"][0] == {"task": "default/v2", "code": "protected",
                                     "message": "v2 runs until noon"}  # fmt: skip
    assert "min-runtime vetoed 2 of 3 evictees (preemptable)" in preemptor["summary"][0]
    spared = record.explain_task("default/v3")
    assert spared is not None
    assert spared["summary"] == [
        "min-runtime spares it from team-a/train-42-0 (preemptable): v3 runs until noon"
    ]
    # once per answer and reason code, not per evictee
    assert rejections(metrics) == {("min-runtime", "preemptable", "protected"): 1.0}


def test_every_spared_evictee_finds_who_spared_it_however_many_were_vetoed() -> None:
    fw, record, _ = recorded([("min-runtime", Explains())])
    evictees = [task(f"v{i}") for i in range(30)]
    fw.victims(PREEMPTABLE, POD, evictees)
    preemptor = record.explain_task("team-a/train-42-0")
    assert preemptor is not None
    [eviction] = preemptor["evictions"]
    assert (eviction["vetoed"], len(eviction["vetoes"])) == (29, 20)  # shown: the first 20
    last = record.explain_task("default/v29")
    assert last is not None
    assert last["summary"] == [
        "min-runtime spares it from team-a/train-42-0 (preemptable): v29 runs until noon"
    ]


def test_vetoes_take_entries_and_a_full_session_keeps_only_their_count() -> None:
    record = DecisionRecord(entries=10)
    log = record.open(1, T0)
    assert log is not None
    built = framework([("min-runtime", Explains())], release=SENDS_JOB_ENQUEUED)
    fw = Framework(built.tiers, SENDS_JOB_ENQUEUED, Metrics(), log, clock=lambda: T0)
    evictees = [task(f"v{i}") for i in range(4)]
    for _ in range(3):  # the same question again replaces the last, entries and all
        fw.victims(PREEMPTABLE, POD, evictees)
        assert (log.size, log.dropped) == (1 + 3 + 3, 0)  # the preemptor, 3 names, 3 vetoes
    other = TaskInfo(UID="p1", Name="train-42-1", Namespace="team-a", Job="team-a/train-42")
    fw.victims(PREEMPTABLE, other, evictees)  # its entry, then room for 2 of its 3 vetoes
    assert (log.size, log.dropped) == (10, 1)
    explained = record.explain_task("team-a/train-42-1")
    assert explained is not None
    [eviction] = explained["evictions"]
    assert (eviction["vetoed"], [v["task"] for v in eviction["vetoes"]]) == (
        3, ["default/v1", "default/v2"],
    )  # fmt: skip


def test_a_volcano_job_is_found_by_its_name_without_the_podgroup_uid() -> None:
    fw, record, _ = recorded([("overcommit", Explains())])
    podgroup = "train-42-0b5e3c1a-9d4f-4c1b-8e2a-7f6d5c4b3a21"
    fw.vote(ENQUEUEABLE, JobInfo(Name=podgroup, Namespace="team-a", Queue="q1"))
    explained = record.explain_job("team-a/train-42")
    assert explained is not None and explained["job"] == f"team-a/{podgroup}"
    assert record.explain_job("team-a/train-4") is None  # a prefix is not a name


def test_a_job_no_plugin_holds_back_says_so() -> None:
    fw, record, _ = recorded([("plain", Plain())])
    fw.vote(ENQUEUEABLE, JOB)
    explained = record.explain_job("team-a/train-42")
    assert explained is not None
    assert explained["summary"] == ["no plugin hosted by Caldera holds job team-a/train-42 back"]


def test_the_record_is_bounded_in_sessions_and_entries() -> None:
    record = DecisionRecord(sessions=2, entries=3)
    for number in (1, 2, 3):
        log = record.open(number, T0)
        assert isinstance(log, SessionLog)
        for i in range(5):
            log.job_verdict(f"ns/j{i}", "q", "jobEnqueueable", "p", "reject", None, T0)
    kept = record.describe()
    assert [s["session"] for s in kept["sessions"]] == [2, 3]
    assert kept["sessions"][-1]["jobs"] == 3 and kept["sessions"][-1]["dropped"] == 2
    assert record.explain_job("ns/j4") is None
    assert DecisionRecord(sessions=0).open(1, T0) is None


def test_the_newest_session_that_decided_about_the_job_answers() -> None:
    record = DecisionRecord()
    first = record.open(1, T0)
    assert first is not None
    first.job_verdict("ns/j", "q", "jobEnqueueable", "sla", "reject", None, T0)
    record.open(2, T0)  # a session that never asked about ns/j
    explained = record.explain_job("ns/j")
    assert explained is not None and explained["session"]["session"] == 1


# --- GET /debug/explain -----------------------------------------------------------------------


OVERCOMMIT_CONFIG = {"tiers": [{"plugins": [{"name": "overcommit"}]}]}


async def get(app: object, query: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://caldera") as client:
        return await client.get(f"/debug/explain{query}")


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("", "give exactly one of job=<namespace>/<name> or task=<namespace>/<pod>"),
        ("?job=a/b&task=a/c", "give exactly one of"),
        ("?job=train-42", "job must be <namespace>/<name>, got 'train-42'"),
        ("?task=a/b/c", "task must be <namespace>/<name>"),
    ],
)
async def test_a_bad_question_is_a_400_with_a_sentence(query: str, error: str) -> None:
    response = await get(
        create_app(ServeOptions.of(CalderaConfig.model_validate(OVERCOMMIT_CONFIG))), query
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)


@pytest.mark.parametrize(
    ("opened", "query", "error"),
    [
        (0, "?job=ns1/x", "no decision about job ns1/x: no session has opened yet (Caldera"
         " records decisions per session, from Volcano's first onSessionOpen on)"),
        (1, "?job=ns1/x", "no decision about job ns1/x in the 1 session kept"),
        (2, "?task=ns1/p", "no decision about task ns1/p in the 2 sessions kept"),
    ],
    ids=["before any session", "one session", "two sessions"],
)  # fmt: skip
async def test_nothing_recorded_is_a_404_that_says_what_is_kept(
    opened: int, query: str, error: str
) -> None:
    app = create_app(ServeOptions.of(CalderaConfig.model_validate(OVERCOMMIT_CONFIG)))
    for number in range(1, opened + 1):
        app.runtime.record.open(number, datetime(2026, 1, 1, tzinfo=UTC))
    response = await get(app, query)
    assert response.status_code == 404
    assert response.json()["error"] == error
    assert len(response.json()["record"]["sessions"]) == opened


async def test_a_record_that_is_off_says_so() -> None:
    off = CalderaConfig.model_validate({**OVERCOMMIT_CONFIG, "explainSessions": 0})
    response = await get(create_app(ServeOptions.of(off)), "?task=a/b")
    assert response.json()["error"] == "the decision record is off (explainSessions: 0)"


def test_the_plugin_guides_explained_example_prints_what_the_guide_says() -> None:
    """docs/plugin-author-guide.md, "Saying why": its plugin, run, gives its printed line."""
    import re
    from pathlib import Path

    from plugins.api.base import Session

    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugin-author-guide.md").read_text()
    match = re.search(r"<!-- explained-plugin -->\n```python\n(.*?)```", guide, re.S)
    assert match, "the guide lost its explained plugin"
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), "plugin-author-guide.md", "exec"), namespace)
    plugin = namespace["BusinessHours"](Arguments())  # type: ignore[operator]
    plugin.on_session_open(Session(now=lambda: T0))  # 10:00 UTC
    fw, record, metrics = recorded([("business-hours", plugin)])
    night = JobInfo(UID="team-a/train-42", Name="train-42", Namespace="team-a", Queue="night")
    assert fw.vote(ENQUEUEABLE, night) == Vote.REJECT
    explained = record.explain_job("team-a/train-42")
    assert explained is not None
    printed = re.search(r"`caldera explain` then prints `(.*?)`", guide, re.S)
    assert printed, "the guide lost the line it says caldera explain prints"
    assert explained["summary"] == [" ".join(printed.group(1).split())]
    assert rejections(metrics) == {("business-hours", "jobEnqueueable", "working-hours"): 1.0}
