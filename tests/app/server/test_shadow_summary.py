"""``GET /debug/shadow``'s summary lines (app/server/routes/shadow.py), from the shadow's state and
the sessions it kept: counts read in the singular for one, the load error is said once, and
``job=``/``task=`` never claims the shadow agrees when it evaluated nothing."""

from __future__ import annotations

from typing import Any

import pytest

from app.server.routes.shadow import subject_summary, summary
from app.shadow.diff import Difference, Side

SOURCE = "/etc/caldera/shadow.yaml"
PROBLEM = "tiers[0].plugins[0]: unknown plugin 'nosuch'"
FAILING = {
    "source": SOURCE, "status": "failing", "problem": PROBLEM, "droppedSessions": 0,
    "failures": {"load": 1, "open": 0, "verb": 0, "compare": 0},
    "lastFailure": {"stage": "load", "verb": "", "error": PROBLEM, "at": "t"},
}  # fmt: skip
EVALUATING = {
    "source": SOURCE, "status": "evaluating", "sha256": "0123456789abcdef", "droppedSessions": 0,
    "failures": {"load": 0, "open": 0, "verb": 0, "compare": 0},
}  # fmt: skip
SKIPPED = {"session": 1, "compared": {}, "differences": {}, "skipped": "not loaded"}
"""A session kept while the file has not loaded: the shadow evaluated nothing in it."""


def evaluated(number: int, calls: int) -> dict[str, Any]:
    return {"session": number, "compared": {"jobEnqueueable": calls}, "differences": {}}


def held(subject: str) -> Difference:
    return Difference(
        "jobEnqueueable", "job", subject, "would hold it",
        Side("admitted"), Side("held", "overcommit", "resource in cluster is overused"),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("state", "sessions", "newest", "expected"),
    [
        pytest.param(EVALUATING, [evaluated(2, 1)], [],
                     ["session 2: the shadow answered the 1 call compared as the live"
                      " configuration did"], id="one call agreed: singular"),
        pytest.param(EVALUATING, [evaluated(2, 3)], [],
                     ["session 2: the shadow answered all 3 calls compared as the live"
                      " configuration did"], id="three calls agreed"),
        pytest.param(EVALUATING, [evaluated(2, 1)], [held("a/big")],
                     ["session 2: 1 difference in 1 call compared",
                      "jobEnqueueable: the shadow would hold it: 1 job",
                      "jobEnqueueable job a/big: the shadow would hold it by overcommit:"
                      " resource in cluster is overused"], id="one difference"),
        pytest.param(FAILING, [SKIPPED], [],
                     [f"the shadow configuration {SOURCE} is failing: {PROBLEM}",
                      "no session evaluated by the shadow yet", "shadow failures: 1 load"],
                     id="failed to load: the error once"),
        pytest.param({**FAILING, "failures": {**FAILING["failures"], "verb": 1},
                      "lastFailure": {"stage": "verb", "verb": "v", "error": "boom", "at": "t"}},
                     [SKIPPED], [],
                     [f"the shadow configuration {SOURCE} is failing: {PROBLEM}",
                      "no session evaluated by the shadow yet",
                      "shadow failures: 1 load, 1 verb (latest: boom)"],
                     id="a later failure other than the load error is still named"),
    ],
)  # fmt: skip
def test_the_summary(
    state: dict[str, Any], sessions: list[dict[str, Any]], newest: list[Difference],
    expected: list[str],
) -> None:  # fmt: skip
    """Issue 47: "all 1 calls", and a load error printed three times."""
    assert summary(state, sessions, newest) == expected


@pytest.mark.parametrize(
    ("state", "sessions", "found", "expected"),
    [
        pytest.param(FAILING, [SKIPPED], [],
                     [f"the shadow configuration {SOURCE} is failing: {PROBLEM}",
                      "no session evaluated by the shadow yet: it has decided nothing about"
                      " job ns1/pg-pending"], id="never loaded: no claim of agreement"),
        pytest.param({**EVALUATING, "status": "starting"}, [], [],
                     [f"the shadow configuration {SOURCE} is not loaded",
                      "no session evaluated by the shadow yet: it has decided nothing about"
                      " job ns1/pg-pending"], id="still starting"),
        pytest.param(EVALUATING, [SKIPPED, evaluated(2, 1)], [],
                     ["the shadow decides job ns1/pg-pending as the live configuration does"
                      " (in the 1 session it evaluated among those kept)"],
                     id="agrees: one session, singular, the skipped one not counted"),
        pytest.param(EVALUATING, [evaluated(1, 1), evaluated(2, 1)], [],
                     ["the shadow decides job ns1/pg-pending as the live configuration does"
                      " (in the 2 sessions it evaluated among those kept)"], id="agrees: two"),
        pytest.param(EVALUATING, [evaluated(2, 1)], [(2, held("ns1/pg-pending"))],
                     ["session 2: jobEnqueueable job ns1/pg-pending: the shadow would hold it"
                      " by overcommit: resource in cluster is overused"], id="a difference"),
    ],
)  # fmt: skip
def test_the_summary_of_one_job(
    state: dict[str, Any], sessions: list[dict[str, Any]], found: list[tuple[int, Difference]],
    expected: list[str],
) -> None:  # fmt: skip
    """Issue 47: a shadow that never loaded was said to decide the job "as the live
    configuration does (in the 1 sessions kept)"."""
    assert subject_summary(state, sessions, "job", "ns1/pg-pending", found) == expected
