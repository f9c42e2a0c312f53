"""app/shadow/gate.py: when the live side counts as idle, for the shadow to work in."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from app.shadow.gate import LiveActivity

CONTEXT = multiprocessing.get_context()
QUIET = 1.0


def marked(*calls: tuple[str, str]) -> LiveActivity:
    activity = LiveActivity(CONTEXT, QUIET)
    for step, verb in calls:
        getattr(activity, step)(verb)
    return activity


@pytest.mark.parametrize(
    ("calls", "later", "idle"),
    [
        pytest.param((), 0.0, True, id="nothing yet"),
        pytest.param((("answering", "onSessionOpen"),), 0.0, False, id="opening a session"),
        pytest.param(
            (("answering", "onSessionOpen"), ("answered", "onSessionOpen")),
            0.0,
            False,
            id="between two calls of a session",
        ),
        pytest.param(
            (("answering", "onSessionOpen"), ("answered", "onSessionOpen")),
            QUIET + 0.1,
            True,
            id="a session quiet for longer than the quiet time",
        ),
        pytest.param(
            (
                ("answering", "onSessionOpen"),
                ("answered", "onSessionOpen"),
                ("answering", "jobEnqueueable"),
            ),
            QUIET + 0.1,
            False,
            id="a verb answered for longer than the quiet time",
        ),
        pytest.param(
            (
                ("answering", "onSessionOpen"),
                ("answered", "onSessionOpen"),
                ("answering", "onSessionClose"),
                ("answered", "onSessionClose"),
            ),
            0.0,
            True,
            id="the session closed",
        ),
        pytest.param(
            (("answering", "predicate"),),
            0.0,
            False,
            id="a verb outside any session",
        ),
        pytest.param(
            (("answering", "predicate"), ("answered", "predicate")),
            0.0,
            False,
            id="after a first verb with no onSessionOpen: cluster mode's session is open",
        ),
        pytest.param(
            (
                ("answering", "predicate"),
                ("answered", "predicate"),
                ("answering", "onSessionClose"),
                ("answered", "onSessionClose"),
            ),
            0.0,
            True,
            id="cluster mode's session closed",
        ),
        pytest.param(
            (("answering", "predicate"), ("answered", "predicate")),
            1.0,
            True,
            id="cluster mode's session quiet for 1 s",
        ),
    ],
)
def test_the_live_side_is_idle_outside_its_sessions_and_answers(
    calls: tuple[tuple[str, str], ...], later: float, idle: bool
) -> None:
    assert marked(*calls).idle(time.monotonic() + later) is idle


def test_released_the_live_side_is_idle_whatever_it_marked() -> None:
    activity = marked(("answering", "onSessionOpen"))
    assert not activity.idle()
    activity.release()
    assert activity.idle() and activity.wait_idle()


def test_waiting_for_an_idle_live_side_gives_up_when_told() -> None:
    activity = marked(("answering", "onSessionOpen"))
    assert activity.wait_idle(lambda: True) is False


def test_the_shadows_process_sees_the_live_marks() -> None:
    """The marks live in shared memory: a child process reads what the parent stores after it
    started."""
    activity = LiveActivity(CONTEXT, QUIET)
    seen = CONTEXT.Queue()
    go = CONTEXT.Event()

    def child() -> None:
        go.wait(10)
        seen.put(activity.idle())

    process = CONTEXT.Process(target=child)
    process.start()
    activity.answering("onSessionOpen")
    go.set()
    try:
        assert seen.get(timeout=10) is False
    finally:
        process.join(10)
