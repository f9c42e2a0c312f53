"""A cluster-mode session's state handed to the shadow as a delta (app/shadow/state.py): what
the delta carries for each kind of change, that applying it rebuilds the state exactly (maps in
the same order), and that a delta that does not apply yields nothing until a whole state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from app.cluster_state.derive import derive
from app.cluster_state.encode import SECTIONS, as_sent, encode_state
from app.shadow.state import FULL, DeltaDecoder, DeltaEncoder, StateDelta
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.objects import cluster
from tests.app.cluster_state.test_compare import matching_objects


def sent(value: Any) -> bytes:
    """msgspec's JSON of a state or a delta, with its derived nodes' tasks written as
    encode_state writes them (``as_sent``)."""
    if getattr(value, "Nodes", None):
        nodes = {key: as_sent(node) for key, node in value.Nodes.items()}
        value = msgspec.structs.replace(value, Nodes=nodes)
    return msgspec.json.encode(value)


def base() -> OnSessionOpenRequest:
    return derive(cluster(**matching_objects())).snapshot


def with_map(
    state: OnSessionOpenRequest, section: str, new: dict[str, Any]
) -> OnSessionOpenRequest:
    return msgspec.structs.replace(state, **{section: new})


def replaced_job(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    jobs = dict(state.Jobs or {})
    uid = next(iter(jobs))
    jobs[uid] = msgspec.structs.replace(jobs[uid], Priority=jobs[uid].Priority + 1)
    return with_map(state, "Jobs", jobs)


def removed_node(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    return with_map(state, "Nodes", {k: v for k, v in (state.Nodes or {}).items() if k != "node2"})


def added_queue(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    queues = dict(state.Queues or {})
    queues["q2"] = msgspec.structs.replace(queues["q1"], Name="q2", UID="q2")
    return with_map(state, "Queues", queues)


def reordered_nodes(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    return with_map(state, "Nodes", dict(reversed(list((state.Nodes or {}).items()))))


def unchanged(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    return msgspec.structs.replace(state)  # new maps' container, the same objects


def namespaces_rebuilt(state: OnSessionOpenRequest) -> OnSessionOpenRequest:
    """What every derivation does to the namespace infos: equal copies."""
    copies = {k: msgspec.structs.replace(v) for k, v in (state.NamespaceInfo or {}).items()}
    assert copies, "the objects have a namespace with a quota"
    return with_map(state, "NamespaceInfo", copies)


def delta_of(data: bytes) -> StateDelta:
    return msgspec.json.decode(data, type=StateDelta)


CHANGES: list[tuple[str, Callable[[OnSessionOpenRequest], OnSessionOpenRequest], dict[str, Any]]]
CHANGES = [
    ("nothing changed: nothing but the numbers", unchanged, {}),
    ("a job replaced: that job only", replaced_job, {"Jobs": 1}),
    ("namespace infos built again, equal: nothing", namespaces_rebuilt, {}),
    ("a node gone: its key", removed_node, {"removed": {"Nodes": ["node2"]}}),
    ("a queue added: it, last", added_queue, {"Queues": 1}),
    (
        "nodes in another order: the order",
        reordered_nodes,
        {"order": {"Nodes": ["node2", "node1"]}},
    ),
]


@pytest.mark.parametrize(
    ("change", "carried"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_delta_carries_what_changed_and_applies_to_the_same_state(
    change: Callable[[OnSessionOpenRequest], OnSessionOpenRequest], carried: dict[str, Any]
) -> None:
    encoder, decoder = DeltaEncoder(), DeltaDecoder()
    first = base()
    data = encoder.encode(first)
    assert (delta_of(data).number, delta_of(data).base) == (1, FULL)
    assert sent(delta_of(data)) == data
    before = sent(first)
    held = decoder.apply(data)
    assert held is not None and sent(held) == before

    second = change(first)
    data = encoder.encode(second)
    delta = delta_of(data)
    assert (delta.number, delta.base) == (2, 1)
    assert sent(delta) == data  # written a piece at a time, it is the JSON
    sizes = {s: len(getattr(delta, s)) for s in ("Jobs", "Nodes", "Queues", "NamespaceInfo")}
    assert {s: n for s, n in sizes.items() if n} == {
        k: v for k, v in carried.items() if k not in ("removed", "order")
    }
    assert delta.removed == carried.get("removed", {})
    assert delta.order == carried.get("order", {})

    applied = decoder.apply(data)
    assert applied is not None
    assert sent(applied) == sent(second)
    # Neither side changed what the earlier session holds.
    assert sent(first) == before
    assert sent(held) == before


def test_a_delta_on_a_state_not_held_gives_nothing_until_a_whole_state() -> None:
    encoder, decoder = DeltaEncoder(), DeltaDecoder()
    first, second = base(), replaced_job(base())
    decoder.apply(encoder.encode(first))
    encoder.encode(second)  # lost on the way
    third = removed_node(second)
    assert decoder.apply(encoder.encode(third)) is None
    # Still nothing held: a later delta does not apply either.
    assert decoder.apply(encoder.encode(third)) is None
    encoder.full_next()  # what the process's FullState asks for
    data = encoder.encode(third)
    assert delta_of(data).base == FULL
    applied = decoder.apply(data)
    assert applied is not None and sent(applied) == sent(third)
    # And deltas apply again from there.
    fourth = added_queue(third)
    applied = decoder.apply(encoder.encode(fourth))
    assert applied is not None and sent(applied) == sent(fourth)


def test_a_state_encoded_entry_by_entry_is_the_body_encoded_whole() -> None:
    for state in (base(), added_queue(removed_node(base())), OnSessionOpenRequest()):
        assert encode_state(state) == sent(
            msgspec.structs.replace(
                state,
                Jobs=state.Jobs or {},
                Nodes=state.Nodes or {},
                Queues=state.Queues or {},
                NamespaceInfo=state.NamespaceInfo or {},
            )
        )


def test_the_encoder_stops_after_each_entry_it_encodes() -> None:
    """``between`` runs once per entry encoded, whole state or delta: where the sending thread
    waits while the live side is in a session (app/shadow/service.py)."""
    state = base()
    entries = sum(len(getattr(state, section) or {}) for section in SECTIONS)
    calls: list[int] = []
    encoder = DeltaEncoder()
    encoder.encode(state, lambda: calls.append(1))
    assert len(calls) == entries == encoder.changed
    calls.clear()
    encoder.encode(replaced_job(state), lambda: calls.append(1))
    assert len(calls) == encoder.changed == 1
