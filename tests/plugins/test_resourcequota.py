"""resourcequota: ``pkg/scheduler/plugins/resourcequota/resourcequota_test.go``
(TestResourceQuotaPlugin, TestJobEnqueuedOnOtherPluginsReject) plus the edge cases of the
reference (plugins-part2.md §3): exact quantities, exact names, used and pending usage, and where
each Volcano release records the session's admitted usage."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from fractions import Fraction

import pytest

from app.config import PluginOption
from app.framework import Framework, Slot
from app.metrics import Metrics
from plugins.api.arguments import Arguments
from plugins.api.base import Plugin, Session, Vote
from plugins.api.extension_points import BY_VERB
from plugins.api.reasons import Explained, Reason, answer_of
from plugins.api.release import Release
from plugins.resourcequota import (
    ResourceQuotaPlugin,
    quota_add,
    quota_less_than_or_equal,
    quota_mask,
)
from schemas.api import JobInfo, NamespaceInfo, PodGroup, PodGroupSpec, PodGroupStatus
from schemas.k8s import ResourceList, ResourceQuotaStatus

HUGE = {"cpu": "20000m", "memory": "20G"}
NORMAL = {"cpu": "2000m", "memory": "2G"}


def make_job(
    name: str,
    min_resources: ResourceList | None,
    namespace: str = "default",
    phase: str = "Inqueue",
) -> JobInfo:
    return JobInfo(
        UID=f"{namespace}/{name}",
        Name=name,
        Namespace=namespace,
        Queue="c1",
        MinAvailable=2,
        PodGroup=PodGroup(
            spec=PodGroupSpec(min_member=2, queue="c1", min_resources=min_resources),
            status=PodGroupStatus(phase=phase),
        ),
    )


def quota(hard: ResourceList, used: ResourceList | None = None) -> ResourceQuotaStatus:
    return ResourceQuotaStatus(hard=hard, used=used)


def make_session(
    namespaces: dict[str, dict[str, ResourceQuotaStatus]],
    version: tuple[int, int] = (1, 16),
) -> Session:
    return Session(
        namespace_info={ns: NamespaceInfo(Name=ns, QuotaStatus=q) for ns, q in namespaces.items()},
        has_snapshot=True,
        release=Release.of(version),
    )


def open_plugin(ssn: Session) -> ResourceQuotaPlugin:
    plugin = ResourceQuotaPlugin(Arguments({}, plugin="resourcequota"))
    plugin.on_session_open(ssn)
    return plugin


# --- TestResourceQuotaPlugin ------------------------------------------------------------------
# Quota "test" in default: hard = {cpu 2000m, memory 2G} (util.BuildResourceQuota sets the status'
# hard too, and no used). The test calls JobEnqueueable only.

RQ1 = {"test": quota(NORMAL)}


@pytest.mark.parametrize(
    ("min_resources", "namespaces", "expected"),
    [
        (NORMAL, {"default": RQ1}, True),
        (HUGE, {"default": RQ1}, False),
        (HUGE, {}, True),
        (None, {"default": RQ1}, True),
    ],
    ids=[
        "ResourceQuota capacity can match the needs of this pg",
        "ResourceQuota capacity can't match the needs of this pg",
        "No ResourceQuota resource object",
        "MinResources field of pg is not set",
    ],
)
@pytest.mark.parametrize("version", [(1, 16), (1, 15)], ids=["1.16", "1.15"])
def test_resource_quota_plugin(
    min_resources: ResourceList | None,
    namespaces: dict[str, dict[str, ResourceQuotaStatus]],
    expected: bool,
    version: tuple[int, int],
) -> None:
    plugin = open_plugin(make_session(namespaces, version))
    assert (
        answer_of(plugin.job_enqueueable(make_job("pg", min_resources))) == Vote.PERMIT
    ) is expected


# --- TestJobEnqueuedOnOtherPluginsReject ------------------------------------------------------
# rq1 in ns1: hard {cpu 1, memory 1G}; pgA and pgB each need {1, 1G}; a co-tier plugin rejects
# pgA. Driven here the way Volcano's enqueue action drives one tier: the first Reject ends the
# vote, a job that is not rejected gets JobEnqueued on every plugin.


class RejecterPlugin(Plugin):
    """``uthelper.RejecterPlugin``: Reject for the named PodGroup, Permit otherwise."""

    name = "test-rejecter"

    def __init__(self, reject_job: str) -> None:
        super().__init__(Arguments({}))
        self.reject_job = reject_job

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return Vote.REJECT if job.Name == self.reject_job else Vote.PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        pass


RELEASE_1_16 = Release(1, 16)


def enqueue(tier: Sequence[Plugin], job: JobInfo, release: Release = RELEASE_1_16) -> bool:
    """Volcano's enqueue action over one tier, through Caldera's own framework: the vote, then
    JobEnqueued on every plugin when the job is not rejected (a jobEnqueued call from 1.16; the
    framework's own step inside the vote before)."""
    framework = Framework(
        [[Slot(PluginOption(name=p.name), p, p.hooks()) for p in tier]], release, Metrics()
    )
    if framework.vote(BY_VERB["jobEnqueueable"], job) == Vote.REJECT:
        return False
    if release.admission_follows_vote:
        framework.notify(BY_VERB["jobEnqueued"], job)
    return True


RES_1CPU = {"cpu": "1", "memory": "1G"}


@pytest.mark.parametrize("order", [("pgA", "pgB"), ("pgB", "pgA")], ids=["pgA first", "pgB first"])
def test_job_enqueued_on_other_plugins_reject(order: tuple[str, str]) -> None:
    ssn = make_session({"ns1": {"rq1": quota(RES_1CPU)}})
    tier = [open_plugin(ssn), RejecterPlugin("pgA")]
    jobs = {name: make_job(name, RES_1CPU, namespace="ns1", phase="Pending") for name in order}
    admitted = {name: enqueue(tier, jobs[name]) for name in order}
    assert admitted == {"pgA": False, "pgB": True}


def test_before_1_16_a_co_tier_reject_still_consumes_quota() -> None:
    # v1.15.1 recorded the usage inside JobEnqueueableFn as soon as it permitted: pgA, rejected
    # by the next plugin, still holds ns1's only CPU and pgB is refused (fixed by 5be98af37).
    ssn = make_session({"ns1": {"rq1": quota(RES_1CPU)}}, version=(1, 15))
    tier = [open_plugin(ssn), RejecterPlugin("pgA")]
    pg_a = make_job("pgA", RES_1CPU, namespace="ns1", phase="Pending")
    pg_b = make_job("pgB", RES_1CPU, namespace="ns1", phase="Pending")
    assert enqueue(tier, pg_a, ssn.release) is False
    assert enqueue(tier, pg_b, ssn.release) is False


# --- accounting within and across sessions ----------------------------------------------------


def test_enqueues_are_cumulative_within_a_session_1_16() -> None:
    plugin = open_plugin(make_session({"ns1": {"rq1": quota({"cpu": "3"})}}))
    first, second = (make_job(n, {"cpu": "2"}, namespace="ns1") for n in ("a", "b"))
    assert answer_of(plugin.job_enqueueable(first)) == Vote.PERMIT
    # the vote alone records nothing
    assert answer_of(plugin.job_enqueueable(second)) == Vote.PERMIT
    plugin.job_enqueued(first)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.REJECT


def test_enqueues_are_cumulative_within_a_session_1_15() -> None:
    # The vote itself records the usage; the framework's implicit job_enqueued adds nothing more.
    plugin = open_plugin(make_session({"ns1": {"rq1": quota({"cpu": "4"})}}, version=(1, 15)))
    first, second = (make_job(n, {"cpu": "2"}, namespace="ns1") for n in ("a", "b"))
    assert answer_of(plugin.job_enqueueable(first)) == Vote.PERMIT
    plugin.job_enqueued(first)
    assert plugin.pending_resources == {"ns1": {"cpu": Fraction(2)}}
    assert answer_of(plugin.job_enqueueable(second)) == Vote.PERMIT  # 2 + 2 <= 4
    assert (
        answer_of(plugin.job_enqueueable(make_job("c", {"cpu": "1m"}, namespace="ns1")))
        == Vote.REJECT
    )


def test_a_rejected_vote_records_nothing_1_15() -> None:
    plugin = open_plugin(make_session({"ns1": {"rq1": quota({"cpu": "1"})}}, version=(1, 15)))
    assert (
        answer_of(plugin.job_enqueueable(make_job("big", {"cpu": "2"}, namespace="ns1")))
        == Vote.REJECT
    )
    assert plugin.pending_resources == {}


def test_a_fresh_session_resets_the_accounting() -> None:
    ssn = make_session({"ns1": {"rq1": quota({"cpu": "2"})}})
    first, second = (make_job(n, {"cpu": "2"}, namespace="ns1") for n in ("a", "b"))
    plugin = open_plugin(ssn)
    plugin.job_enqueued(first)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.REJECT
    assert answer_of(open_plugin(ssn).job_enqueueable(second)) == Vote.PERMIT
    plugin.on_session_open(ssn)
    assert answer_of(plugin.job_enqueueable(second)) == Vote.PERMIT


def test_pending_is_per_namespace_and_holds_the_full_min_resources() -> None:
    ssn = make_session({"ns1": {"q": quota({"cpu": "2"})}, "ns2": {"q": quota({"cpu": "2"})}})
    plugin = open_plugin(ssn)
    plugin.job_enqueued(make_job("a", {"cpu": "2", "memory": "1Gi"}, namespace="ns1"))
    plugin.job_enqueued(make_job("n", {"cpu": "2"}, namespace="no-quota"))  # never had a quota
    plugin.job_enqueued(make_job("b", None, namespace="ns2"))
    assert plugin.pending_resources == {"ns1": {"cpu": Fraction(2), "memory": Fraction(2**30)}}
    assert (
        answer_of(plugin.job_enqueueable(make_job("c", {"cpu": "2"}, namespace="ns2")))
        == Vote.PERMIT
    )


# --- the comparison ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("min_resources", "quotas", "expected"),
    [
        ({"cpu": "1"}, {"q": quota({"cpu": "2"}, used={"cpu": "1"})}, Vote.PERMIT),
        ({"cpu": "1001m"}, {"q": quota({"cpu": "2"}, used={"cpu": "1"})}, Vote.REJECT),
        # Exact: 0.1 + 0.2 == 0.3 (a float sum would exceed it).
        ({"cpu": "200m"}, {"q": quota({"cpu": "300m"}, used={"cpu": "100m"})}, Vote.PERMIT),
        ({"memory": "1Gi"}, {"q": quota({"memory": "1073741824"})}, Vote.PERMIT),
        ({"memory": "1Gi"}, {"q": quota({"memory": "1G"})}, Vote.REJECT),
        # Names must match exactly: requests.cpu / limits.memory do not constrain cpu / memory.
        (
            {"cpu": "100", "memory": "1Ti"},
            {"q": quota({"requests.cpu": "1", "limits.memory": "1Gi"})},
            Vote.PERMIT,
        ),
        ({"nvidia.com/gpu": "2"}, {"q": quota({"nvidia.com/gpu": "1"})}, Vote.REJECT),
        ({"pods": "11"}, {"q": quota({"pods": "10"})}, Vote.REJECT),
        # used of a name the job does not ask for is irrelevant, even when already over.
        (
            {"cpu": "1"},
            {"q": quota({"cpu": "2", "memory": "1G"}, used={"memory": "5G"})},
            Vote.PERMIT,
        ),
        # Any quota exceeded rejects.
        ({"cpu": "2"}, {"a": quota({"cpu": "10"}), "b": quota({"cpu": "1"})}, Vote.REJECT),
        # A namespace whose quotas were all deleted: nothing to exceed.
        ({"cpu": "2"}, {}, Vote.PERMIT),
    ],
    ids=[
        "used plus request fits",
        "one milli over",
        "exact decimal arithmetic",
        "binary and plain forms compare exactly",
        "1Gi exceeds 1G",
        "requests./limits. names do not match",
        "extended resource",
        "pods",
        "unrequested names ignored",
        "second quota exceeded",
        "empty quota collection",
    ],
)
def test_comparison(
    min_resources: ResourceList, quotas: dict[str, ResourceQuotaStatus], expected: Vote
) -> None:
    plugin = open_plugin(make_session({"ns1": quotas}))
    assert (
        answer_of(plugin.job_enqueueable(make_job("j", min_resources, namespace="ns1"))) == expected
    )


def test_reject_logs_the_podgroup_event_message(caplog: pytest.LogCaptureFixture) -> None:
    plugin = open_plugin(
        make_session({"ns1": {"q": quota({"cpu": "2", "memory": "8G"}, used={"cpu": "1"})}})
    )
    plugin.job_enqueued(make_job("a", {"cpu": "500m"}, namespace="ns1"))
    with caplog.at_level(logging.DEBUG, logger="caldera.plugins.resourcequota"):
        vote = answer_of(
            plugin.job_enqueueable(make_job("b", {"cpu": "1", "memory": "1G"}, namespace="ns1"))
        )
    assert vote == Vote.REJECT
    # "used" is the quota status, without the session's pending 500m; only exceeded names.
    assert (
        "resource quota insufficient, requested: map[cpu:1], used: map[cpu:1], limited: map[cpu:2]"
        in caplog.text
    )
    # At debug, as upstream's klog.V(4): a job held for an hour is not a line every cycle.
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


def test_quota_helpers() -> None:
    a = {"cpu": Fraction(1), "memory": Fraction(5)}
    b = {"cpu": Fraction(2), "pods": Fraction(3)}
    assert quota_add(a, b) == {"cpu": Fraction(3), "memory": Fraction(5), "pods": Fraction(3)}
    assert quota_mask(a, ["cpu", "gpu"]) == {"cpu": Fraction(1)}
    assert quota_less_than_or_equal(a, b) == (True, [])
    assert quota_less_than_or_equal(b, a) == (False, ["cpu"])
    assert quota_less_than_or_equal({"x": Fraction(9)}, a) == (True, [])


def test_a_reject_names_the_quota_and_its_numbers() -> None:
    plugin = open_plugin(make_session({"ns1": {"rq1": quota({"cpu": "3", "memory": "8Gi"})}}))
    first = make_job("a", {"cpu": "2"}, namespace="ns1")
    plugin.job_enqueued(first)
    result = plugin.job_enqueueable(make_job("b", {"cpu": "1500m", "memory": "1Gi"}, "ns1"))
    assert isinstance(result, Explained) and result.answer == Vote.REJECT
    assert result.reason == Reason(
        "quota-exceeded",
        "quota rq1 of namespace ns1: cpu 1500m requested, 2 used or admitted of 3",
    )
