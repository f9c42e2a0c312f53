"""``caldera shadow`` and ``caldera explain NAME --shadow``: ask a running Caldera what its shadow
configuration would decide differently (``GET /debug/shadow``), and print it for a person."""

from __future__ import annotations

from typing import Any

from app.commands.explain_client import get_debug


def fetch(url: str, query: dict[str, str], timeout: float = 5.0) -> dict[str, Any]:
    """``/debug/shadow`` of the Caldera at ``url``."""
    return get_debug(url, "/debug/shadow", query, timeout)


def _side(side: dict[str, str]) -> str:
    by = f" by {side['plugin']}" if "plugin" in side else ""
    why = f": {side['reason']}" if "reason" in side else ""
    return f"{side['answer']}{by}{why}"


def _heading(shadow: dict[str, Any]) -> str:
    """The shadow file and the hash of what it loaded; a file that has not loaded says so, with
    why when the server knows (issue 47 item 10: it printed ``(sha256 none)``)."""
    source = shadow.get("source")
    if "sha256" in shadow:
        return f"shadow {source} (sha256 {shadow['sha256']}):"
    if shadow.get("status") == "starting":
        return f"shadow {source} (not loaded yet: its process is starting):"
    return f"shadow {source} (failed to load: {shadow.get('problem', 'no reason given')}):"


def render(document: dict[str, Any]) -> list[str]:
    """The summary, then each difference with both sides; with ``configDiff`` (``--diff``) the
    configuration difference first, beside the decisions it makes."""
    shadow = document.get("shadow", {})
    lines = [_heading(shadow)]
    # The heading gives the load error: the summary's line that repeats it is not printed again
    # (issue 47: it was printed in the heading, the summary and the failures line).
    problem = shadow.get("problem")
    summary = [
        line
        for line in document.get("summary", [])
        if not (problem and line.endswith(f": {problem}"))
    ]
    if "configDiff" in document:
        lines.append("configuration difference (live -> shadow):")
        diff = document["configDiff"]
        lines += [f"  {line}" for line in diff] or ["  (the files are the same)"]
        lines.append("decision difference:")
    lines += [f"  {line}" for line in summary]
    differences = document.get("differences")
    if differences is None:
        differences = [
            d
            for kind in ("jobs", "tasks", "queues")
            for items in document.get(kind, {}).values()
            for d in items
        ]
    for d in differences:
        subject = next(d[k] for k in ("job", "task", "queue") if k in d)
        detail = f" ({d['detail']})" if "detail" in d else ""
        lines.append(f"{d['verb']} {subject}{detail}:")
        lines.append(f"  live:   {_side(d['live'])}")
        lines.append(f"  shadow: {_side(d['shadow'])}")
    return lines
