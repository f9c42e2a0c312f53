"""The combination rules of pkg/scheduler/framework/session_plugins.go, with plugin doubles.

Case names follow session_plugins_test.go where upstream has them (the UnifiedEvictable tests
share Preemptable's tier walk and intersection code)."""

from __future__ import annotations

import msgspec
import pytest

from app.errors import PluginFailure, RequestError
from plugins.api.arguments import Arguments
from plugins.api.base import FitError, Plugin, StatusCode, Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.release import Release
from schemas.api import JobInfo, NodeInfo, QueueInfo, TaskInfo
from tests.app.doubles import Answers, Evicts, Raises, Votes, framework, task

ABC = [task("a"), task("b"), task("c")]


class ReadsNodeTasks(Plugin):
    name = "reads-node-tasks"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError("full") if len(node.Tasks or {}) > 10 else None


PREDICATE, PRIORITIZE = BY_VERB["predicate"], BY_VERB["prioritize"]
ENQUEUEABLE, ENQUEUED = BY_VERB["jobEnqueueable"], BY_VERB["jobEnqueued"]
OVERUSED, READY = BY_VERB["queueOverused"], BY_VERB["jobReady"]


def uids(tasks: object) -> list[str]:
    return [t.UID for t in tasks]  # type: ignore[attr-defined]


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
class TestEvictable:
    def test_tier_walk_and_intersection(self, hook: str) -> None:
        fw = framework([("p1", Evicts(["a", "b"])), ("p2", Evicts(["b", "c"]))])
        decision = fw.victims(BY_VERB[hook], task("x"), ABC)
        assert uids(decision.victims) == ["b"] and decision.decided

    def test_abstain_skipped(self, hook: str) -> None:
        fw = framework([("abstainer", Evicts(None, Vote.ABSTAIN)), ("permitter", Evicts(["a"]))])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == ["a"]

    def test_empty_candidates_blocks_tier(self, hook: str) -> None:
        fallback = Evicts(["a"])
        permitter = Evicts(["a"])
        fw = framework(
            [("blocker", Evicts([])), ("permitter", permitter)], [("fallback", fallback)]
        )
        decision = fw.victims(BY_VERB[hook], task("x"), ABC)
        assert uids(decision.victims) == ["a"]
        assert permitter.calls == 0 and fallback.calls == 1

    def test_no_plugins_returns_nil(self, hook: str) -> None:
        decision = framework([]).victims(BY_VERB[hook], task("x"), ABC)
        assert decision.victims == [] and not decision.decided

    def test_blocked_everywhere_is_a_decision_without_victims(self, hook: str) -> None:
        decision = framework([("blocker", Evicts([]))]).victims(BY_VERB[hook], task("x"), ABC)
        assert decision.victims == [] and decision.decided

    def test_reject_with_list_counts_as_a_decision(self, hook: str) -> None:
        fw = framework([("rejecter", Evicts(["c"], Vote.REJECT))])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == ["c"]

    def test_empty_intersection_quirk_restarts_the_tier(self, hook: str) -> None:
        fw = framework([("a", Evicts(["a"])), ("b", Evicts(["b"])), ("c", Evicts(["b", "c"]))])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == ["b", "c"]

    def test_intersection_keeps_first_order_and_objects(self, hook: str) -> None:
        fw = framework([("p1", Evicts(["c", "a"])), ("p2", Evicts(["a", "c"]))])
        victims = fw.victims(BY_VERB[hook], task("x"), ABC).victims
        assert uids(victims) == ["c", "a"]
        assert victims[0] is ABC[2]

    @pytest.mark.parametrize(
        ("first", "then", "expected"),
        [
            pytest.param(["a"], ["a", "a"], ["a", "a"], id="a candidate twice keeps it twice"),
            pytest.param(["a", "a"], ["a"], ["a", "a"], id="a victim twice stays twice"),
            pytest.param(["a", "a"], ["a", "a"], ["a"] * 4, id="twice by twice is four"),
            pytest.param(["a", "b"], ["b", "b", "c"], ["b", "b"], id="duplicates beside others"),
        ],
    )
    def test_duplicate_uids_multiply_in_the_intersection(
        self, hook: str, first: list[str], then: list[str], expected: list[str]
    ) -> None:
        fw = framework([("p1", Evicts(first)), ("p2", Evicts(then))])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == expected

    def test_first_deciding_tier_wins(self, hook: str) -> None:
        later = Evicts(["c"])
        fw = framework([("p1", Evicts(["a"]))], [("p2", later)])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == ["a"]
        assert later.calls == 0

    def test_flag_off_means_not_consulted(self, hook: str) -> None:
        flag = "enablePreemptable" if hook == "preemptable" else "enableReclaimable"
        off = Evicts(["a"])
        fw = framework([("off", off, {flag: False}), ("on", Evicts(["b"]))])
        assert uids(fw.victims(BY_VERB[hook], task("x"), ABC).victims) == ["b"]
        assert off.calls == 0


class TestJobEnqueueable:
    job = JobInfo(UID="ns/j")

    @pytest.mark.parametrize(
        ("tiers", "expected"),
        [
            ([[Vote.ABSTAIN]], Vote.ABSTAIN),
            ([[Vote.PERMIT, Vote.ABSTAIN]], Vote.PERMIT),
            ([[Vote.PERMIT, Vote.REJECT]], Vote.REJECT),  # a Reject in the same tier wins
            ([[Vote.REJECT, Vote.PERMIT]], Vote.REJECT),
            ([[Vote.PERMIT], [Vote.REJECT]], Vote.PERMIT),  # a Permit hides later tiers
            ([[Vote.ABSTAIN], [Vote.REJECT]], Vote.REJECT),
            ([[Vote.ABSTAIN], [Vote.ABSTAIN, Vote.PERMIT]], Vote.PERMIT),
            ([], Vote.ABSTAIN),
        ],
        ids=[
            "all abstain leaves it to Volcano",
            "permit",
            "reject after permit in the same tier",
            "reject first",
            "permit tier short-circuits later reject",
            "reject in a later tier",
            "permit in a later tier",
            "no plugins",
        ],
    )
    def test_vote(self, tiers: list[list[Vote]], expected: Vote) -> None:
        fw = framework(
            *[[(f"v{t}{i}", Votes(v)) for i, v in enumerate(tier)] for t, tier in enumerate(tiers)]
        )
        assert fw.vote(ENQUEUEABLE, self.job) == expected

    def test_enqueueable_flag_gates_both_hooks(self) -> None:
        plugin = Votes(Vote.REJECT)
        fw = framework([("v", plugin, {"enableJobEnqueued": False})])
        assert fw.vote(ENQUEUEABLE, self.job) == Vote.ABSTAIN
        fw.notify(ENQUEUED, self.job)
        assert plugin.enqueued == []

    def test_enqueued_calls_every_plugin_in_every_tier(self) -> None:
        first, second = Votes(Vote.PERMIT), Votes(Vote.PERMIT)
        framework([("a", first)], [("b", second)]).notify(ENQUEUED, self.job)
        assert first.enqueued == ["ns/j"] and second.enqueued == ["ns/j"]


class TestOtherHooks:
    def setup_method(self) -> None:
        Answers.calls.clear()

    def test_predicate_first_error_in_order(self) -> None:
        fail = FitError("no", StatusCode.UNSCHEDULABLE)
        fw = framework(
            [("ok", Answers(label="ok")), ("fail", Answers(fit=fail, label="fail"))],
            [("later", Answers(fit=FitError("later"), label="later"))],
        )
        assert fw.first_failure(PREDICATE, task("t"), NodeInfo(Name="n")) is fail
        assert Answers.calls == ["predicate:ok", "predicate:fail"]

    def test_predicate_no_plugins_fits(self) -> None:
        assert framework([]).first_failure(PREDICATE, task("t"), NodeInfo(Name="n")) is None

    def test_node_order_sums_across_tiers(self) -> None:
        fw = framework(
            [("a", Answers(scores={"n1": 1.5, "n2": -2}))], [("b", Answers(scores={"n1": 10}))]
        )
        assert fw.score_sum(PRIORITIZE, task("t"), []) == {"n1": 11.5, "n2": -2}

    def test_node_order_refuses_non_finite_scores(self) -> None:
        fw = framework([("nan", Answers(scores={"n1": float("nan")}))])
        with pytest.raises(PluginFailure, match="nan"):
            fw.score_sum(PRIORITIZE, task("t"), [])

    def test_overused_or(self) -> None:
        fw = framework([("a", Answers(label="a")), ("b", Answers(overused_=True, label="b"))])
        assert fw.any_true(OVERUSED, QueueInfo(Name="q")) is True
        assert framework([("a", Answers())]).any_true(OVERUSED, QueueInfo(Name="q")) is False

    def test_job_ready_and_default_true(self) -> None:
        assert framework([]).all_true(READY, JobInfo()) is True
        fw = framework(
            [("a", Answers(label="a")), ("b", Answers(ready=False, label="b"))],
            [("c", Answers(label="c"))],
        )
        assert fw.all_true(READY, JobInfo()) is False
        assert Answers.calls == ["job_ready:a", "job_ready:b"]

    def test_job_ready_flag(self) -> None:
        fw = framework([("b", Answers(ready=False), {"enableJobReady": False})])
        assert fw.all_true(READY, JobInfo()) is True

    @pytest.mark.parametrize("hook", ["allocate", "deallocate"])
    def test_events_call_every_handler_and_return_first_error(self, hook: str) -> None:
        fw = framework(
            [("a", Answers(label="a")), ("b", Answers(error="first", label="b"))],
            [("c", Answers(error="second", label="c"))],
        )
        assert fw.event(BY_VERB[hook], task("t")) == "first"
        assert Answers.calls == [f"{hook}:a", f"{hook}:b", f"{hook}:c"]

    def test_plugin_exception_names_plugin_and_verb(self) -> None:
        fw = framework([("raises", Raises(Arguments()))])
        with pytest.raises(PluginFailure) as info:
            fw.all_true(READY, JobInfo())
        assert info.value.plugin == "raises" and info.value.verb == "jobReady"
        assert "boom" in str(info.value)

    def test_malformed_part_decoded_when_a_plugin_reads_it_is_the_callers_fault(self) -> None:
        """NodeInfo.Tasks stays raw until a plugin reads it: a wrong type found then is a 400
        naming the plugin, not a 500 blaming it."""
        node = msgspec.json.decode(
            b'{"Name": "n1", "Tasks": {"p": {"Priority": "x"}}}', type=NodeInfo
        )
        fw = framework([("reads-node-tasks", ReadsNodeTasks(Arguments()))])
        with pytest.raises(RequestError, match="reads-node-tasks reads in predicate") as info:
            fw.first_failure(PREDICATE, task("t"), node)
        assert info.value.status == 400 and "Priority" in str(info.value)

    def test_plugin_listed_twice_answers_with_the_last_instance(self) -> None:
        first, last = Votes(Vote.REJECT), Votes(Vote.PERMIT)
        fw = framework([("votes", first)], [("votes", last)])
        assert fw.vote(ENQUEUEABLE, JobInfo()) == Vote.PERMIT


class TestAdmissionBeforeJobEnqueued:
    """Before 1.16 no jobEnqueued call follows an admission: the vote tells the plugins."""

    job = JobInfo(UID="ns/j")

    @pytest.mark.parametrize(
        ("votes", "told"),
        [
            ([Vote.PERMIT, Vote.ABSTAIN], ["ns/j"]),
            ([Vote.ABSTAIN], ["ns/j"]),
            ([Vote.PERMIT, Vote.REJECT], []),
        ],
        ids=["permit admits", "abstain admits", "reject admits nothing"],
    )
    def test_vote_tells_every_plugin_when_not_rejected(
        self, votes: list[Vote], told: list[str]
    ) -> None:
        plugins = [Votes(v) for v in votes]
        fw = framework([(f"v{i}", p) for i, p in enumerate(plugins)], release=Release(1, 15))
        fw.vote(ENQUEUEABLE, self.job)
        assert all(p.enqueued == told for p in plugins)

    def test_from_1_16_the_vote_tells_nobody(self) -> None:
        plugin = Votes(Vote.PERMIT)
        framework([("v", plugin)], release=Release(1, 16)).vote(ENQUEUEABLE, self.job)
        assert plugin.enqueued == []
