"""The watched objects decoded as Volcano's cache holds them (app/cluster_state/objects.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.cluster_state.objects import decode_queue
from schemas.api import Queue
from tests.app.cluster_state.objects import queue


def _without(obj: dict[str, Any], section: str, key: str) -> dict[str, Any]:
    trimmed = dict(obj)
    trimmed[section] = {k: v for k, v in obj[section].items() if k != key}
    return trimmed


@pytest.mark.parametrize(
    ("name", "api_object"),
    [
        ("a new queue: no status written yet", {**queue("q"), "status": None}),
        ("status without a reservation", _without(queue("q"), "status", "reservation")),
        ("spec from YAML without a guarantee", queue("q")),
        ("spec and status as Go's client writes them", queue("q", guarantee={})),
    ],
)
def test_queue_struct_fields_are_present_as_go_encodes_them(
    name: str, api_object: dict[str, Any]
) -> None:
    """``scheduling.QueueSpec.Guarantee`` and ``QueueStatus.Reservation`` are structs: Volcano's
    snapshot always carries ``{}`` for them, whatever the API server stored."""
    decoded = decode_queue({k: v for k, v in api_object.items() if v is not None})
    sent = msgspec.json.decode(
        b'{"metadata": {"name": "q"}, "spec": {"weight": 1, "guarantee": {}},'
        b' "status": {"state": "Open", "reservation": {}}}',
        type=Queue,
    )
    assert decoded.spec.guarantee == sent.spec.guarantee, name
    assert decoded.status.reservation == sent.status.reservation == {}, name


def test_a_queue_guarantee_and_reservation_are_kept() -> None:
    api_object = queue("q", guarantee={"cpu": "2"})
    api_object["status"]["reservation"] = {"nodes": ["n1"]}
    decoded = decode_queue(api_object)
    assert decoded.spec.guarantee is not None
    assert decoded.spec.guarantee.resource == {"cpu": "2"}
    assert decoded.status.reservation == {"nodes": ["n1"]}
