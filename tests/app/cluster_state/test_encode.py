"""A derived state written as Volcano's JSON (app/cluster_state/encode.py) reads back as the same
state: what ``serve --record`` keeps and the shadow is sent in cluster mode."""

from __future__ import annotations

import msgspec

from app.cluster_state.compare import compare
from app.cluster_state.encode import encode_state
from app.cluster_state.session_objects import SessionObjects
from schemas.requests import OnSessionOpenRequest
from tests.app.cluster_state.test_session_objects import PENDING, derived


def test_a_derived_state_reads_back_as_itself_node_tasks_included() -> None:
    """A derived node holds its tasks decoded, not as the raw bytes a snapshot's node keeps:
    they were written as ``null``, and a recorded or shadowed plugin saw no task on any node."""
    state = derived()
    back = msgspec.json.decode(bytes(encode_state(state)), type=OnSessionOpenRequest)
    assert compare(back, state) == []
    assert list(back.Nodes["node1"].Tasks or {}) == ["ns1/runner-0"]  # type: ignore[index]


def test_a_node_changed_in_a_session_is_written_as_changed() -> None:
    objects = SessionObjects(derived(), "s1")
    objects.apply(*PENDING, "node2", "Allocated")
    state = OnSessionOpenRequest(Jobs=objects.jobs, Nodes=objects.nodes)
    back = msgspec.json.decode(bytes(encode_state(state)), type=OnSessionOpenRequest)
    assert compare(back, state) == []
    assert list(back.Nodes["node2"].Tasks or {}) == ["ns1/worker-0"]  # type: ignore[index]
