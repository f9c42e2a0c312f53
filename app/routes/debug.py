"""GET /debug/session: what the open session holds, in counts and names only — never pod specs,
env values or annotations, which can hold secrets."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.routes.json import json_response

router = APIRouter(tags=["operations"])


@router.get("/debug/session", summary="The open session: age, snapshot counts, active plugins")
async def debug_session(request: Request) -> Response:
    state = request.app.state
    sessions = state.sessions
    release: dict[str, object] = {"volcanoVersion": sessions.release.name}
    if state.config.infers_release:
        release["volcanoVersionInferredFrom"] = (
            state.extender.release_watch.inferred or "nothing yet (no onSessionOpen seen)"
        )
    current = sessions.current
    if current is None:
        return json_response(
            {
                "open": False,
                **release,
                "activePluginsWithoutSession": sessions.without_snapshot.active_plugins(),
            }
        )
    return json_response({"open": True, **release, **current.describe()})
