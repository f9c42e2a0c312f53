"""Compare and cluster mode watch what Volcano's cache watches with the scheduler pod's service
account, which the sidecar shares: each release overlay whose release sends allocate/deallocate
(the modes need them) must install a vc-scheduler ClusterRole that lists and watches every
collection Caldera watches (nodes, pods, podgroups, queues, resourcequotas, priorityclasses),
bound to the service account the scheduler's pod runs as, so Caldera needs no role of its own
for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cluster_state.store import COLLECTIONS
from plugins.api.release import Release
from tests.deploy.kustomize import load_documents, overlay_urls
from tests.deploy.test_kubernetes import OVERLAYS, release_of
from tests.deploy.upstream import volcano_file

SESSION_STATE_OVERLAYS = [
    o
    for o in OVERLAYS
    if Release.of(tuple(map(int, release_of(o).split(".")))).has_verb("allocate")  # type: ignore[arg-type]
]


def _grants(rules: list[dict[str, list[str]]], group: str, plural: str) -> set[str]:
    verbs: set[str] = set()
    for rule in rules:
        groups, resources = rule.get("apiGroups", []), rule.get("resources", [])
        if (group in groups or "*" in groups) and (plural in resources or "*" in resources):
            verbs.update(rule.get("verbs", []))
    return verbs


def test_there_is_an_overlay_to_check() -> None:
    assert SESSION_STATE_OVERLAYS


def test_the_collections_are_the_ones_volcanos_cache_builds_the_snapshot_from() -> None:
    assert {c.plural for c in COLLECTIONS.values()} == {
        "nodes", "pods", "podgroups", "queues", "resourcequotas", "priorityclasses",
    }  # fmt: skip


@pytest.mark.parametrize("overlay", SESSION_STATE_OVERLAYS, ids=lambda o: o.name)
def test_the_scheduler_role_lists_and_watches_every_collection(overlay: Path) -> None:
    [url] = overlay_urls(overlay)
    documents = load_documents(volcano_file(url))
    [role] = [
        d
        for d in documents
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "volcano-scheduler"
    ]
    missing: dict[str, list[str]] = {}
    for c in COLLECTIONS.values():
        verbs = _grants(role["rules"], c.group, c.plural)
        lacking = set() if "*" in verbs else {"list", "watch"} - verbs
        if lacking:
            missing[f"{c.group or 'core'}/{c.plural}"] = sorted(lacking)
    assert missing == {}


@pytest.mark.parametrize("overlay", SESSION_STATE_OVERLAYS, ids=lambda o: o.name)
def test_the_role_is_bound_to_the_account_the_sidecar_runs_as(overlay: Path) -> None:
    """The sidecar is a container of vc-scheduler's pod (sidecar/scheduler-sidecar.yaml), so
    it runs as the pod's service account: the one the role must be bound to."""
    [url] = overlay_urls(overlay)
    documents = load_documents(volcano_file(url))
    [deployment] = [
        d
        for d in documents
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "volcano-scheduler"
    ]
    pod = deployment["spec"]["template"]["spec"]
    account = pod.get("serviceAccountName") or pod["serviceAccount"]  # Volcano's: the old key
    namespace = deployment["metadata"]["namespace"]
    bound = [
        d
        for d in documents
        if d["kind"] == "ClusterRoleBinding"
        and d["roleRef"]["kind"] == "ClusterRole"
        and d["roleRef"]["name"] == "volcano-scheduler"
    ]
    subjects = [s for b in bound for s in b.get("subjects", [])]
    assert {"kind": "ServiceAccount", "name": account, "namespace": namespace} in [
        {k: s.get(k) for k in ("kind", "name", "namespace")} for s in subjects
    ]


def test_the_sidecar_patch_keeps_the_scheduler_pods_account() -> None:
    patch = (OVERLAYS[0].parent / "sidecar" / "scheduler-sidecar.yaml").read_text()
    assert "serviceAccount" not in patch
