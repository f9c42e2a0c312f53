"""sla: ``pkg/scheduler/plugins/sla/sla_test.go`` (TestSlaPlugin) plus the edge cases of the
reference (plugins-part1.md §2): argument parsing, the deadline boundary and per-job overrides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import Explained, Reason, answer_of
from plugins.sla import SlaPlugin, parse_global_waiting_time
from schemas.api import JobInfo, PodGroup, TaskInfo

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
T0 = datetime(2026, 8, 1, 10, 0, 0, tzinfo=UTC)


def make_plugin(arguments: dict[str, Any], now: datetime = T0) -> SlaPlugin:
    plugin = SlaPlugin(Arguments(arguments, plugin="sla"))
    plugin.on_session_open(Session(now=lambda: now))
    return plugin


def make_job(
    name: str = "job1",
    tasks: int = 0,
    waiting_time: int | None = None,
    created: datetime | None = None,
) -> JobInfo:
    return JobInfo(
        Name=name,
        Namespace="default",
        Tasks={str(i): TaskInfo(Name=f"{name}-{i}") for i in range(tasks)},
        WaitingTime=waiting_time,
        CreationTimestamp=created,
        PodGroup=PodGroup(),
    )


# --- TestSlaPlugin ----------------------------------------------------------------------------
# job1: 3 tasks, no WaitingTime; job2: 2 tasks, WaitingTime 1h; both with a zero
# CreationTimestamp (Go's zero time, which the extender marshals as null).
# expected_order is ssn.JobOrderFn(job1, job2) (in-tree only; ported through compare_jobs);
# expected_enqueueable is ssn.JobEnqueueable(job1), true unless some plugin Rejects.


@pytest.mark.parametrize(
    ("arguments", "expected_order", "expected_vote", "expected_enqueueable"),
    [
        ({"sla-waiting-time": "3m"}, True, Vote.PERMIT, True),
        ({"sla-waiting-time": 1}, False, Vote.ABSTAIN, True),
        ({}, False, Vote.ABSTAIN, True),
    ],
    ids=["sla normal placement", "sla error type placement", "none placement"],
)
def test_sla_plugin(
    arguments: dict[str, Any], expected_order: bool, expected_vote: Vote, expected_enqueueable: bool
) -> None:
    job1 = make_job("job1", tasks=3)
    job2 = make_job("job1", tasks=2, waiting_time=HOUR)
    plugin = make_plugin(arguments)

    # Session.JobOrderFn: l goes first exactly when the compare is negative (UIDs equal, so the
    # creation-time/UID fallback answers false on a tie).
    assert (plugin.compare_jobs(job1, job2) < 0) is expected_order
    vote = answer_of(plugin.job_enqueueable(job1))
    assert vote == expected_vote
    assert (vote >= 0) is expected_enqueueable


# --- the sla-waiting-time argument ------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, None),
        ({"sla-waiting-time": "3m"}, 3 * MINUTE),
        ({"sla-waiting-time": "1h2m3s4ms5µs6ns"}, HOUR + 2 * MINUTE + 3 * SECOND + 4_005_006),
        ({"sla-waiting-time": "1.5h"}, 90 * MINUTE),
        ({"sla-waiting-time": "1ns"}, 1),
        ({"sla-waiting-time": 10}, None),
        ({"sla-waiting-time": 1.5}, None),
        ({"sla-waiting-time": True}, None),
        ({"sla-waiting-time": None}, None),
        ({"sla-waiting-time": "abc"}, None),
        ({"sla-waiting-time": "600"}, None),
        ({"sla-waiting-time": ""}, None),
        ({"sla-waiting-time": "0"}, None),
        ({"sla-waiting-time": "0s"}, None),
        ({"sla-waiting-time": "-1m"}, None),
    ],
    ids=[
        "absent",
        "3m",
        "every unit",
        "fraction",
        "one nanosecond",
        "int",
        "float",
        "bool",
        "null",
        "invalid string",
        "unitless",
        "empty",
        "bare zero",
        "zero",
        "negative",
    ],
)
def test_global_waiting_time_argument(arguments: dict[str, Any], expected: int | None) -> None:
    assert parse_global_waiting_time(Arguments(arguments)) == expected
    # An invalid global means "no SLA": a job without its own waiting time abstains even when
    # it is centuries old; a valid one makes that job enqueueable.
    vote = answer_of(
        make_plugin(arguments).job_enqueueable(make_job(created=T0 - timedelta(days=3650)))
    )
    assert vote == (Vote.ABSTAIN if expected is None else Vote.PERMIT)


# --- the deadline ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "waiting_time", "elapsed", "expected"),
    [
        ({"sla-waiting-time": "3m"}, None, timedelta(minutes=3) - timedelta(microseconds=1),
         Vote.ABSTAIN),
        ({"sla-waiting-time": "3m"}, None, timedelta(minutes=3), Vote.PERMIT),
        ({"sla-waiting-time": "3m"}, None, timedelta(minutes=3, microseconds=1), Vote.PERMIT),
        ({"sla-waiting-time": "3m"}, None, timedelta(0), Vote.ABSTAIN),
        ({"sla-waiting-time": "3m"}, None, -timedelta(hours=1), Vote.ABSTAIN),
        ({"sla-waiting-time": "3m1ns"}, None, timedelta(minutes=3), Vote.ABSTAIN),
        ({"sla-waiting-time": "1h"}, MINUTE, timedelta(minutes=2), Vote.PERMIT),
        ({"sla-waiting-time": "1m"}, HOUR, timedelta(minutes=2), Vote.ABSTAIN),
        ({"sla-waiting-time": "bad"}, MINUTE, timedelta(minutes=2), Vote.PERMIT),
        ({}, MINUTE, timedelta(minutes=2), Vote.PERMIT),
        ({}, MINUTE, timedelta(seconds=59), Vote.ABSTAIN),
        ({}, None, timedelta(days=365), Vote.ABSTAIN),
    ],
    ids=[
        "one microsecond before the deadline abstains",
        "exactly at the deadline permits",
        "after the deadline permits",
        "just created abstains",
        "created in the future abstains",
        "nanosecond precision before the deadline",
        "job waiting time shorter than global wins",
        "job waiting time longer than global wins",
        "job waiting time with an invalid global",
        "job waiting time without a global, past",
        "job waiting time without a global, before",
        "no waiting time anywhere abstains",
    ],
)  # fmt: skip
def test_deadline(
    arguments: dict[str, Any], waiting_time: int | None, elapsed: timedelta, expected: Vote
) -> None:
    plugin = make_plugin(arguments, now=T0 + elapsed)
    assert (
        answer_of(plugin.job_enqueueable(make_job(waiting_time=waiting_time, created=T0)))
        == expected
    )


def test_zero_creation_timestamp_is_always_past_the_deadline() -> None:
    # time.Since(zero time) saturates at the largest Duration; even a 290-year SLA has passed.
    plugin = make_plugin({"sla-waiting-time": "2540400h"})
    assert answer_of(plugin.job_enqueueable(make_job(created=None))) == Vote.PERMIT
    assert (
        answer_of(plugin.job_enqueueable(make_job(created=datetime(1, 1, 1, tzinfo=UTC))))
        == Vote.PERMIT
    )


def test_never_rejects_and_follows_the_injected_clock() -> None:
    clock = [T0]
    plugin = SlaPlugin(Arguments({"sla-waiting-time": "10m"}))
    plugin.on_session_open(Session(now=lambda: clock[0]))
    job = make_job(created=T0)
    votes = []
    for minutes in (0, 5, 9, 10, 11):
        clock[0] = T0 + timedelta(minutes=minutes)
        votes.append(answer_of(plugin.job_enqueueable(job)))
    assert votes == [Vote.ABSTAIN] * 3 + [Vote.PERMIT] * 2


def test_job_decoded_from_volcano_json() -> None:
    # WaitingTime is a Go *time.Duration: integer nanoseconds, or null.
    body = (
        b'{"UID":"u1","Name":"j","Namespace":"ns","WaitingTime":300000000000,'
        b'"CreationTimestamp":"2026-08-01T10:00:00Z","PodGroup":null}'
    )
    job = msgspec.json.decode(body, type=JobInfo)
    assert (
        answer_of(make_plugin({}, now=T0 + timedelta(minutes=4)).job_enqueueable(job))
        == Vote.ABSTAIN
    )
    assert (
        answer_of(make_plugin({}, now=T0 + timedelta(minutes=5)).job_enqueueable(job))
        == Vote.PERMIT
    )


# --- JobOrderFn (in-tree only; kept for the upstream vector) ---------------------------------


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ((None, T0), (None, T0), 0),
        ((None, T0), (HOUR, T0), 1),
        ((HOUR, T0), (None, T0), -1),
        ((MINUTE, T0), (HOUR, T0), -1),
        ((HOUR, T0), (MINUTE, T0 + timedelta(minutes=59)), 0),
        ((HOUR, T0), (MINUTE, T0 + timedelta(minutes=60)), -1),
        ((2 * HOUR, T0), (MINUTE, T0), 1),
    ],
    ids=[
        "neither has an sla",
        "without sla goes after",
        "with sla goes first",
        "earlier deadline first",
        "equal deadlines",
        "later creation, later deadline",
        "later deadline goes after",
    ],
)
def test_compare_jobs(
    left: tuple[int | None, datetime], right: tuple[int | None, datetime], expected: int
) -> None:
    plugin = make_plugin({})
    lj = make_job("l", waiting_time=left[0], created=left[1])
    rj = make_job("r", waiting_time=right[0], created=right[1])
    assert plugin.compare_jobs(lj, rj) == expected


def test_registered_hooks() -> None:
    plugin = make_plugin({})
    assert plugin.hooks() == frozenset({"job_enqueueable"})
    assert not SlaPlugin.needs_snapshot
    assert set(SlaPlugin.in_tree_only) == {"JobOrderFn", "JobPipelinedFn"}


@pytest.mark.parametrize(
    ("waited", "reason"),
    [
        pytest.param(timedelta(minutes=10), Reason(
            "within-sla", "waited 10m of its SLA 1h (deadline 2026-01-01T01:00:00+00:00)"),
            id="waits"),
        pytest.param(timedelta(hours=2), Reason(
            "past-sla", "waited past its SLA 1h (deadline 2026-01-01T01:00:00+00:00): admitted"),
            id="admitted"),
    ],
)  # fmt: skip
def test_the_vote_says_how_long_the_job_waited_against_its_sla(
    waited: timedelta, reason: Reason
) -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    plugin = SlaPlugin(Arguments({"sla-waiting-time": "1h"}, plugin="sla"))
    plugin.on_session_open(Session(now=lambda: created + waited))
    result = plugin.job_enqueueable(JobInfo(Name="j", Namespace="ns", CreationTimestamp=created))
    assert isinstance(result, Explained) and result.reason == reason


def test_a_deadline_past_year_9999_is_named_so() -> None:
    created = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    plugin = SlaPlugin(Arguments({"sla-waiting-time": "2h"}, plugin="sla"))
    plugin.on_session_open(Session(now=lambda: created))
    result = plugin.job_enqueueable(JobInfo(Name="j", Namespace="ns", CreationTimestamp=created))
    assert isinstance(result, Explained) and result.reason is not None
    assert result.reason.message == "waited 0s of its SLA 2h (deadline after year 9999)"


def test_a_job_without_creation_timestamp_is_explained_without_year_1() -> None:
    """Go's zero time made the reason "waited 2562047h47m16.854775807s past its SLA 1h
    (deadline 0001-01-01T01:00:00+00:00)" (issue 34)."""
    plugin = SlaPlugin(Arguments({"sla-waiting-time": "1h"}, plugin="sla"))
    plugin.on_session_open(Session(now=lambda: datetime(2026, 1, 1, tzinfo=UTC)))
    result = plugin.job_enqueueable(JobInfo(Name="j", Namespace="ns"))
    assert isinstance(result, Explained) and result.reason is not None
    assert answer_of(result) == Vote.PERMIT
    assert result.reason.code == "past-sla"
    assert result.reason.message == (
        "has no creation timestamp, which Volcano reads as long past its SLA 1h: admitted"
    )
