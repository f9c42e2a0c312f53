"""Wire shapes and verbs per Volcano release (protocol reference §3)."""

from __future__ import annotations

import json

import pytest

from app.wire import encode_predicate
from plugins.api.base import FitError, StatusCode
from plugins.api.release import Release
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
    encoded = json.loads(encode_predicate(Release.of(version), None))
    assert encoded == example_json(example_dir, "predicate.response.pass.json")


def test_predicate_reject_shapes() -> None:
    assert json.loads(encode_predicate(Release.of((1, 16)), REJECT)) == {
        "status": REJECT.reason,
        "code": 3,
    }
    assert json.loads(encode_predicate(Release.of((1, 9)), REJECT)) == example_json(
        "v1.9", "predicate.response.reject.json"
    )
    assert json.loads(encode_predicate(Release.of((1, 7)), FitError("GPU model not allowed"))) == (
        example_json("v1.6-v1.7", "predicate.response.reject.json")
    )


def test_success_code_with_message_is_sent_as_error_and_empty_reason_still_rejects() -> None:
    assert json.loads(encode_predicate(Release.of((1, 16)), FitError("x", StatusCode.SUCCESS))) == {
        "status": "x",
        "code": 1,
    }
    assert json.loads(encode_predicate(Release.of((1, 16)), FitError("")))["status"] != ""
    v18 = json.loads(encode_predicate(Release.of((1, 8)), FitError("", StatusCode.SUCCESS)))
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
    release = Release.of(version)
    assert release.has_verb("jobReady") is job_ready
    assert release.has_verb("allocate") is events and release.has_verb("deallocate") is events
    assert release.has_managed_resources is events
    assert release.has_verb("jobEnqueued") is enqueued
    assert release.admission_follows_vote is enqueued
    assert release.shares_reclaimable_path is legacy
    assert release.has_verb("predicate") and release.has_verb("jobEnqueueable")
    assert not release.has_verb("noSuchVerb")
