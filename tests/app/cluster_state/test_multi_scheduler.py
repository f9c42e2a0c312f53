"""Volcano's multi-scheduler mode (pkg/scheduler/cache/util.go): the hash ring against
stathat.com/c/consistent v1.0.0 itself (Go), the environment vc-scheduler reads, and the
three filters of the derivation (pods, PodGroups, nodes), full and incremental."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.cluster_state.derive import Settings, derive
from app.cluster_state.multi_scheduler import (
    MAX_SCHEDULERS,
    Consistent,
    MultiScheduler,
    from_env,
    problems,
    warnings,
)
from app.cluster_state.overlay import AllocationOverlay
from app.cluster_state.store import ClusterStore
from tests.app.cluster_state import test_incremental
from tests.app.cluster_state.objects import cluster, node, pod, podgroup, queue

GO_RING = Path(__file__).resolve().parents[2] / "conformance" / "consistent"


# --- the ring is Go's ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def go_rings() -> list[dict[str, Any]]:
    """tests/conformance/consistent: stathat.com/c/consistent v1.0.0's own assignments."""
    if shutil.which("go") is None:
        pytest.fail("Go is not installed: the ring cannot be checked against the Go package")
    out = subprocess.run(
        ["go", "run", "."],
        cwd=GO_RING,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GOFLAGS": "-mod=readonly"},
        timeout=600,
    )
    rings: list[dict[str, Any]] = json.loads(out.stdout)
    return rings


def test_the_ring_gives_every_key_the_replica_go_gives_it(go_rings: list[dict[str, Any]]) -> None:
    assert len(go_rings) == 16
    for ring in go_rings:
        members = [f"{ring['base']}-{i}" for i in range(ring["replicas"])]
        ours = Consistent(members)
        one_by_one = Consistent()
        for member in members:  # as vc-scheduler builds it: Add, one member at a time
            one_by_one.add(member)
        keys = [*ring["get"], *(ring["empty"] or [])]
        assert len(keys) > 600
        got = {k: ours.get(k) for k in ring["get"]}
        assert got == ring["get"], (ring["base"], ring["replicas"])
        assert {k: one_by_one.get(k) for k in ring["get"]} == ring["get"]
        assert all(ours.get(k) is None for k in ring["empty"] or [])
        if ring["replicas"] > 1:  # the keys are spread, not all on one replica
            assert len(set(got.values())) > 1


# --- the environment: getMultiSchedulerInfo ---------------------------------------------------

ENV_CASES: list[tuple[str, dict[str, str], tuple[str, int] | str | None]] = [
    ("unset: no ring", {}, None),
    ("only exactly 'true' enables it", {"MULTI_SCHEDULER_ENABLE": "True"}, None),
    ("'1' does not either", {"MULTI_SCHEDULER_ENABLE": "1", "SCHEDULER_POD_NAME": "vc-0"}, None),
    (
        "three replicas",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "3", "SCHEDULER_POD_NAME": "vc-1"},
        ("vc-1", 3),
    ),
    (
        "the base is the name up to its last '-'",
        {
            "MULTI_SCHEDULER_ENABLE": "true",
            "SCHEDULER_NUM": "2",
            "SCHEDULER_POD_NAME": "volcano-scheduler-1",
        },
        ("volcano-scheduler-1", 2),
    ),
    (
        "SCHEDULER_NUM unset counts 1",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_POD_NAME": "vc-0"},
        ("vc-0", 1),
    ),
    (
        "SCHEDULER_NUM that Atoi refuses (a space) counts 1",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": " 4", "SCHEDULER_POD_NAME": "vc-0"},
        ("vc-0", 1),
    ),
    (
        "SCHEDULER_NUM with a sign, as Atoi reads it",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "+4", "SCHEDULER_POD_NAME": "vc-0"},
        ("vc-0", 4),
    ),
    (
        "SCHEDULER_NUM negative: an empty ring",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "-2", "SCHEDULER_POD_NAME": "vc-0"},
        ("vc-0", -2),
    ),
    (
        "SCHEDULER_NUM beyond int64 counts 1",
        {
            "MULTI_SCHEDULER_ENABLE": "true",
            "SCHEDULER_NUM": "99999999999999999999",
            "SCHEDULER_POD_NAME": "vc-0",
        },
        ("vc-0", 1),
    ),
    (
        "a pod name without '-': vc-scheduler panics",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "2", "SCHEDULER_POD_NAME": "vc"},
        "has no '-'",
    ),
    (
        "no pod name: vc-scheduler panics",
        {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "2"},
        "has no '-'",
    ),
    (
        "a ring beyond what Caldera follows",
        {
            "MULTI_SCHEDULER_ENABLE": "true",
            "SCHEDULER_NUM": str(MAX_SCHEDULERS + 1),
            "SCHEDULER_POD_NAME": "vc-0",
        },
        "rings of up to",
    ),
]


@pytest.mark.parametrize(
    ("environ", "want"), [c[1:] for c in ENV_CASES], ids=[c[0] for c in ENV_CASES]
)
def test_the_environment_vc_scheduler_reads(
    environ: dict[str, str], want: tuple[str, int] | str | None
) -> None:
    mode_problems = problems("cluster", environ) + problems("compare", environ)
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want):
            from_env(environ)
        assert len(mode_problems) == 2 and all(want in p for _, p in mode_problems)
        assert problems("snapshot", environ) == []  # Volcano's snapshot is this replica's
        return
    assert mode_problems == []
    multi = from_env(environ)
    if want is None:
        assert multi is None
        return
    assert multi is not None
    assert (multi.pod_name, multi.schedulers) == want
    base = multi.pod_name.rpartition("-")[0]
    assert list(multi.ring.members) == [f"{base}-{i}" for i in range(max(want[1], 0))]


WARN_CASES = [
    ("a StatefulSet's pod: a member", "vc-1", 2, False),
    ("a Deployment's pod: no member, it holds nothing", "vc-7d9f-abcde", 2, True),
    ("a replica beyond SCHEDULER_NUM", "vc-2", 2, True),
]


@pytest.mark.parametrize(
    ("pod_name", "count", "warned"), [c[1:] for c in WARN_CASES], ids=[c[0] for c in WARN_CASES]
)
def test_a_replica_the_ring_does_not_name_is_warned_about(
    pod_name: str, count: int, warned: bool
) -> None:
    environ = {
        "MULTI_SCHEDULER_ENABLE": "true",
        "SCHEDULER_NUM": str(count),
        "SCHEDULER_POD_NAME": pod_name,
    }
    said = warnings("cluster", environ)
    assert bool(said) == warned
    assert warnings("snapshot", environ) == []
    if warned:
        assert pod_name in said[0] and "holds no pod" in said[0]
        multi = from_env(environ)
        assert multi is not None and not multi.member
        state = derive(
            cluster(pods=[pod("pod-c", group="pg-b")], nodes=[node("node-a")]),
            Settings(multi_scheduler=multi),
        ).snapshot
        assert state.Nodes == {} and state.Jobs == {}


# --- the derivation's filters -------------------------------------------------------------

RING = Consistent(["vc-0", "vc-1"])
ME = MultiScheduler("vc-0", 2, RING)
MINE = {"node": "node-a", "owner": "job-a", "pod": "pod-c", "podgroup": "pg-b"}
THEIRS = {"node": "node-b", "owner": "job-b", "pod": "pod-a", "podgroup": "pg-a"}


def test_the_names_the_tables_use_are_where_they_say() -> None:
    assert {k: RING.get(v) for k, v in MINE.items()} == dict.fromkeys(MINE, "vc-0")
    assert {k: RING.get(v) for k, v in THEIRS.items()} == dict.fromkeys(THEIRS, "vc-1")


def owned(obj: dict[str, Any], *owners: str) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": o, "uid": f"u-{o}"}
        for o in owners
    ]
    return obj


def _pod(name: str, owners: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    return owned(pod(name, group="pg-b", **fields), *owners)


POD_CASES: list[tuple[str, dict[str, Any], Settings, bool]] = [
    ("ours by its name", _pod("pod-c"), Settings(multi_scheduler=ME), True),
    ("the other replica's by its name", _pod("pod-a"), Settings(multi_scheduler=ME), False),
    (
        "the owner's name decides, not the pod's",
        _pod("pod-a", ("job-a",)),
        Settings(multi_scheduler=ME),
        True,
    ),
    (
        "an owner of the other replica's, though the pod's name is ours",
        _pod("pod-c", ("job-b",)),
        Settings(multi_scheduler=ME),
        False,
    ),
    (
        "only the first owner reference counts",
        _pod("pod-c", ("job-b", "job-a")),
        Settings(multi_scheduler=ME),
        False,
    ),
    (
        "the other replica's, on a node of ours: kept (it uses our node)",
        _pod("pod-a", phase="Running", node="node-a"),
        Settings(multi_scheduler=ME),
        True,
    ),
    (
        "the other replica's, on a node of theirs",
        _pod("pod-a", phase="Running", node="node-b"),
        Settings(multi_scheduler=ME),
        False,
    ),
    (
        "another scheduler's, on a node of ours",
        _pod("pod-a", phase="Running", node="node-a", scheduler="default-scheduler"),
        Settings(multi_scheduler=ME),
        True,
    ),
    (
        "another scheduler's, ours by name, unbound",
        _pod("pod-c", scheduler="default-scheduler"),
        Settings(multi_scheduler=ME),
        False,
    ),
    (
        "ours, on a node of theirs: kept, on no node",
        _pod("pod-c", phase="Running", node="node-b"),
        Settings(multi_scheduler=ME),
        True,
    ),
    ("without a ring: every pod of the scheduler", _pod("pod-a"), Settings(), True),
    (
        "a replica whose ring is empty (SCHEDULER_NUM=0) keeps nothing",
        _pod("pod-c", phase="Running", node="node-a"),
        Settings(multi_scheduler=MultiScheduler("vc-0", 0, Consistent())),
        False,
    ),
]


@pytest.mark.parametrize(
    ("obj", "settings", "kept"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_which_pods_the_replica_keeps(obj: dict[str, Any], settings: Settings, kept: bool) -> None:
    objects = cluster(
        pods=[obj],
        nodes=[node("node-a"), node("node-b")],
        podgroups=[podgroup("pg-b")],
        queues=[queue("q1")],
    )
    state = derive(objects, settings).snapshot
    assert state.Jobs is not None and state.Nodes is not None
    tasks = state.Jobs["ns1/pg-b"].Tasks if "ns1/pg-b" in state.Jobs else {}
    assert (obj["metadata"]["uid"] in (tasks or {})) == kept
    on = obj["spec"].get("nodeName")
    if kept and on in state.Nodes:
        assert f"ns1/{obj['metadata']['name']}" in (state.Nodes[on].Tasks or {})
    if settings.multi_scheduler is ME:
        assert sorted(state.Nodes) == ["node-a"]  # the node of theirs is not held


PODGROUP_CASES = [
    ("ours by its name", podgroup("pg-b"), True),
    ("the other replica's by its name", podgroup("pg-a"), False),
    ("the owner's name decides", owned(podgroup("pg-a"), "job-a"), True),
    ("an owner of the other replica's", owned(podgroup("pg-b"), "job-b"), False),
]


@pytest.mark.parametrize(
    ("obj", "kept"), [c[1:] for c in PODGROUP_CASES], ids=[c[0] for c in PODGROUP_CASES]
)
def test_which_podgroups_the_replica_keeps(obj: dict[str, Any], kept: bool) -> None:
    name = obj["metadata"]["name"]
    # The pods are ours either way (on our node): a job without its PodGroup is not sent.
    objects = cluster(
        pods=[pod("pod-c", group=name, phase="Running", node="node-a")],
        nodes=[node("node-a")],
        podgroups=[obj],
        queues=[queue("q1")],
    )
    state = derive(objects, Settings(multi_scheduler=ME)).snapshot
    assert state.Jobs is not None and state.Nodes is not None
    assert (f"ns1/{name}" in state.Jobs) == kept
    assert "ns1/pod-c" in (state.Nodes["node-a"].Tasks or {})
    assert f"ns1/{name}" in (derive(objects).snapshot.Jobs or {})  # without a ring: kept


# --- the incremental derivation keeps what the full one keeps ---------------------------------


class RingWorld(test_incremental.World):
    """The incremental derivation's random world, seen by replica vc-0 of two, with owner
    references on some pods and PodGroups."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        ring = MultiScheduler("n-0", 2, Consistent(["n-0", "n-1"]))
        self.store = ClusterStore(Settings(("volcano",), "default", ring))
        self.store.overlay = AllocationOverlay(ttl_seconds=30.0, clock=lambda: self.now)

    def a_pod(self, i: int) -> dict[str, Any]:
        obj = super().a_pod(i)
        if self.rng.random() < 0.4:
            owned(obj, self.rng.choice(["job-a", "job-b", "job-c"]))
        return obj

    def a_podgroup(self, name: str) -> dict[str, Any]:
        obj = super().a_podgroup(name)
        if self.rng.random() < 0.4:
            owned(obj, self.rng.choice(["job-a", "job-b", "job-c"]))
        return obj


@pytest.mark.parametrize("seed", range(6))
def test_the_incremental_derivation_follows_the_ring_as_the_full_one(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(test_incremental.store_module, "CHANGE_LOG_MIN", 4 if seed % 2 else 1024)
    world = RingWorld(seed)
    world.populate()
    held = dropped = 0
    for _ in range(30):
        for _ in range(world.rng.choice([0, 1, 2, 5])):
            world.event()
        derived = test_incremental._check_session(world)  # incremental == full, byte for byte
        objects = world.store.freeze()
        nodes = derived.snapshot.Nodes or {}
        held += len(nodes)
        names = {w.node.metadata.name for w in objects.nodes.values() if w.node.metadata}
        dropped += len(names - set(nodes))
        world.session_calls()
    assert held and dropped  # the ring did split the nodes
