"""GET /capabilities: the bodies this Caldera reads, asked by a Volcano extender that may send
identifiers instead of objects (docs/proposals/extender-identifiers.md; the patched plugin in
protocol/volcano-identifiers asks it once per process, at a session's open, and again after a
failed call).

``sessionState: cluster`` holds the objects the identifiers name, so it answers
``{"bodies": ["objects", "identifiers"], "batchPredicate": true}``; every other mode reads
Volcano's objects only and answers ``{"bodies": ["objects"], "batchPredicate": false}``, which the
patched plugin takes as "call me as today". Stock Volcano never asks."""

from __future__ import annotations

import msgspec
from fastapi import APIRouter, Request, Response

from app.identifiers import CLUSTER_CAPABILITIES, OBJECTS_ONLY
from app.server.runtime import runtime_of

router = APIRouter(tags=["extender"])


@router.get(
    "/capabilities",
    summary="The extender bodies Caldera reads (identifiers in sessionState cluster only)",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {"bodies": ["objects", "identifiers"], "batchPredicate": True}
                }
            }
        }
    },
)
async def capabilities(request: Request) -> Response:
    extender = runtime_of(request).extender
    answer = CLUSTER_CAPABILITIES if extender.identifiers is not None else OBJECTS_ONLY
    return Response(msgspec.json.encode(answer), media_type="application/json")
