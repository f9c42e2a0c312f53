"""GET /debug/shadow: what the shadow configuration (``caldera serve --shadow FILE``) would have
decided otherwise than the live one, a summary first, then per job, task and queue, each
difference with both configurations' answers and reasons (``app/shadow/service.py``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Request, Response

from app.server.routes.debug import SUBJECT_QUERY
from app.server.routes.json import json_response
from app.server.runtime import runtime_of
from app.shadow.diff import Difference

router = APIRouter(tags=["operations"])
LINES_SHOWN = 20
"""Differences spelled out in the summary (every one is listed under jobs, tasks, queues)."""
KINDS = ("job", "task", "queue")


def _state_line(state: dict[str, Any]) -> list[str]:
    """The shadow not evaluating, and why when the server knows; nothing while it evaluates."""
    if state["status"] == "evaluating":
        return []
    if "problem" in state:
        return [f"the shadow configuration {state['source']} is failing: {state['problem']}"]
    return [f"the shadow configuration {state['source']} is not loaded"]


def _evaluated(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kept sessions the shadow answered calls in (a session is kept, skipped, also while
    its file has not loaded)."""
    return [s for s in sessions if "skipped" not in s and s["compared"]]


def summary(
    state: dict[str, Any], sessions: list[dict[str, Any]], newest: list[Difference]
) -> list[str]:
    lines = _state_line(state)
    evaluated = _evaluated(sessions)
    if not evaluated:
        lines.append("no session evaluated by the shadow yet")
    else:
        last = evaluated[-1]
        calls = sum(last["compared"].values())
        if not newest:
            lines.append(
                f"session {last['session']}: the shadow answered"
                f" {'the' if calls == 1 else 'all'} {_count(calls, 'call')} compared as the"
                " live configuration did"
            )
        else:
            lines.append(
                f"session {last['session']}: {_count(len(newest), 'difference')} in"
                f" {_count(calls, 'call')} compared"
            )
            by_change = Counter((d.verb, d.change, d.kind) for d in newest)
            for (verb, change, kind), n in by_change.items():
                lines.append(f"{verb}: the shadow {change}: {_count(n, kind)}")
            lines += [d.line() for d in newest[:LINES_SHOWN]]
            if len(newest) > LINES_SHOWN:
                lines.append(f"({len(newest) - LINES_SHOWN} more below)")
    if state["droppedSessions"]:
        lines.append(
            f"{_count(state['droppedSessions'], 'session')} dropped: the shadow fell behind the"
            " live verbs"
        )
    failed = {k: v for k, v in state["failures"].items() if v}
    if failed:
        latest = state.get("lastFailure", {}).get("error")
        if latest is not None and latest == state.get("problem"):
            latest = None  # the load error, said on the first line already (issue 47)
        lines.append(
            "shadow failures: "
            + ", ".join(f"{n} {stage}" for stage, n in failed.items())
            + (f" (latest: {latest})" if latest is not None else "")
        )
    return lines


def subject_summary(
    state: dict[str, Any],
    sessions: list[dict[str, Any]],
    kind: str,
    key: str,
    found: list[tuple[int, Difference]],
) -> list[str]:
    """``job=`` or ``task=``: its differences, newest session first. Without one, the shadow
    agrees only if it evaluated a kept session: one that never loaded decided nothing, and
    saying it agrees would be a silent wrong answer (issue 47)."""
    if found:
        return [f"session {number}: {d.line()}" for number, d in found]
    evaluated = _evaluated(sessions)
    if not evaluated:
        return [
            *_state_line(state),
            f"no session evaluated by the shadow yet: it has decided nothing about {kind} {key}",
        ]
    return [
        *_state_line(state),
        f"the shadow decides {kind} {key} as the live configuration does (in the"
        f" {_count(len(evaluated), 'session')} it evaluated among those kept)",
    ]


def _count(n: int, noun: str) -> str:
    """``1 difference``, ``2 differences`` (issue 47 item 10: "1 differences")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def by_subject(differences: list[Difference]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {f"{k}s": {} for k in KINDS}
    for d in differences:
        out[f"{d.kind}s"].setdefault(d.subject, []).append(d.describe())
    return out


@router.get(
    "/debug/shadow",
    summary="What the shadow configuration would decide differently from the live one",
    description=(
        "With ``caldera serve --shadow FILE``: a summary first, the shadow's state (its file,"
        " configuration hash, failures, dropped sessions), the sessions kept, then every"
        " difference of the newest evaluated session by job, task and queue, each with the live"
        " and the shadow answer, plugin and reason. ``job=<namespace>/<name>`` or"
        " ``task=<namespace>/<pod>``: that subject's differences in every kept session."
        " ``diff=1`` adds ``configDiff``: the live file against the shadow file. 404 without a"
        " shadow."
    ),
    responses={
        400: {"description": "both job and task, or not namespace/name"},
        404: {"description": "no shadow configuration"},
    },
    openapi_extra={
        "parameters": [
            *SUBJECT_QUERY,
            {"name": "diff", "in": "query", "required": False, "schema": {"type": "string"},
             "description": "1: add the configuration difference"},
        ]
    },
)  # fmt: skip
async def debug_shadow(request: Request) -> Response:
    shadow = runtime_of(request).shadow
    if shadow is None:
        return json_response(
            {"error": "no shadow configuration: start caldera serve with --shadow FILE"},
            status_code=404,
        )
    job = request.query_params.get("job", "")
    task = request.query_params.get("task", "")
    if job and task:
        return json_response({"error": "give at most one of job= and task="}, status_code=400)
    key, kind = (job, "job") if job else (task, "task")
    if key:
        namespace, _, name = key.partition("/")
        if not namespace or not name or "/" in name:
            return json_response(
                {"error": f"{kind} must be <namespace>/<name>, got {key!r}"}, status_code=400
            )
    sessions, newest = shadow.reports.findings()
    # One view of the shadow's state for the summary and the body: read twice, a load that
    # finished in between would have the summary and "shadow" disagree.
    state = shadow.describe()
    body: dict[str, Any] = {}
    if key:
        found = shadow.reports.differences_of(kind, key)
        body["summary"] = subject_summary(state, sessions, kind, key, found)
        body[kind] = key
        body["differences"] = [{"session": number, **d.describe()} for number, d in found]
    else:
        body["summary"] = summary(state, sessions, newest)
    body["shadow"] = state
    if request.query_params.get("diff", "") not in ("", "0"):
        body["configDiff"] = shadow.config_diff()
    if not key:
        body["sessions"] = sessions
        body.update(by_subject(newest))
    return json_response(body)
