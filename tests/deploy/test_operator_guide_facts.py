"""Sentences of docs/operator-guide.md that state a fact of the code, checked against it: which
keys a live reload applies (issue 34: the guide said any change needs a restart) and which
setting an onSessionOpen 413 names (it said maxRequestBytes)."""

from __future__ import annotations

import re
from pathlib import Path

from app.server.config_watch import RESTART_ONLY
from plugins.api.extension_points import BY_VERB

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operator-guide.md"


def paragraphs() -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", GUIDE.read_text())]


def test_the_guide_names_exactly_the_keys_that_wait_for_a_restart() -> None:
    stating = [p for p in paragraphs() if "wait for a restart" in p]
    assert len(stating) >= 2, "the deploy section and 'Roll the change out' both say it"
    for paragraph in stating:
        sentence = next(s for s in re.split(r"(?<=[.:])\s", paragraph) if "wait for a restart" in s)
        named = set(re.findall(r"`(\w+)`", sentence))
        assert named == set(RESTART_ONLY), sentence


def test_no_paragraph_says_a_configuration_change_needs_a_restart() -> None:
    for paragraph in paragraphs():
        assert not re.search(r"caldera-config`? needs a restart", paragraph), paragraph
        assert "reads its configuration once" not in paragraph, paragraph


def test_the_onsessionopen_413_row_names_the_snapshot_limit() -> None:
    limit = BY_VERB["onSessionOpen"].body_limit  # the key CalderaConfig.body_limit reads
    assert limit == "maxSnapshotBytes"
    [row] = [
        line for line in GUIDE.read_text().splitlines() if line.startswith("| onSessionOpen |")
    ]
    advice = row.split("413:", 1)[1]
    assert re.match(rf"\s*raise `{limit}`", advice), row
