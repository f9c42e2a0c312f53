"""``caldera shadow``'s text (app/commands/shadow_client.py): the heading names the shadow file and the
hash of what it loaded, or says that it did not load and why."""

from __future__ import annotations

from typing import Any

import pytest

from app.commands.explain_client import render as explain_render
from app.commands.shadow_client import render

SOURCE = "/etc/caldera/shadow.yaml"


@pytest.mark.parametrize(
    ("name", "shadow", "heading"),
    [
        pytest.param("loaded", {"source": SOURCE, "sha256": "0123456789abcdef",
                                "status": "evaluating"},
                     f"shadow {SOURCE} (sha256 0123456789abcdef):", id="loaded"),
        pytest.param("failed to load, with the reason",
                     {"source": SOURCE, "status": "failing",
                      "problem": "unknown plugin 'no-such-plugin'"},
                     f"shadow {SOURCE} (failed to load: unknown plugin 'no-such-plugin'):",
                     id="failing"),
        pytest.param("failed, no reason given (an older server)",
                     {"source": SOURCE, "status": "failing"},
                     f"shadow {SOURCE} (failed to load: no reason given):", id="no reason"),
        pytest.param("still starting", {"source": SOURCE, "status": "starting"},
                     f"shadow {SOURCE} (not loaded yet: its process is starting):",
                     id="starting"),
    ],
)  # fmt: skip
def test_the_heading_says_what_the_shadow_loaded(
    name: str, shadow: dict[str, Any], heading: str
) -> None:
    """Issue 47 item 10: a file that failed to load was shown as ``(sha256 none)``."""
    lines = render({"shadow": shadow, "summary": []})
    assert lines[0] == heading, name
    assert "none" not in lines[0], name


PROBLEM = "tiers[0].plugins[0]: unknown plugin 'nosuch'"


@pytest.mark.parametrize(
    ("name", "summary", "printed"),
    [
        pytest.param("the server's failing line: said in the heading already",
                     [f"the shadow configuration {SOURCE} is failing: {PROBLEM}",
                      "no session evaluated by the shadow yet", "shadow failures: 1 load"],
                     ["  no session evaluated by the shadow yet", "  shadow failures: 1 load"],
                     id="once"),
        pytest.param("an older server's failures line ends with the error too",
                     [f"the shadow configuration {SOURCE} is failing: {PROBLEM}",
                      f"shadow failures: 1 load (latest: {PROBLEM})"],
                     [f"  shadow failures: 1 load (latest: {PROBLEM})"], id="older server"),
    ],
)  # fmt: skip
def test_a_load_error_is_printed_once(name: str, summary: list[str], printed: list[str]) -> None:
    """Issue 47: a shadow that failed to load had its error printed in the heading, the summary
    and the failures line."""
    shadow = {"source": SOURCE, "status": "failing", "problem": PROBLEM}
    lines = render({"shadow": shadow, "summary": summary})
    assert lines == [f"shadow {SOURCE} (failed to load: {PROBLEM}):", *printed], name


@pytest.mark.parametrize(
    ("not_shown", "line"),
    [
        pytest.param(1, "  (1 more task: --json has the shown ones only)", id="one"),
        pytest.param(2, "  (2 more tasks: --json has the shown ones only)", id="two"),
    ],
)
def test_tasks_not_shown_are_counted_in_the_singular_for_one(not_shown: int, line: str) -> None:
    """Issue 47: "1 more tasks" (app/commands/explain_client.py)."""
    document = {"job": "ns1/pg", "session": {"session": 1}, "tasksNotShown": not_shown}
    assert explain_render(document)[-1] == line
