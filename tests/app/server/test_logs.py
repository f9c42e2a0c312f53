"""app/server/logs.py: the throttle for what a client can repeat at will, and the refused-request
line that uses it (app/server/routes/verbs.py)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import load_config
from app.server.logs import Throttle
from app.server.main import create_app
from app.server.options import ServeOptions


def test_throttle_lets_one_a_minute_through_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = Throttle(60.0, clock=lambda: now[0])
    assert throttle.allow("bad_request") == 0
    assert throttle.allow("bad_request") is None
    assert throttle.allow("too_large") == 0  # another kind: its own budget
    now[0] = 30.0
    assert throttle.allow("bad_request") is None
    now[0] = 61.0
    assert throttle.allow("bad_request") == 2
    assert throttle.allow("bad_request") is None


def test_a_refused_request_is_a_warning_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    """A 4xx answer is a call Volcano made in vain: a WARNING (it was INFO), not one per call."""
    caplog.set_level("INFO", logger="caldera.verbs")
    with TestClient(create_app(ServeOptions.of(load_config(None)))) as client:
        for _ in range(3):
            assert client.post("/predicate", content=b'{"task": 3}').status_code == 400
    lines = [r for r in caplog.records if r.name == "caldera.verbs"]
    assert [r.levelname for r in lines] == ["WARNING"]
    assert lines[0].getMessage().startswith("refused predicate request (400 bad_request): ")


@pytest.mark.parametrize(("level", "shown"), [("info", False), ("warning", False), ("debug", True)])
def test_the_http_clients_request_lines_only_at_debug(
    level: str, shown: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49 item 4: a watch's per-request lines (lightkube's HTTP client logs each at
    INFO) appear only with --log-level debug."""
    import logging

    from app.server.logs import HTTP_CLIENT_LOGGER, configure_logging

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    client = logging.getLogger(HTTP_CLIENT_LOGGER)
    monkeypatch.setattr(client, "level", client.level)
    configure_logging(level, "text")
    assert client.isEnabledFor(logging.INFO) is shown
    assert logging.getLogger("caldera").isEnabledFor(logging.INFO) is (level != "warning")
