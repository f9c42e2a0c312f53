"""Where ``caldera_build_info``'s commit label comes from (app/metrics.py's ``commit``)."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError

import pytest

from app import metrics
from app.metrics import COMMIT_VARIABLE, commit


class Installed:
    """An installed distribution whose direct_url.json holds ``text`` (None: no such file)."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.text


def git_install(commit_id: object) -> str:
    return json.dumps(
        {
            "url": "https://example.invalid/caldera.git",
            "vcs_info": {"vcs": "git", "commit_id": commit_id},
        }
    )


@pytest.mark.parametrize(
    ("variable", "direct_url", "expected"),
    [
        ("a1b2c3", git_install("ffff"), "a1b2c3"),
        (None, git_install("9f8e7d"), "9f8e7d"),
        ("   ", git_install("9f8e7d"), "9f8e7d"),
        (None, json.dumps({"url": "file:///src", "dir_info": {}}), "unknown"),
        (None, git_install(7), "unknown"),
        (None, "not json", "unknown"),
        (None, "[]", "unknown"),
        (None, None, "unknown"),
        (None, PackageNotFoundError("caldera"), "unknown"),
    ],
    ids=[
        "the image build's variable wins",
        "pip's record of a git install",
        "a blank variable is no commit",
        "installed from a directory",
        "a commit that is no string",
        "direct_url.json unreadable",
        "direct_url.json not an object",
        "no direct_url.json",
        "not installed (a source tree)",
    ],
)
def test_commit(
    monkeypatch: pytest.MonkeyPatch,
    variable: str | None,
    direct_url: str | Exception | None,
    expected: str,
) -> None:
    if variable is None:
        monkeypatch.delenv(COMMIT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(COMMIT_VARIABLE, variable)

    def distribution(name: str) -> Installed:
        assert name == "caldera"
        if isinstance(direct_url, Exception):
            raise direct_url
        return Installed(direct_url)

    monkeypatch.setattr(metrics, "distribution", distribution)
    assert commit() == expected
