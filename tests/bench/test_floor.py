"""bench/floor.py's pydantic shapes are its msgspec shapes, field for field."""

from __future__ import annotations

import msgspec
import pytest

from bench import floor
from tests.examples import CAPTURED_BODIES

BODIES = {
    verb: f"{verb}.request.json"
    for verb in ("onSessionOpen", "predicate", "prioritize", "jobEnqueueable", "jobReady")
}


@pytest.mark.parametrize("verb", sorted(BODIES))
def test_pydantic_decodes_a_body_to_what_msgspec_does(verb: str) -> None:
    body = (CAPTURED_BODIES / "volcano-1.15" / BODIES[verb]).read_bytes()
    narrow = msgspec.to_builtins(msgspec.json.decode(body, type=floor.M_TYPES[verb]))
    assert floor.P_TYPES[verb].model_validate_json(body).model_dump() == narrow


def test_a_raw_field_is_any_and_every_model_ignores_unknown_keys() -> None:
    evict = floor.P_TYPES["preemptable"]
    assert evict.model_fields["evictees"].annotation == list[floor.Any] | None
    assert all(model.model_config["extra"] == "ignore" for model in floor.P_TYPES.values())
    assert floor.pydantic_model(floor.MTask) is floor.pydantic_model(floor.MTask)  # built once
