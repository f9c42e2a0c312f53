"""Compare mode (and later cluster mode) watches what Volcano's cache watches with the scheduler
pod's service account, which the sidecar shares: each release overlay from 1.13 on (the modes
need allocate/deallocate) must install a vc-scheduler ClusterRole that lists and watches every
collection Caldera watches, so Caldera needs no role of its own for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cluster_state.store import COLLECTIONS
from tests.deploy.kustomize import load_documents, overlay_urls
from tests.deploy.test_kubernetes import OVERLAYS, release_of
from tests.deploy.upstream import volcano_file

SESSION_STATE_OVERLAYS = [
    o for o in OVERLAYS if tuple(map(int, release_of(o).split("."))) >= (1, 13)
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
