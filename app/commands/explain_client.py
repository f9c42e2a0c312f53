"""``caldera explain``: ask a running Caldera why a job or task waits, and print it for a person.

Reads ``GET /debug/explain`` (``app/server/routes/debug.py``) from the verb listener (loopback in
the sidecar: run it with ``kubectl exec`` into the scheduler pod, or through a port-forward).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from plugins.api.extension_points import Verb


class ExplainError(Exception):
    """Caldera could not be asked, or knows nothing about it; the message says which."""


def default_url(host: str, port: int, tls: bool) -> str:
    """The verb listener as seen from the same pod: a wildcard address is reached on loopback."""
    reachable = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    if ":" in reachable:
        reachable = f"[{reachable}]"
    return f"{'https' if tls else 'http'}://{reachable}:{port}"


def get_debug(url: str, path: str, query: dict[str, str], timeout: float = 5.0) -> dict[str, Any]:
    """``GET <url><path>?<query>`` of a running Caldera's debug endpoint, as a JSON object.

    The standard library's client, not httpx: this runs from the installed wheel and the image,
    whose runtime dependencies carry no HTTP client of their own (httpx is a test dependency).
    """
    if not url.startswith(("http://", "https://")):
        raise ExplainError(f"--url must be an http:// or https:// URL, not {url!r}")
    target = f"{url.rstrip('/')}{path}"
    if query:
        target += "?" + urllib.parse.urlencode(query)
    try:
        with urllib.request.urlopen(target, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExplainError(f"cannot reach Caldera at {url}: {reason}") from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise ExplainError(
            f"{url}{path} answered {status} without JSON (is this Caldera, and a version"
            f" with {path}?)"
        ) from None
    if status != 200:
        raise ExplainError(str(body.get("error", body) if isinstance(body, dict) else body))
    if not isinstance(body, dict):
        raise ExplainError(f"{url}{path} answered {body!r}")
    return body


def fetch(url: str, kind: str, key: str, timeout: float = 5.0) -> dict[str, Any]:
    """The explanation of ``kind`` (job or task) ``key`` from the Caldera at ``url``."""
    return get_debug(url, "/debug/explain", {kind: key}, timeout)


def count(n: int, noun: str) -> str:
    """``1 more task``, ``2 more tasks`` (issue 47: "1 more tasks"); the server's summaries use
    ``app/server/routes/shadow.py``'s, which the CLI does not import (it would bring FastAPI)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
        predicate = task.get(Verb.PREDICATE)
        if predicate is not None:
            lines.append(f"  task {task['task']}: {predicate['summary']}")
    if document.get("tasksNotShown"):
        more = count(document["tasksNotShown"], "more task")
        lines.append(f"  ({more}: --json has the shown ones only)")
    return lines
