"""The one way anything follows sessions (app/session_events.py), as the extender tells it."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import parse_config
from app.errors import PluginFailure
from app.extender import Extender
from app.metrics import Metrics
from app.session import SessionManager
from app.session_events import Opened, SessionListener, SessionListeners
from schemas.api import TaskInfo
from schemas.requests import OnSessionOpenRequest

ALLOCATED = b'{"task": {"UID": "t1", "Job": "ns/j", "NodeName": "n1", "Status": 1}}'


class Heard(SessionListener):
    """Writes down every event, in order, into a list shared by several listeners."""

    def __init__(self, name: str, heard: list[Any], recovers: bool = False) -> None:
        self.name, self.heard, self.recovers = name, heard, recovers

    def boundary(self) -> None:
        self.heard.append((self.name, "boundary"))

    def opened(self, session: Opened) -> None:
        self.heard.append((self.name, "opened", session.number, session.derived))

    def open_failed(self, failure: PluginFailure) -> bool:
        self.heard.append((self.name, "open_failed"))
        return self.recovers

    def allocated(self, task: TaskInfo) -> None:
        self.heard.append((self.name, "allocated", task.UID))

    def deallocated(self, task: TaskInfo) -> None:
        self.heard.append((self.name, "deallocated", task.UID))

    def closed(self) -> None:
        self.heard.append((self.name, "closed"))


def extender_hearing(*listeners: SessionListener) -> Extender:
    config = parse_config(
        {"volcanoVersion": "1.14", "tiers": [{"plugins": [{"name": "priority"}]}]}, "t"
    )
    metrics = Metrics()
    extender = Extender(config, SessionManager(config, metrics), metrics)
    for listener in listeners:
        extender.listeners.add(listener)
    return extender


# (case, the calls, what each of two listeners hears, in order)
CASES = [
    ("Volcano's snapshot", [("onSessionOpen", b"{}"), ("onSessionClose", b"{}")],
     ["boundary", ("opened", 1, False), "closed"]),
    ("a derived state", [("derived", None), ("onSessionClose", b"{}")],
     ["boundary", ("opened", 1, True), "closed"]),
    ("nothing derived yet: a boundary, no session", [("nothing", None)], ["boundary"]),
    ("placements", [("onSessionOpen", b"{}"), ("allocate", ALLOCATED), ("deallocate", ALLOCATED)],
     ["boundary", ("opened", 1, False), ("allocated", "t1"), ("deallocated", "t1")]),
]  # fmt: skip


@pytest.mark.parametrize(("calls", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_listener_hears_each_event_in_the_order_added(
    calls: list[tuple[str, bytes | None]], expected: list[Any]
) -> None:
    heard: list[Any] = []
    extender = extender_hearing(Heard("first", heard), Heard("second", heard))
    for verb, body in calls:
        if verb == "derived":
            extender.open_session(lambda: OnSessionOpenRequest())
        elif verb == "nothing":
            extender.open_session(lambda: None)
        else:
            assert body is not None
            extender.handle(verb, body)
    want = []
    for event in expected:
        for name in ("first", "second"):
            want.append((name, event) if isinstance(event, str) else (name, *event))
    assert heard == want


def test_an_open_that_fails_is_recovered_by_the_first_listener_that_can() -> None:
    heard: list[Any] = []
    listeners = SessionListeners(Heard("a", heard), Heard("b", heard, recovers=True),
                                 Heard("c", heard, recovers=True))  # fmt: skip
    assert listeners.open_failed(PluginFailure("p", "onSessionOpen", RuntimeError("x")))
    assert heard == [("a", "open_failed"), ("b", "open_failed")]  # c is not asked


def test_placements_are_decoded_only_when_a_listener_hears_them() -> None:
    class Quiet(SessionListener):
        def closed(self) -> None: ...

    assert not SessionListeners().follow_placements
    assert not SessionListeners(Quiet()).follow_placements
    assert SessionListeners(Quiet(), Heard("h", [])).follow_placements
