"""Every field Kubernetes sends in a Pod or Node (and Volcano in a PodGroup or Queue) is
readable through its view, decoded with the body or when read (schemas/lazy.py), and reads back
as the JSON it came from. tests/fixtures/k8s/ holds a pod and a node carrying every key the views
declare, in the API server's JSON."""

from __future__ import annotations

import json
import typing
from typing import Any

import msgspec
import pytest

from schemas import api, k8s
from schemas.fieldref import _structs_in
from schemas.lazy import ABSENT, Lazy, lazy_attributes, raw
from tests.examples import FIXTURES
from tests.schemas.walk import declared

POD = json.loads((FIXTURES / "k8s" / "pod.json").read_text())
NODE = json.loads((FIXTURES / "k8s" / "node.json").read_text())
POD_GROUP = {
    "metadata": {"name": "train", "namespace": "team-a", "ownerReferences": [{"kind": "Job"}]},
    "spec": {"minMember": 2, "minTaskMember": {"worker": 2}, "queue": "q", "priorityClassName": "high",
             "minResources": {"cpu": "4"}, "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
             "subGroupPolicy": [{"name": "g", "subGroupSize": 2}]},
    "status": {"phase": "Running", "running": 2, "succeeded": 1, "failed": 1,
               "conditions": [{"type": "Scheduled", "status": "True", "transitionID": "t"}]},
    "Version": "v1beta1",
}  # fmt: skip
QUEUE = {
    "metadata": {"name": "q"},
    "spec": {"weight": 2, "capability": {"cpu": "8"}, "reclaimable": True,
             "guarantee": {"resource": {"cpu": "1"}}, "deserved": {"cpu": "4"}, "parent": "root",
             "priority": 3, "affinity": {
                 "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g1"]},
                 "nodeGroupAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ["g2"]}},
             "type": "cluster", "dequeueStrategy": "traverse",
             "extendClusters": [{"name": "c", "weight": 1, "capacity": {"cpu": "2"}}]},
    "status": {"state": "Open", "unknown": 1, "pending": 2, "running": 3, "inqueue": 4,
               "completed": 5, "allocated": {"cpu": "1"}, "reservation": {"nodes": ["n"]}},
}  # fmt: skip
SAMPLES = {
    "pod": (POD, k8s.Pod),
    "node": (NODE, k8s.Node),
    "podgroup": (POD_GROUP, api.PodGroup),
    "queue": (QUEUE, api.Queue),
}
# Keys these views declare that the samples leave out on purpose.
NOT_IN_SAMPLES = {
    # the v1.6–v1.13 flattened shape, tested in tests/schemas/test_examples.py
    "PodGroup": {"name", "namespace", "uid", "creationTimestamp", "labels", "annotations", "Spec",
                 "Status"},
    "Queue": {"name", "uid", "creationTimestamp", "labels", "annotations", "Spec", "Status"},
    "ObjectMeta": {"generateName", "resourceVersion", "generation", "creationTimestamp",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers",
                   "managedFields", "annotations"},  # the pod's metadata carries them all
}  # fmt: skip


Seen = dict[type[msgspec.Struct], set[str]]


def collect(raw_json: Any, kind: type[msgspec.Struct], seen: Seen) -> None:
    """The declared keys ``raw_json`` carries, per view, through lazy attributes too."""
    seen.setdefault(kind, set())
    hints = typing.get_type_hints(kind)
    lazies = {lazy.raw_name: lazy for lazy in lazy_attributes(kind).values()}
    for f in msgspec.structs.fields(kind):
        if f.encode_name not in raw_json:
            continue
        seen[kind].add(f.encode_name)
        target = lazies[f.name].kind if f.name in lazies else hints[f.name]
        value = raw_json[f.encode_name]
        for struct in _structs_in(target):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    collect(item, struct, seen)


def test_the_samples_carry_every_declared_key() -> None:
    seen: Seen = {}
    for sample, kind in SAMPLES.values():
        collect(sample, kind, seen)
    assert {k8s.Toleration, k8s.Taint, k8s.NodeSelectorRequirement, api.Affinity} <= set(seen)
    for kind, keys in seen.items():
        missing = declared(kind) - keys - NOT_IN_SAMPLES.get(kind.__name__, set())
        assert not missing, f"{kind.__module__}.{kind.__name__}: no sample carries {missing}"


def read_back(value: Any, raw_json: Any, where: str) -> None:
    """``value`` (a view, or what an attribute returned) holds exactly ``raw_json``."""
    if isinstance(value, msgspec.Struct):
        lazies = {lazy.raw_name: lazy for lazy in lazy_attributes(type(value)).values()}
        for f in msgspec.structs.fields(value):
            if f.encode_name not in raw_json:
                continue
            lazy: Lazy[Any] | None = lazies.get(f.name)
            attribute = lazy.name if lazy is not None else f.name
            read_back(getattr(value, attribute), raw_json[f.encode_name], f"{where}.{attribute}")
    elif isinstance(value, list) and value and isinstance(value[0], msgspec.Struct):
        assert len(value) == len(raw_json), where
        for i, (item, raw_item) in enumerate(zip(value, raw_json, strict=True)):
            read_back(item, raw_item, f"{where}[{i}]")
    else:
        assert msgspec.to_builtins(value) == raw_json, where


@pytest.mark.parametrize("name", SAMPLES)
def test_every_field_reads_back_as_sent(name: str) -> None:
    sample, kind = SAMPLES[name]
    body = bytearray(json.dumps(sample).encode())  # the server decodes from a buffer
    read_back(msgspec.json.decode(body, type=kind), sample, name)


def test_the_legacy_shapes_read_the_new_fields() -> None:
    group = msgspec.json.decode(
        b'{"name":"pg","Spec":{"MinMember":2,"NetworkTopology":{"mode":"soft"}},'
        b'"Status":{"Phase":"Running","Conditions":[{"Type":"Scheduled"}]}}',
        type=api.PodGroup,
    )
    assert group.spec.network_topology == {"mode": "soft"}
    assert group.status.conditions == [{"Type": "Scheduled"}]
    queue = msgspec.json.decode(
        b'{"name":"q","Spec":{"Weight":1,"ExtendClusters":[{"Name":"c"}],"type":"cluster"},'
        b'"Status":{"State":"Open","Completed":2,"Reservation":{"Nodes":null}}}',
        type=api.Queue,
    )
    assert queue.spec.extend_clusters == [{"Name": "c"}] and queue.spec.type == "cluster"
    assert queue.status.completed == 2 and queue.status.reservation == {"Nodes": None}


@pytest.mark.parametrize(
    ("name", "view", "attribute"),
    [
        ("absent", k8s.PodSpec(), "tolerations"),
        ("null", msgspec.json.decode(b'{"tolerations":null}', type=k8s.PodSpec), "tolerations"),
        ("absent in a snake-case view", api.QueueStatus(), "reservation"),
    ],
)
def test_an_absent_or_null_lazy_field_reads_none(name: str, view: Any, attribute: str) -> None:
    assert getattr(view, attribute) is None


def test_absent_raw_fields_share_one_object_and_encode_as_valid_json() -> None:
    spec = msgspec.json.decode(b"{}", type=k8s.PodSpec)
    assert spec.tolerationsRaw is ABSENT and spec.affinityRaw is ABSENT
    assert json.loads(msgspec.json.encode(spec))["tolerations"] is None  # valid JSON: null
    assert msgspec.json.decode(msgspec.json.encode(spec), type=k8s.PodSpec).tolerations is None
    assert json.loads(msgspec.json.encode(api.QueueStatus()))["reservation"] is None


def test_a_view_built_in_code_round_trips() -> None:
    spec = k8s.PodSpec(
        tolerationsRaw=raw([k8s.Toleration(key="a", operator="Exists")]),
        nodeSelectorRaw=raw({"zone": "a"}),
    )
    assert spec.tolerations == [k8s.Toleration(key="a", operator="Exists")]
    again = msgspec.json.decode(msgspec.json.encode(spec), type=k8s.PodSpec)
    assert again.nodeSelector == {"zone": "a"} and again.tolerations == spec.tolerations


def test_a_malformed_lazy_field_names_itself_when_read() -> None:
    spec = msgspec.json.decode(b'{"tolerations":[{"key":7}]}', type=k8s.PodSpec)
    with pytest.raises(msgspec.ValidationError, match=r"in `PodSpec.tolerations`"):
        _ = spec.tolerations
