"""Wire dialects per Volcano release (protocol reference §3)."""

from __future__ import annotations

import json

import pytest

from app.dialect import Dialect
from plugins.api.base import FitError, StatusCode
from tests.examples import example_json

REJECT = FitError("GPU model not allowed for this job", StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)


@pytest.mark.parametrize(
    ("version", "example_dir"),
    [
        ((1, 6), "v1.6-v1.7"),
        ((1, 7), "v1.6-v1.7"),
        ((1, 8), "v1.9"),
        ((1, 9), "v1.9"),
        ((1, 10), "head"),
        ((1, 15), "head"),
        ((1, 16), "head"),
    ],
)
def test_predicate_pass_matches_examples(version: tuple[int, int], example_dir: str) -> None:
    encoded = json.loads(Dialect(version).encode_predicate(None))
    assert encoded == example_json(example_dir, "predicate.response.pass.json")


def test_predicate_reject_shapes() -> None:
    assert json.loads(Dialect((1, 16)).encode_predicate(REJECT)) == {
        "status": REJECT.reason,
        "code": 3,
    }
    assert json.loads(Dialect((1, 9)).encode_predicate(REJECT)) == example_json(
        "v1.9", "predicate.response.reject.json"
    )
    assert json.loads(Dialect((1, 7)).encode_predicate(FitError("GPU model not allowed"))) == (
        example_json("v1.6-v1.7", "predicate.response.reject.json")
    )


def test_success_code_with_message_is_sent_as_error_and_empty_reason_still_rejects() -> None:
    assert json.loads(Dialect((1, 16)).encode_predicate(FitError("x", StatusCode.SUCCESS))) == {
        "status": "x",
        "code": 1,
    }
    assert json.loads(Dialect((1, 16)).encode_predicate(FitError("")))["status"] != ""
    v18 = json.loads(Dialect((1, 8)).encode_predicate(FitError("", StatusCode.SUCCESS)))
    assert v18["status"][0]["Code"] == 1 and v18["status"][0]["Reason"]


@pytest.mark.parametrize(
    ("version", "job_ready", "events", "enqueued", "legacy"),
    [
        ((1, 6), False, False, False, True),
        ((1, 7), True, False, False, True),
        ((1, 8), True, False, False, False),
        ((1, 12), True, False, False, False),
        ((1, 13), True, True, False, False),
        ((1, 15), True, True, False, False),
        ((1, 16), True, True, True, False),
    ],
)
def test_verbs_per_release(version, job_ready, events, enqueued, legacy) -> None:
    dialect = Dialect(version)
    assert dialect.has_verb("jobReady") is job_ready
    assert dialect.has_verb("allocate") is events and dialect.has_verb("deallocate") is events
    assert dialect.has_managed_resources is events
    assert dialect.has_verb("jobEnqueued") is enqueued
    assert dialect.legacy_reclaimable_path is legacy
    assert dialect.has_verb("predicate") and dialect.has_verb("jobEnqueueable")
