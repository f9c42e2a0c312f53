"""GET /debug/session: what the open session holds, in counts and names only — never pod specs,
env values or annotations, which can hold secrets."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from app.server.routes.json import json_response
from app.server.runtime import runtime_of

SUBJECT_QUERY: list[dict[str, Any]] = [
    {"name": "job", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "<namespace>/<name> of a Volcano job or PodGroup"},
    {"name": "task", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "<namespace>/<name> of a pod"},
]  # fmt: skip
"""The ``job`` and ``task`` query parameters of the routes that tell about one subject
(``/debug/explain``, ``/debug/shadow``): read by the route itself, so described here."""

router = APIRouter(tags=["operations"])


@router.get("/debug/session", summary="The open session: age, snapshot counts, active plugins")
async def debug_session(request: Request) -> Response:
    state = runtime_of(request)
    served = state.served
    sessions = served.sessions
    common: dict[str, object] = {"volcanoVersion": sessions.release.name}
    if served.config.infers_release:
        common["volcanoVersionInferredFrom"] = (
            state.extender.release_watch.inferred or "nothing yet (no onSessionOpen seen)"
        )
    events = state.events
    if events is not None:
        common["podGroupEvents"] = events.describe()
    session_state = state.session_state
    if session_state is not None:
        common["sessionState"] = session_state.describe()
    if (identifiers := state.extender.identifiers) is not None:
        common["identifiers"] = identifiers.describe()
    current = sessions.current
    if current is None:
        return json_response(
            {
                "open": False,
                **common,
                "activePluginsWithoutSession": sessions.without_snapshot.active_plugins(),
            }
        )
    return json_response({"open": True, **common, **current.describe()})


@router.get(
    "/debug/explain",
    summary="Why a job or task waits: each hosted plugin's verdict, reason and numbers",
    description=(
        "Reads the decision record of the last sessions (``explainSessions``, default 3). With"
        " ``job=<namespace>/<name>`` (a PodGroup, or a Volcano job whose PodGroup is named"
        " ``<name>-<uid>``): the plugins' jobEnqueueable and jobReady verdicts, the job's queue's"
        " queueOverused verdicts, and its tasks. With ``task=<namespace>/<pod>``: predicate"
        " failures aggregated by plugin and reason with node counts, each plugin's best-scored"
        " node, the evictees each plugin vetoed for it, and the preemptors a plugin spared it"
        " from. ``summary`` comes first, most decisive reason first. 400 without exactly one of"
        " job and task; 404 when no recorded session decided anything about it."
    ),
    responses={
        400: {"description": "neither or both of job and task, or not namespace/name"},
        404: {"description": "nothing recorded about it in the sessions kept"},
    },
    openapi_extra={"parameters": SUBJECT_QUERY},
)  # fmt: skip
async def debug_explain(request: Request) -> Response:
    # The parameters are read here, not declared, so that a bad one is this route's 400
    # with a sentence, not FastAPI's generic 422.
    job = request.query_params.get("job", "")
    task = request.query_params.get("task", "")
    record = runtime_of(request).record
    if bool(job) == bool(task):
        return _error("give exactly one of job=<namespace>/<name> or task=<namespace>/<pod>", 400)
    key = job or task
    namespace, _, name = key.partition("/")
    if not namespace or not name or "/" in name:
        return _error(f"{'job' if job else 'task'} must be <namespace>/<name>, got {key!r}", 400)
    found = record.explain_job(key) if job else record.explain_task(key)
    if found is None:
        kept = record.describe()
        return json_response(
            {"error": not_found(record.enabled, "job" if job else "task", key, kept),
             "record": kept},
            status_code=404,
        )  # fmt: skip
    return json_response(found)


def _error(message: str, status: int) -> Response:
    return json_response({"error": message}, status_code=status)


def not_found(enabled: bool, what: str, key: str, kept: dict[str, Any]) -> str:
    """Why the record has nothing about ``key``: off, nothing recorded yet, or not in what is
    kept (the sessions Volcano opened since, newest last)."""
    if not enabled:
        return "the decision record is off (explainSessions: 0)"
    sessions = len(kept["sessions"])
    if sessions == 0:
        return (
            f"no decision about {what} {key}: no session has opened yet (Caldera records"
            " decisions per session, from Volcano's first onSessionOpen on)"
        )
    return (
        f"no decision about {what} {key} in the {sessions}"
        f" session{'' if sessions == 1 else 's'} kept"
    )
