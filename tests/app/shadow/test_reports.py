"""What the shadow's process reports, kept for the routes (app/shadow/reports.py): sessions kept
by age and by what they found, differences capped per session, failures counted against the
session they happened in, a job found by its PodGroup's name, the file loaded or not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from app.shadow import reports as shadow_reports
from app.shadow.diff import Difference, Side
from app.shadow.messages import Compared, Failure, Loaded, Problem, SessionBegan
from app.shadow.reports import (
    SESSIONS_KEPT,
    SESSIONS_WITH_DIFFERENCES_KEPT,
    ShadowMetrics,
    ShadowReports,
)
from plugins.api.extension_points import Verb

AT = datetime(2026, 11, 28, tzinfo=UTC)
UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
JOB_ENQUEUEABLE = Verb.JOB_ENQUEUEABLE


def reports() -> ShadowReports:
    return ShadowReports(
        Path("shadow.yaml"), ShadowMetrics(CollectorRegistry(), lambda: "none"), lambda: AT
    )


def held(subject: str) -> Difference:
    return Difference(
        "jobEnqueueable",
        "job",
        subject,
        "would hold it",
        Side("admitted"),
        Side("held", "overcommit"),
    )


def test_the_newest_sessions_are_kept_and_those_that_found_differences_outlive_them() -> None:
    r = reports()
    r.apply(SessionBegan(1, ""))
    r.apply(Compared(1, JOB_ENQUEUEABLE, (held("a/big"),)))
    for number in range(2, 2 + SESSIONS_KEPT):
        r.apply(SessionBegan(number, ""))
        r.apply(Compared(number, JOB_ENQUEUEABLE, ()))
    assert [s.number for s in r.sessions] == [1, *range(2, 2 + SESSIONS_KEPT)]
    for number in range(2 + SESSIONS_KEPT, 2 + SESSIONS_KEPT + SESSIONS_WITH_DIFFERENCES_KEPT):
        r.apply(SessionBegan(number, ""))
        r.apply(Compared(number, JOB_ENQUEUEABLE, (held("a/big"),)))
    r.apply(SessionBegan(99, ""))  # sessions are let go of when the next one is kept
    differing = list(range(2 + SESSIONS_KEPT, 2 + SESSIONS_KEPT + SESSIONS_WITH_DIFFERENCES_KEPT))
    newest = [*differing, 99][-SESSIONS_KEPT:]
    assert [s.number for s in r.sessions] == sorted({*differing, *newest})  # not session 1


def test_differences_past_the_cap_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shadow_reports, "DIFFERENCES_PER_SESSION", 2)
    r = reports()
    r.apply(SessionBegan(1, ""))
    r.apply(Compared(1, JOB_ENQUEUEABLE, (held("a/x"), held("a/y"), held("a/z"))))
    [described], newest = r.findings()
    assert [d.subject for d in newest] == ["a/x", "a/y"]
    assert described["differencesNotKept"] == 1 and described["differences"] == {
        "jobEnqueueable": 2
    }
    assert r.metrics.differences.labels("jobEnqueueable", "overcommit")._value.get() == 3


def test_a_job_is_found_by_its_name_and_by_its_podgroups() -> None:
    r = reports()
    r.apply(SessionBegan(1, ""))
    r.apply(
        Compared(
            1,
            JOB_ENQUEUEABLE,
            (
                held(f"a/train-{UID}"),
                held("a/other"),
            ),
        )
    )
    assert [d.subject for _, d in r.differences_of("job", "a/train")] == [f"a/train-{UID}"]
    assert r.differences_of("job", "a/tra") == []  # a prefix of the name is not the job


def test_a_failure_counts_against_the_session_it_happened_in() -> None:
    r = reports()
    r.apply(SessionBegan(1, ""))
    r.apply(Failure("verb", "jobEnqueueable", "ZeroDivisionError()"))
    r.apply(Failure("load", "", "not YAML"))
    [described], _ = r.findings()
    assert described["failures"] == 1  # a load failure is the file's, not the session's
    counts = r.failure_counts()
    assert counts["failures"] == {"load": 1, "open": 0, "verb": 1, "compare": 0}
    assert counts["lastFailure"]["stage"] == "load"


def test_the_file_loaded_replaces_its_problem_and_its_info_series() -> None:
    r = reports()
    r.apply(Problem("tiers[0]: unknown plugin 'nope'"))
    assert r.problem is not None and r.loaded() == {}
    r.apply(Loaded("abc", ["overcommit"], {}))
    r.apply(Loaded("def", ["overcommit", "sla"], {"pdb": "shared"}))
    assert r.problem is None
    assert r.loaded() == {
        "sha256": "def",
        "loadedAt": AT.isoformat(),
        "plugins": ["overcommit", "sla"],
        "dataSources": {"pdb": "shared"},
    }
    info = {s.labels["sha256"] for m in r.metrics.info.collect() for s in m.samples}
    assert info == {"def"}
