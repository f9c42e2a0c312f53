"""The incremental derivation against the full one: random event streams (seeded), relists of
unchanged, changed, deleted and new objects among them, compared after every session; the
sessions' views unchanged by what came after them; and a relist's store the same as one listed
from scratch."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import pytest

from app.cluster_state import store as store_module
from app.cluster_state.derive import Derived, Settings, derive
from app.cluster_state.incremental import IncrementalDerivation
from app.cluster_state.objects import WatchedPod
from app.cluster_state.overlay import AllocationOverlay
from app.cluster_state.store import ClusterStore
from plugins.pdb.kube import object_key
from schemas.api import TaskInfo, TaskStatus
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import (
    cluster,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    quota,
)

NODES = [f"n{i}" for i in range(5)]
NODE_NAMES = [*NODES, "ghost"]
"""Pods may be bound to a node that is not watched."""
GROUPS = [f"pg{i}" for i in range(5)]
QUEUES = ["q0", "q1", "default"]
CLASSES = ["pc0", "pc1"]
PODS = 24


def state(snapshot: OnSessionOpenRequest) -> bytes:
    """Every field of a snapshot, in order, nodes' tasks included (``NodeInfo.Tasks`` is no
    struct field)."""
    nodes = {name: info.Tasks for name, info in (snapshot.Nodes or {}).items()}
    return msgspec.json.encode((snapshot, nodes))


class World:
    """A small cluster driven at random: every kind of object, added, changed and removed;
    relists; allocations and evictions through the overlay; time passing (placements expire)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 0.0
        self.store = ClusterStore(Settings(scheduler_names=("volcano",), default_queue="default"))
        self.store.overlay = AllocationOverlay(ttl_seconds=30.0, clock=lambda: self.now)
        self.sent: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in self.makers()}
        """What the API server holds, per collection: the objects last sent to the store."""
        self.version = 0

    def stamped(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as the API server serves it: a new resourceVersion (and a UID) for each
        version of it; now and then none, which a relist cannot tell unchanged."""
        meta = obj["metadata"]
        if self.rng.random() < 0.1:
            meta.pop("resourceVersion", None)
            return obj
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        meta.setdefault("uid", f"uid-{object_key(obj)}")
        return obj

    def a_pod(self, i: int) -> dict[str, Any]:
        r = self.rng
        phase = r.choice(["Pending", "Pending", "Running", "Running", "Succeeded", "Failed", ""])
        annotations = {"volcano.sh/task-priority": str(r.randint(0, 9))} if r.random() < 0.2 else {}
        return pod(
            f"p{i}",
            namespace=r.choice(["ns1", "ns1", "ns2"]),
            uid=f"uid-{i}" if r.random() < 0.9 else f"uid-{i}-{r.randint(0, 3)}",
            phase=phase,
            node=r.choice(NODE_NAMES) if phase != "Pending" or r.random() < 0.3 else "",
            group=r.choice([*GROUPS, None]),
            requests={"cpu": f"{r.randint(0, 3)}", "memory": f"{r.randint(0, 2)}Gi"},
            scheduler=r.choice(["volcano", "volcano", "volcano", "other"]),
            deleting=r.random() < 0.1,
            priority=r.choice([None, 0, 5]),
            annotations=annotations,
        )

    def a_node(self, name: str) -> dict[str, Any]:
        cpu = self.rng.choice(["2", "4", "6"])
        return node(name, {"cpu": cpu, "memory": "8Gi", "pods": str(self.rng.choice([3, 10]))})

    def a_podgroup(self, name: str) -> dict[str, Any]:
        r = self.rng
        return podgroup(
            name,
            namespace=r.choice(["ns1", "ns2"]),
            queue=r.choice([*QUEUES, "", "missing"]),
            min_member=r.randint(0, 3),
            priority_class=r.choice([*CLASSES, "", "unknown"]),
        )

    def a_priority_class(self, name: str) -> dict[str, Any]:
        return priority_class(
            name, self.rng.randint(0, 100), global_default=self.rng.random() < 0.3
        )

    def makers(self) -> dict[str, Callable[[], dict[str, Any]]]:
        return {name: self._stamping(make) for name, make in self._makers(self.rng).items()}

    def _stamping(self, make: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        return lambda: self.stamped(make())

    def _makers(self, r: random.Random) -> dict[str, Callable[[], dict[str, Any]]]:
        return {
            "pods": lambda: self.a_pod(r.randrange(PODS)),
            "nodes": lambda: self.a_node(r.choice(NODES)),
            "podgroups": lambda: self.a_podgroup(r.choice(GROUPS)),
            "queues": lambda: queue(r.choice(QUEUES), weight=r.randint(1, 3)),
            "quotas": lambda: quota(
                r.choice(["a", "b"]), r.choice(["ns1", "ns2"]), {"cpu": str(r.randint(1, 9))}
            ),
            "priority_classes": lambda: self.a_priority_class(r.choice(CLASSES)),
        }

    def populate(self) -> None:
        for name, make in self.makers().items():
            objects = [make() for _ in range(PODS if name == "pods" else 4)]
            self.relisted(name, {object_key(o): o for o in objects})

    def relisted(self, name: str, listed: dict[str, dict[str, Any]]) -> None:
        """A (re)list of ``listed``; the store then holds what a store listed from scratch
        would (an object kept as unchanged is the one the list says)."""
        self.store.stores()[name].replace(listed)
        self.sent[name] = listed
        fresh = ClusterStore(self.store.settings).stores()[name]
        fresh.replace(copy.deepcopy(listed))
        held = self.store.stores()[name].freeze()
        assert sorted(held) == sorted(fresh.freeze())
        assert msgspec.json.encode({k: held[k] for k in sorted(held)}) == msgspec.json.encode(
            {k: fresh.freeze()[k] for k in sorted(held)}
        )

    def relist(self, name: str) -> None:
        """Each object the store was sent, listed again unchanged (a fresh mapping, as a new
        list brings) or gone; and new versions of some objects (changed or added)."""
        r = self.rng
        listed = {
            key: copy.deepcopy(obj) for key, obj in self.sent[name].items() if r.random() < 0.7
        }
        for _ in range(r.randint(0, 4)):
            obj = self.makers()[name]()
            listed[object_key(obj)] = obj
        self.relisted(name, listed)

    def event(self) -> None:
        r = self.rng
        roll = r.random()
        name = r.choice(["pods"] * 6 + ["nodes", "podgroups"] * 2 + list(self.makers()))
        target = self.store.stores()[name]
        if roll < 0.6:
            obj = self.makers()[name]()
            target.upsert(object_key(obj), obj)
            self.sent[name][object_key(obj)] = obj
        elif roll < 0.85:
            keys = list(target.freeze())
            if keys:
                key = r.choice(keys)
                target.delete(key)
                self.sent[name].pop(key, None)
        elif roll < 0.9:
            self.relist(name)
        else:
            self.now += r.choice([1.0, 40.0])

    def session_calls(self) -> None:
        """allocate/deallocate for some of the session's pods, then onSessionClose."""
        r = self.rng
        pods = list(self.store.pods.freeze().values())
        unbound = [w for w in pods if not w.node_name]
        for _ in range(r.randint(0, 4)):
            if not pods:
                break
            watched = r.choice(unbound if unbound and r.random() < 0.6 else pods)
            uid = watched.pod.metadata.uid if watched.pod.metadata else ""
            status = r.choice(
                [TaskStatus.Allocated] * 3
                + [TaskStatus.Releasing, TaskStatus.Pending, TaskStatus.Running]
            )
            on = r.choice(NODES) if r.random() < 0.9 else "ghost"
            task = TaskInfo(UID=uid, Status=status, NodeName=on)
            if status in (TaskStatus.Allocated, TaskStatus.Running):
                self.store.allocate(task)
            else:
                self.store.deallocate(task)
        self.store.close_session()


def _check_session(world: World) -> Derived:
    objects = world.store.freeze()
    placements = world.store.overlay.placements()
    for _ in range(world.rng.choice([0, 0, 0, 2])):
        world.event()  # while the derivation runs (compare mode's worker thread): not seen
    full = derive(objects, world.store.settings, placements)
    incremental = world.store.derivation.derive(objects, placements)
    assert state(incremental.snapshot) == state(full.snapshot)
    assert incremental.settled == full.settled
    world.store.overlay.settle(incremental.settled)
    return incremental


@pytest.mark.parametrize("log_min", [1024, 4], ids=["logs followed", "logs restarting"])
@pytest.mark.parametrize("seed", range(12))
def test_the_incremental_derivation_is_the_full_one(
    seed: int, log_min: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After every session of a random event stream, the same snapshot as deriving from scratch
    (byte for byte, order included), and the same settled placements; and every session's view
    is still what it was when it opened, however later sessions were derived."""
    monkeypatch.setattr(store_module, "CHANGE_LOG_MIN", log_min)
    world = World(seed)
    world.populate()
    opened: list[tuple[OnSessionOpenRequest, bytes]] = []
    for _ in range(40):
        for _ in range(world.rng.choice([0, 0, 1, 2, 5])):
            world.event()
        derived = _check_session(world)
        opened.append((derived.snapshot, state(derived.snapshot)))
        world.session_calls()
        for snapshot, then in opened[-3:]:
            assert state(snapshot) == then
    for snapshot, then in opened:
        assert state(snapshot) == then


def test_a_derivation_on_plain_objects_compares_them_object_by_object() -> None:
    """Objects not frozen from a store carry no change log: the views are compared."""
    derivation = IncrementalDerivation()
    first = cluster(
        pods=[pod("p", group="pg", phase="Running", node="n1", requests={"cpu": "1"})],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    assert state(derivation.derive(first).snapshot) == state(derive(first).snapshot)
    second = cluster(
        pods=[pod("p", group="pg", phase="Running", node="n1", requests={"cpu": "2"})],
        nodes=[node("n1")],
        podgroups=[podgroup("pg")],
        queues=[queue("q1")],
    )
    assert state(derivation.derive(second).snapshot) == state(derive(second).snapshot)


def _steady_store(pods: int = 40) -> ClusterStore:
    store = ClusterStore()
    store.nodes.replace({f"n{i}": node(f"n{i}") for i in range(4)})
    store.queues.replace({"q1": queue("q1")})
    store.podgroups.replace({f"ns1/pg{j}": podgroup(f"pg{j}") for j in range(4)})
    store.pods.replace(
        {
            f"ns1/p{i}": pod(
                f"p{i}",
                group=f"pg{i % 4}",
                phase="Running",
                node=f"n{i % 4}",
                requests={"cpu": "1"},
            )
            for i in range(pods)
        }
    )
    return store


REBUILT_CASES = [
    ("nothing changed", lambda s: None, {"tasks": 0, "nodes": 0, "jobs": 0}),
    (
        "one pod changed",
        lambda s: s.pods.upsert(
            "ns1/p5", pod("p5", group="pg1", phase="Running", node="n1", requests={"cpu": "2"})
        ),
        {"tasks": 1, "nodes": 1, "jobs": 1},
    ),
    (
        "one pod moved to another node and job",
        lambda s: s.pods.upsert(
            "ns1/p5", pod("p5", group="pg2", phase="Running", node="n2", requests={"cpu": "1"})
        ),
        {"tasks": 1, "nodes": 2, "jobs": 2},
    ),
    ("one pod deleted", lambda s: s.pods.delete("ns1/p5"), {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("one node changed", lambda s: s.nodes.upsert("n3", node("n3")), {"tasks": 0, "nodes": 1, "jobs": 0}),
    ("one podgroup changed", lambda s: s.podgroups.upsert("ns1/pg0", podgroup("pg0", min_member=3)), {"tasks": 0, "nodes": 0, "jobs": 1}),
    ("a placement", lambda s: _place(s, "ns1-p5"), {"tasks": 1, "nodes": 1, "jobs": 1}),
]  # fmt: skip


def _place(store: ClusterStore, uid: str) -> None:
    store.allocate(TaskInfo(UID=uid, Status=TaskStatus.Releasing, NodeName="n1"))
    store.deallocate(TaskInfo(UID=uid, Status=TaskStatus.Releasing, NodeName="n1"))
    store.close_session()


@pytest.mark.parametrize(
    ("change", "rebuilt"), [c[1:] for c in REBUILT_CASES], ids=[c[0] for c in REBUILT_CASES]
)
def test_a_session_rebuilds_only_what_changed(
    change: Callable[[ClusterStore], None], rebuilt: dict[str, int]
) -> None:
    store = _steady_store()
    store.open_session()
    assert store.derivation.rebuilt == {"tasks": 40, "nodes": 4, "jobs": 4}
    change(store)
    store.open_session()
    assert store.derivation.rebuilt == rebuilt


def _listed_pods(pods: int = 40) -> dict[str, dict[str, Any]]:
    """The steady store's pods as a new list serves them (fresh mappings, same versions)."""
    return {
        f"ns1/p{i}": pod(
            f"p{i}", group=f"pg{i % 4}", phase="Running", node=f"n{i % 4}", requests={"cpu": "1"}
        )
        for i in range(pods)
    }


def _with(listed: dict[str, dict[str, Any]], key: str, **meta: str) -> dict[str, dict[str, Any]]:
    obj = listed[key]
    obj["metadata"].update(meta)
    return listed


def _without_versions(listed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    for obj in listed.values():
        del obj["metadata"]["resourceVersion"]
    return listed


def _changed_p6(listed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    listed["ns1/p6"] = pod("p6", group="pg2", phase="Succeeded", node="n2", requests={"cpu": "1"})
    return _with(listed, "ns1/p6", resourceVersion="2")


def _deleted_p5(listed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    del listed["ns1/p5"]
    return listed


def _added_p40(listed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    listed["ns1/p40"] = pod("p40", group="pg0", phase="Running", node="n0", requests={"cpu": "1"})
    return listed


RELIST_CASES = [
    ("nothing changed", lambda listed: listed, 0, {"tasks": 0, "nodes": 0, "jobs": 0}),
    ("one pod changed", _changed_p6, 1, {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("one pod deleted", _deleted_p5, 0, {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("one pod added", _added_p40, 1, {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("one pod changed, a later version listed before the watch saw it",
     lambda listed: _with(listed, "ns1/p5", resourceVersion="9"), 1,
     {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("one pod recreated under its name: a new UID",
     lambda listed: _with(listed, "ns1/p5", uid="ns1-p5-again"), 1,
     {"tasks": 1, "nodes": 1, "jobs": 1}),
    ("changed, deleted and added at once",
     lambda listed: _added_p40(_deleted_p5(_changed_p6(listed))), 2,
     {"tasks": 3, "nodes": 3, "jobs": 3}),
    ("no resourceVersion: every object decoded, none can be told unchanged", _without_versions, 40,
     {"tasks": 40, "nodes": 4, "jobs": 4}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("relisted", "decoded", "rebuilt"),
    [c[1:] for c in RELIST_CASES],
    ids=[c[0] for c in RELIST_CASES],
)
def test_a_relist_decodes_and_rebuilds_only_what_changed(
    relisted: Callable[[dict[str, dict[str, Any]]], dict[str, dict[str, Any]]],
    decoded: int,
    rebuilt: dict[str, int],
) -> None:
    """An object listed again at the version (and UID) the store holds is kept as decoded
    and left out of the change log; the session after the relist rebuilds only what changed,
    and is what a derivation from scratch gives."""
    store = _steady_store()
    store.open_session()
    decodes: list[str] = []
    decode = store.pods._decode

    def counted(obj: Mapping[str, Any]) -> WatchedPod:
        decodes.append(object_key(obj))
        return decode(obj)

    store.pods._decode = counted
    listed = relisted(_listed_pods())
    store.pods.replace(listed)
    assert len(decodes) == decoded
    assert list(store.pods.freeze()) == [
        *(key for key in _listed_pods() if key in listed),
        *(key for key in listed if key not in _listed_pods()),
    ]  # the held objects keep their places, new ones come last
    objects = store.freeze()
    derived = store.derivation.derive(objects)
    assert store.derivation.rebuilt == rebuilt
    assert state(derived.snapshot) == state(derive(objects).snapshot)


def test_a_failed_derivation_starts_the_next_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _steady_store()
    store.open_session()
    store.pods.upsert("ns1/p5", pod("p5", group="pg1", phase="Running", node="n1"))

    def failing(*args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(IncrementalDerivation, "_build_job", failing)
    with pytest.raises(RuntimeError):
        store.open_session()
    monkeypatch.undo()
    objects = store.freeze()
    again = store.derivation.derive(objects)
    assert store.derivation.rebuilt["tasks"] == 40
    assert state(again.snapshot) == state(derive(objects).snapshot)
