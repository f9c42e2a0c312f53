"""Cluster mode's self-audit (app/cluster_state/audit.py, issue 49 item 2), on Volcano v1.14.1's
captured snapshot as what its calls carry and the state derived from objects built to match it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.cluster_state.audit import AuditBudget, SelfAudit
from app.cluster_state.derive import derive
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import cluster, pod
from tests.app.cluster_state.test_compare import captured, matching_objects


def derived_from(**changes: Any) -> OnSessionOpenRequest:
    return derive(cluster(**matching_objects(**changes))).snapshot


def miscounted() -> OnSessionOpenRequest:
    """The mutant: the derived state counts worker-0's CPU request as 2, Volcano as 1."""
    objects = matching_objects()
    objects["pods"][0] = pod(
        "worker-0", group="pg-pending", requests={"cpu": "2", "memory": "1G"},
        annotations={"volcano.sh/task-spec": "worker"}, labels={"volcano.sh/task-spec": "worker"},
    )  # fmt: skip
    return derive(cluster(**objects)).snapshot


def sent_by_volcano() -> OnSessionOpenRequest:
    """The captured snapshot as Volcano's calls carry it, each object at the version Caldera's
    watch saw it (the capture, from Volcano's mock cache, has none): nothing is in flight, so a
    difference is the derivation's."""
    sent, seen = captured(), derived_from()
    for uid, job in (sent.Jobs or {}).items():
        theirs = (seen.Jobs or {})[uid]
        if job.PodGroup is not None and theirs.PodGroup is not None:
            job.PodGroup.metadata.resourceVersion = theirs.PodGroup.metadata.resourceVersion
        for key, task in (job.Tasks or {}).items():
            assert task.Pod is not None
            task.Pod.metadata.resourceVersion = (theirs.Tasks or {})[
                key
            ].Pod.metadata.resourceVersion  # type: ignore[union-attr]
    for name, node in (sent.Nodes or {}).items():
        theirs_node = (seen.Nodes or {})[name].Node
        if node.Node is not None and theirs_node is not None:
            node.Node.metadata.resourceVersion = theirs_node.metadata.resourceVersion
    return sent


def offer_everything(audit: SelfAudit, sent: OnSessionOpenRequest) -> None:
    """What a session's calls would carry: each job (jobEnqueueable), each task (predicate),
    each node (predicate, prioritize)."""
    for job in (sent.Jobs or {}).values():
        audit.job(job)
        for task in (job.Tasks or {}).values():
            audit.task(task)
    audit.nodes((sent.Nodes or {}).values())
    audit.nodes((sent.Nodes or {}).values())


def audited(state: OnSessionOpenRequest, placed: bool = False) -> tuple[int, set[str]]:
    audit = SelfAudit()
    audit.session_opened(1, state)
    sent = sent_by_volcano()
    offer_everything(audit, sent)
    if placed:
        audit.placed(sent.Jobs["ns1/pg-pending"].Tasks["ns1-worker-0"])  # type: ignore[index]
    result = audit.session_closed()
    assert result is not None
    kinds = {f"{d.kind}/{result.explained(i)}" for i, d in enumerate(result.differences)}
    return result.unexplained, kinds


CASES = [
    # (case, the derived state, a placement of worker-0 this session, unexplained, kinds)
    ("the derived state matches what Volcano sends", derived_from, False, 0, set()),
    ("a field miscounted is caught", miscounted, False, 3,
     {"job.TotalRequest/no", "task.Resreq/no", "task.Pod/no"}),
    ("a placement of the task this session explains it", miscounted, True, 0,
     {"job.TotalRequest/in_session", "task.Resreq/in_session", "task.Pod/in_session"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("state", "placed", "unexplained", "kinds"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_audit_compares_what_volcano_sent_with_the_derived_state(
    state: Any, placed: bool, unexplained: int, kinds: set[str]
) -> None:
    found, seen = audited(state(), placed)
    assert (found, seen) == (unexplained, kinds)


def test_sustained_divergence_makes_the_view_stale_and_a_clean_session_ends_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted: list[tuple[str, str, int]] = []
    audit = SelfAudit(max_divergent_sessions=3, count=lambda *c: counted.append(c))
    wrong, right = miscounted(), derived_from()
    with caplog.at_level(logging.WARNING, logger="caldera.session_state"):
        for session in range(1, 4):
            assert audit.divergence() is None
            audit.session_opened(session, wrong)
            offer_everything(audit, sent_by_volcano())
            audit.session_closed()
    reason = audit.divergence()
    assert reason is not None and "3 sessions in a row" in reason
    assert ("task.Resreq", "no", 1) in counted
    assert any(
        "unexplained difference(s) of kind task.Resreq" in r.getMessage() for r in caplog.records
    )
    audit.session_opened(4, right)
    offer_everything(audit, sent_by_volcano())
    audit.session_closed()
    assert audit.divergence() is None


def test_a_limit_of_zero_only_reports() -> None:
    audit = SelfAudit(max_divergent_sessions=0)
    for session in range(5):
        audit.session_opened(session, miscounted())
        offer_everything(audit, sent_by_volcano())
        audit.session_closed()
    assert audit.divergent_in_a_row == 5 and audit.divergence() is None


def test_the_sample_is_bounded_per_session_and_per_section() -> None:
    audit = SelfAudit(AuditBudget(per_session=3))  # one job, one task, one node
    audit.session_opened(1, derived_from())
    offer_everything(audit, sent_by_volcano())
    result = audit.session_closed()
    assert result is not None and result.objects == 3


def test_nothing_is_kept_without_a_derived_state() -> None:
    """A session opened before the watch listed: nothing to compare with."""
    audit = SelfAudit()
    audit.session_opened(1, None)
    offer_everything(audit, sent_by_volcano())
    assert audit.session_closed() is None
