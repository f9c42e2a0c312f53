"""A session of cluster mode whose first call comes before every watch has listed once
(app/cluster_state/cluster_mode.py): there is no state to answer from, which is the case of a
sidecar restarted while vc-scheduler runs (no startupProbe holds the scheduler back then). It is
answered as a stale session is, as ``onStaleState`` says, never from an empty view: answered
without a session, resourcequota abstains and the job is admitted whatever its quota (e2e
``stale-view-caldera-restarted`` saw an over-quota job bound that way)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.cluster_state.cluster_mode import ClusterSessionState
from tests.app.cluster_state.objects import quota
from tests.app.cluster_state.test_cluster_mode import (
    CAPTURED,
    SESSION_PLUGINS,
    client,
    cluster_app,
)
from tests.app.cluster_state.test_compare import matching_objects
from tests.examples import example_bytes

JOB = example_bytes(CAPTURED, "jobEnqueueable.request.json")
PREDICATE = example_bytes(CAPTURED, "predicate.request.json")


def quota_used_up() -> dict[str, Any]:
    """The pending job's namespace has no CPU left: resourcequota rejects it from the state."""
    objects = matching_objects()
    used = {"cpu": "10", "memory": "1Gi"}
    objects["quotas"] = [quota("quota", "ns1", {"cpu": "10", "memory": "20Gi"}, used)]
    return objects


# (case, onStaleState, the verbs' answers before the lists: status code and body or error text)
CASES = [
    ("hold: nothing admitted or placed", "hold", [
        ("jobEnqueueable", JOB, 200, {"status": -1}),
        ("predicate", PREDICATE, 200, 3),
    ]),
    ("fail: a 503 saying the view is not listed yet", "fail", [
        ("jobEnqueueable", JOB, 503, "the cluster view is not listed yet"),
    ]),
    ("answer: without a session, whatever the quota, as the operator chose", "answer", [
        ("jobEnqueueable", JOB, 200, {"status": 1}),
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "calls"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_a_session_before_the_lists_is_answered_as_a_stale_one(
    policy: str, calls: list[tuple[str, bytes, int, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    app = cluster_app(quota_used_up(), f"onStaleState: {policy}\n" + SESSION_PLUGINS)
    state: ClusterSessionState = app.runtime.session_state
    assert state.not_current() == []
    state.watch.reflectors[2].status.synced = False  # one collection not listed yet
    waiting = state.watch.reflectors[2].name
    async with client(app) as c:
        with caplog.at_level(logging.WARNING, logger="caldera.session_state"):
            for verb, request, status, expected in calls:
                answer = await c.post(f"/{verb}", content=request)
                assert answer.status_code == status, (verb, answer.text)
                if isinstance(expected, dict):
                    assert answer.json() == expected, verb
                elif verb == "predicate":
                    assert answer.json()["code"] == expected, answer.text  # unresolvable
                else:
                    assert expected in answer.json()["error"] and waiting in answer.json()["error"]
        assert app.runtime.extender.sessions.current is None
        assert state.sessions_before_sync == 1
        said = [r.getMessage() for r in caplog.records if "before every watch" in r.getMessage()]
        assert len(said) == 1 and waiting in said[0], said

        # Listed: the next session is answered from the state, which holds the job.
        state.watch.reflectors[2].status.synced = True
        await c.post("/onSessionClose", content=b"{}")
        assert (await c.post("/jobEnqueueable", content=JOB)).json() == {"status": -1}
        assert app.runtime.extender.sessions.current is not None


def test_not_current_names_what_is_not_listed_and_what_is_stale() -> None:
    app = cluster_app(matching_objects())
    state: ClusterSessionState = app.runtime.session_state
    for reflector in state.watch.reflectors[:2]:
        reflector.status.synced = False
    reasons = state.not_current()
    assert len(reasons) == 1
    names = [r.name for r in state.watch.reflectors[:2]]
    assert reasons[0].startswith(f"the cluster view is not listed yet: {', '.join(names)} of ")
    state.watch.reflectors[0].status.failing_since = -1e9  # broken for ages
    reasons = state.not_current()
    assert len(reasons) == 2 and "failing past sessionStateMaxStaleness" in reasons[1]
