"""``caldera explain``: ask a running Caldera why a job or task waits, and print it for a person.

Reads ``GET /debug/explain`` (``app/routes/debug.py``) from the verb listener (loopback in the
sidecar: run it with ``kubectl exec`` into the scheduler pod, or through a port-forward).
"""

from __future__ import annotations

from typing import Any

import httpx


class ExplainError(Exception):
    """Caldera could not be asked, or knows nothing about it; the message says which."""


def default_url(host: str, port: int, tls: bool) -> str:
    """The verb listener as seen from the same pod: a wildcard address is reached on loopback."""
    reachable = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    if ":" in reachable:
        reachable = f"[{reachable}]"
    return f"{'https' if tls else 'http'}://{reachable}:{port}"


def fetch(url: str, kind: str, key: str, timeout: float = 5.0) -> dict[str, Any]:
    """The explanation of ``kind`` (job or task) ``key`` from the Caldera at ``url``."""
    try:
        response = httpx.get(
            f"{url.rstrip('/')}/debug/explain", params={kind: key}, timeout=timeout
        )
    except httpx.HTTPError as exc:
        raise ExplainError(f"cannot reach Caldera at {url}: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        raise ExplainError(
            f"{url}/debug/explain answered {response.status_code} without JSON"
            " (is this Caldera, and a version with /debug/explain?)"
        ) from None
    if response.status_code != 200:
        raise ExplainError(str(body.get("error", body)))
    if not isinstance(body, dict):
        raise ExplainError(f"{url}/debug/explain answered {body!r}")
    return body


def render(document: dict[str, Any]) -> list[str]:
    """Short: the summary (most decisive first), then each plugin's verdict in a line."""
    session = document.get("session", {})
    subject = (
        f"job {document['job']}"
        if "job" in document and "task" not in document
        else (f"task {document.get('task')}")
    )
    lines = [f"{subject} (session {session.get('session')}, opened {session.get('openedAt')}):"]
    lines += [f"  {line}" for line in document.get("summary", [])]
    verdicts = document.get("verdicts", []) + document.get("queueVerdicts", [])
    if verdicts:
        lines.append("verdicts:")
        for v in verdicts:
            why = f" — {v['message']}" if "message" in v else ""
            lines.append(f"  {v['verb']} {v['plugin']}: {v['answer']}{why}")
    for task in document.get("tasks", []):
        predicate = task.get("predicate")
        if predicate is not None:
            lines.append(f"  task {task['task']}: {predicate['summary']}")
    if document.get("tasksNotShown"):
        lines.append(f"  ({document['tasksNotShown']} more tasks: --json has the shown ones only)")
    return lines
