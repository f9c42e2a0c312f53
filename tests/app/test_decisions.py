"""The typed decision stream (app/decisions.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.decisions import EVENTS, DecisionSink, Stream
from app.explain import DecisionRecord
from app.metrics import Metrics
from app.outcome import Outcome
from plugins.api.base import FitError, Vote
from plugins.api.extension_points import BY_VERB
from schemas.api import JobInfo, NodeInfo
from tests.app.doubles import Answers, Votes, framework, task

OUTCOME_WORDS = [
    # (outcome, metrics label, what /debug/explain says)
    (Outcome.NOT_READY, "not_ready", "not ready"),
    (Outcome.READY, "ready", "ready"),
    (Outcome.REJECT, "reject", "reject"),
    (Outcome.OVERUSED, "overused", "overused"),
    (Outcome.PERMIT, "permit", "permit"),
]


@pytest.mark.parametrize(
    ("outcome", "label", "said"), OUTCOME_WORDS, ids=[o[1] for o in OUTCOME_WORDS]
)
def test_one_outcome_two_spellings_kept(outcome: Outcome, label: str, said: str) -> None:
    """The metrics label and the explain word stay what they were before the enum."""
    assert (outcome.value, outcome.said) == (label, said)


class Counts(DecisionSink):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Outcome]] = []

    def answered(self, plugin: str, verb: str, outcome: Outcome) -> None:
        self.seen.append((plugin, verb, outcome))


def test_an_event_is_bound_to_the_subscribers_that_listen() -> None:
    one, two = Counts(), Counts()
    alone = Stream([one, DecisionSink()])
    assert alone.answered == one.answered  # bound directly: no fan-out call between
    both = Stream([one, two])
    both.answered("p", "predicate", Outcome.PASS)
    assert one.seen == two.seen == [("p", "predicate", Outcome.PASS)]
    nobody = Stream([])
    for event in EVENTS:  # every event is a no-op when nobody listens
        assert getattr(nobody, event).__func__ is vars(DecisionSink)[event]


def test_metrics_record_and_events_hear_the_same_outcome() -> None:
    metrics = Metrics()
    log = DecisionRecord().open(1, datetime(2026, 11, 27, tzinfo=UTC))
    assert log is not None
    fw = framework([("ready", Answers(ready=False))])
    fw = type(fw)(fw.tiers, fw.release, metrics, log)
    job = JobInfo(UID="j", Name="j", Namespace="ns", Queue="q")
    assert fw.all_true(BY_VERB["jobReady"], job) is False
    labels = {"plugin": "ready", "verb": "jobReady", "outcome": "not_ready"}
    assert metrics.registry.get_sample_value("caldera_plugin_decisions_total", labels) == 1
    verdict = log.jobs["ns/j"][("jobReady", "ready")]
    assert verdict.answer is Outcome.NOT_READY and verdict.describe()["answer"] == "not ready"


def test_the_vote_is_told_as_its_outcome() -> None:
    metrics = Metrics()
    fw = framework([("votes", Votes(Vote.REJECT))])
    fw = type(fw)(fw.tiers, fw.release, metrics)
    fw.vote(BY_VERB["jobEnqueueable"], JobInfo(UID="j", Name="j", Namespace="ns"))
    labels = {"plugin": "votes", "verb": "jobEnqueueable", "outcome": "reject"}
    assert metrics.registry.get_sample_value("caldera_plugin_decisions_total", labels) == 1
    fails = framework([("fits", Answers(fit=FitError("full")))])
    fails = type(fails)(fails.tiers, fails.release, metrics)
    fails.first_failure(BY_VERB["predicate"], task("t"), NodeInfo(Name="n"))
    labels = {"plugin": "fits", "verb": "predicate", "outcome": "fail"}
    assert metrics.registry.get_sample_value("caldera_plugin_decisions_total", labels) == 1
