"""The OpenAPI description of the extender verbs.

Bodies are decoded with msgspec, not through FastAPI's pydantic parameters, so their schemas are
generated from the ``schemas/`` structs and attached by hand. ``openapi/openapi.json`` is the
checked-in copy of ``caldera openapi``; a test fails when the two differ.
"""

from __future__ import annotations

from typing import Any

import msgspec

from schemas import requests as rq
from schemas import responses as rs

REF = "#/components/schemas/{name}"

VERB_BODIES: dict[str, tuple[type[Any], list[type[Any]], str]] = {
    "onSessionOpen": (rq.OnSessionOpenRequest, [rs.Empty],
                      "Open a session: the whole-cluster snapshot. Builds fresh plugin instances."),
    "onSessionClose": (rq.OnSessionCloseRequest, [rs.Empty], "End the open session."),
    "predicate": (rq.PredicateRequest,
                  [rs.PredicateResponse, rs.PredicateResponseV18, rs.PredicateResponseV16],
                  "Does the task fit the node? First failure of the hosted plugins. The answer's"
                  " shape follows volcanoVersion: {status, code} (1.10+), {status: [{Code,"
                  " Reason}]} (1.8–1.9), {errorMessage} (1.6–1.7)."),
    "prioritize": (rq.PrioritizeRequest, [rs.PrioritizeResponse],
                   "Score candidate nodes: the hosted plugins' scores summed per node."),
    "preemptable": (rq.EvictRequest, [rs.EvictResponse],
                    "Which evictees may be preempted; victims are echoed exactly as received."),
    "reclaimable": (rq.EvictRequest, [rs.EvictResponse],
                    "Which evictees may be reclaimed; victims are echoed exactly as received."),
    "jobEnqueueable": (rq.JobRequest, [rs.JobEnqueueableResponse],
                       "May the job be enqueued: 1 permit, 0 abstain, -1 reject."),
    "jobEnqueued": (rq.JobRequest, [rs.Empty], "The job was enqueued (Volcano 1.16+)."),
    "queueOverused": (rq.QueueOverusedRequest, [rs.QueueOverusedResponse],
                      "Is the queue overused (true skips it)."),
    "jobReady": (rq.JobRequest, [rs.JobReadyResponse], "Is the job ready to be committed."),
    "allocate": (rq.EventHandlerRequest, [rs.EventHandlerResponse],
                 "A task was allocated; an error message rolls the allocation back."),
    "deallocate": (rq.EventHandlerRequest, [rs.EventHandlerResponse],
                   "A task was deallocated or evicted."),
}  # fmt: skip


def components() -> dict[str, Any]:
    kinds: list[type[Any]] = [rs.ErrorResponse]
    for request, answers, _ in VERB_BODIES.values():
        kinds.append(request)
        kinds.extend(answers)
    _, comps = msgspec.json.schema_components(kinds, ref_template=REF)
    return dict(sorted(comps.items()))


def _ref(kind: type[Any]) -> dict[str, str]:
    return {"$ref": REF.format(name=kind.__name__)}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref(rs.ErrorResponse)}},
    }


def verb_paths() -> dict[str, Any]:
    """The OpenAPI path items of the verbs (their routes are plain ASGI endpoints)."""
    return {f"/{verb}": {"post": verb_operation(verb)} for verb in VERB_BODIES}


def verb_operation(verb: str) -> dict[str, Any]:
    request, answers, summary = VERB_BODIES[verb]
    answer_schema = _ref(answers[0]) if len(answers) == 1 else {"oneOf": [_ref(a) for a in answers]}
    return {
        "tags": ["extender"],
        "summary": summary.split(":")[0].split(".")[0],
        "description": summary,
        "operationId": verb,
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _ref(request)}},
        },
        "responses": {
            "200": {
                "description": "The decision",
                "content": {"application/json": {"schema": answer_schema}},
            },
            "400": _error("Malformed JSON, a wrong type or a missing required object"),
            "413": _error("The body exceeds maxRequestBytes"),
            "500": _error("A hosted plugin failed; Volcano applies extender.ignorable"),
        },
    }
