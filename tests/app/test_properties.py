"""Property tests: Volcano-shaped bodies for every verb (tests/strategies.py), valid and mutated,
answered by the Extender of a configuration hosting every built-in plugin that needs no outside
data, for each predicate dialect (1.7, 1.9, 1.15).

- A body Volcano could send is answered 200; a mutated one 200 or 4xx; never a 5xx (no plugin
  here declares an error of its own, so a plugin failure is a finding too).
- Every 200 is well-formed for the release: exactly the keys of the verb's answer, of the right
  types; predicate in the release's dialect; scores finite and only for the nodes sent;
  victims a subset of the evictees, byte for byte; jobEnqueueable's status -1, 0 or 1.
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config import load_config_text
from app.errors import CalderaError, PluginFailure
from app.extender import Extender
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api.release import PredicateShape, Release
from schemas import responses as rs
from tests.every_plugin import every_plugin_config
from tests.strategies import Cluster, cluster, compact, mutated, verb_body

RELEASES = ["1.7", "1.9", "1.15"]
EXAMPLES = int(os.environ.get("CALDERA_PROPERTY_EXAMPLES", "25"))
"""Per release and test: CI-sized by default (data generation takes about 0.1 s an example);
``CALDERA_PROPERTY_EXAMPLES=1000 uv run pytest tests/app/test_properties.py`` searches longer."""
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
VERBS = [
    "predicate",
    "prioritize",
    "preemptable",
    "reclaimable",
    "jobEnqueueable",
    "jobEnqueued",
    "queueOverused",
    "jobReady",
    "allocate",
    "deallocate",
]
PREDICATE_ANSWER = {
    PredicateShape.STATUS_CODE: rs.PredicateResponse,
    PredicateShape.STATUS_LIST: rs.PredicateResponseV18,
    PredicateShape.ERROR_MESSAGE: rs.PredicateResponseV16,
}
ANSWERS: dict[str, type[msgspec.Struct]] = {
    "onSessionOpen": rs.Empty,
    "onSessionClose": rs.Empty,
    "prioritize": rs.PrioritizeResponse,
    "preemptable": rs.EvictResponse,
    "reclaimable": rs.EvictResponse,
    "jobEnqueueable": rs.JobEnqueueableResponse,
    "jobEnqueued": rs.Empty,
    "queueOverused": rs.QueueOverusedResponse,
    "jobReady": rs.JobReadyResponse,
    "allocate": rs.EventHandlerResponse,
    "deallocate": rs.EventHandlerResponse,
}


def release_of(version: str) -> Release:
    major, minor = version.split(".")
    return Release(int(major), int(minor))


@functools.cache
def extender(version: str) -> Extender:
    app = create_app(
        ServeOptions.of(load_config_text(every_plugin_config(version), f"every-plugin-{version}"))
    )
    answers: Extender = app.runtime.extender
    return answers


def verbs_of(version: str) -> list[str]:
    release = release_of(version)
    return [verb for verb in VERBS if release.has_verb(verb)]


def ask(version: str, verb: str, body: bytes) -> tuple[int, bytes]:
    """(status, answer) as the route would send it; an exception other than a CalderaError is a
    Caldera bug and fails the test as it is."""
    release = release_of(version)
    path_verb = verb
    if release.shares_reclaimable_path and verb in ("jobEnqueueable", "queueOverused"):
        path_verb = "reclaimable"  # 1.6–1.7 post these bodies to the reclaimable verb
    try:
        return 200, extender(version).handle(path_verb, body)
    except PluginFailure as failure:
        raise AssertionError(f"{verb}: {failure}") from failure
    except CalderaError as refusal:
        return refusal.status, msgspec.json.encode(refusal.answer(verb))


def check_answer(version: str, verb: str, request: Any, answer: bytes) -> None:
    kind = ANSWERS.get(verb) or PREDICATE_ANSWER[release_of(version).predicate_shape]
    document = json.loads(answer)
    assert isinstance(document, dict) and set(document) == set(kind.__struct_fields__), (
        verb,
        document,
    )
    decoded = msgspec.json.decode(answer, type=kind)
    if isinstance(decoded, rs.PrioritizeResponse):
        # a node without a Name is Go's zero value, "" (a mutated body may drop the key)
        sent = {node.get("Name", "") for node in request.get("nodes") or []}
        assert set(decoded.nodeScore) <= sent
        assert all(math.isfinite(score) for score in decoded.nodeScore.values())
    elif isinstance(decoded, rs.EvictResponse):
        evictees = {compact(evictee) for evictee in request.get("evictees") or []}
        assert decoded.status in (0, 1)
        assert all(bytes(victim) in evictees for victim in decoded.victims)
        if decoded.status == 0:
            assert decoded.victims == []
    elif isinstance(decoded, rs.JobEnqueueableResponse):
        assert decoded.status in (-1, 0, 1)
    elif isinstance(decoded, rs.PredicateResponseV18):
        assert all(status.Reason for status in decoded.status)


def open_session(version: str, world: Cluster) -> None:
    status, answer = ask(version, "onSessionOpen", compact(world.snapshot))
    assert status == 200, answer
    check_answer(version, "onSessionOpen", world.snapshot, answer)


@pytest.mark.parametrize("version", RELEASES)
@PROPERTY_SETTINGS
@given(data=st.data(), legacy_shape=st.booleans())
def test_bodies_volcano_could_send_are_answered_well_formed(
    version: str, data: st.DataObject, legacy_shape: bool
) -> None:
    world = data.draw(cluster(legacy_shape), label="cluster")
    open_session(version, world)
    calls = data.draw(st.lists(st.sampled_from(verbs_of(version)), min_size=1, max_size=8))
    for verb in calls:
        request = data.draw(verb_body(world, verb), label=verb)
        status, answer = ask(version, verb, compact(request))
        assert status == 200, (verb, answer)
        check_answer(version, verb, request, answer)
    status, answer = ask(version, "onSessionClose", b"{}")
    assert (status, answer) == (200, b"{}")


@pytest.mark.parametrize("version", RELEASES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_mutated_bodies_are_refused_or_answered_well_formed(
    version: str, data: st.DataObject
) -> None:
    world = data.draw(cluster(), label="cluster")
    snapshot = data.draw(st.just(world.snapshot) | mutated(world.snapshot), label="snapshot")
    status, answer = ask(version, "onSessionOpen", compact(snapshot))
    assert status in (200, 400), answer
    for verb in data.draw(st.lists(st.sampled_from(verbs_of(version)), min_size=1, max_size=6)):
        request = data.draw(mutated(data.draw(verb_body(world, verb))), label=verb)
        status, answer = ask(version, verb, compact(request))
        assert status in (200, 400), (verb, answer)
        if status == 200:
            check_answer(version, verb, request, answer)
        else:
            assert json.loads(answer)["error"]
