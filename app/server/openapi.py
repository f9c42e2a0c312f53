"""The OpenAPI description of the extender verbs.

Bodies are decoded with msgspec, not through FastAPI's pydantic parameters, so their schemas are
generated from the ``schemas/`` structs named in the extension-point table and attached here. ``openapi/openapi.json`` is the
checked-in copy of ``caldera openapi``; a test fails when the two differ.
"""

from __future__ import annotations

import inspect
from typing import Any

import msgspec

from plugins.api.extension_points import EXTENSION_POINTS, ExtensionPoint
from schemas import responses as rs

REF = "#/components/schemas/{name}"


def components() -> dict[str, Any]:
    kinds: list[type[Any]] = [rs.ErrorResponse]
    for point in EXTENSION_POINTS:
        kinds.append(point.request)
        kinds.extend(point.answers)
    _, comps = msgspec.json.schema_components(kinds, ref_template=REF)
    return dict(sorted(_cleaned(comps).items()))


def _cleaned(schema: Any) -> Any:
    """Every ``description`` (a struct's docstring) as ``inspect.cleandoc`` leaves it: msgspec
    0.23 cleans docstrings and 0.22 keeps their indentation, so the document would depend on the
    version installed (issue 47 item 10: the wheel's ``caldera openapi`` differed from
    openapi/openapi.json)."""
    if isinstance(schema, dict):
        return {
            key: inspect.cleandoc(value)
            if key == "description" and isinstance(value, str)
            else _cleaned(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_cleaned(value) for value in schema]
    return schema


def _ref(kind: type[Any]) -> dict[str, str]:
    return {"$ref": REF.format(name=kind.__name__)}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref(rs.ErrorResponse)}},
    }


def verb_paths() -> dict[str, Any]:
    """The OpenAPI path items of the verbs (their routes are plain ASGI endpoints)."""
    return {f"/{point.verb}": {"post": verb_operation(point)} for point in EXTENSION_POINTS}


def verb_operation(point: ExtensionPoint) -> dict[str, Any]:
    answers, summary = point.answers, point.summary
    answer_schema = _ref(answers[0]) if len(answers) == 1 else {"oneOf": [_ref(a) for a in answers]}
    return {
        "tags": ["extender"],
        "summary": summary.split(":")[0].split(".")[0],
        "description": summary,
        "operationId": point.verb,
        "requestBody": {
            "required": True,
            "description": (
                "Volcano's own body, as its json.Marshal writes it. Only the parts a configured"
                " plugin reads are validated; when none answers this verb, only the envelope."
            ),
            "content": {"application/json": {"schema": _ref(point.request)}},
        },
        "responses": {
            "200": {
                "description": "The decision",
                "content": {"application/json": {"schema": answer_schema}},
            },
            "400": _error(
                "Malformed JSON, a wrong type or a missing required object in what a configured"
                " plugin reads; or broken HTTP framing, and the connection is closed"
            ),
            "408": _error(
                "The head or body did not arrive within CALDERA_HEADER_TIMEOUT_SECONDS /"
                " CALDERA_BODY_TIMEOUT_SECONDS; the connection is closed"
            ),
            "413": _error(f"The body exceeds {point.body_limit}"),
            "431": _error(
                "Request line and headers exceed CALDERA_MAX_HEADER_BYTES; the connection is closed"
            ),
            "500": _error(
                "A hosted plugin failed (the answer names it) or Caldera did; Volcano applies"
                " extender.ignorable"
            ),
        },
    }
