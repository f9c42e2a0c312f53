"""``caldera shadow``'s text (app/commands/shadow_client.py): the heading names the shadow file and the
hash of what it loaded, or says that it did not load and why."""

from __future__ import annotations

from typing import Any

import pytest

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
