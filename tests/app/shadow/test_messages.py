"""The messages between the shadow's process and its parent (app/shadow/messages.py): every kind
comes back as it was sent, through a real pipe, and what is no message of the direction read is
refused where it is decoded, saying what did not match."""

from __future__ import annotations

import multiprocessing
from typing import Any, get_args

import msgspec
import pytest

from app.shadow.diff import Difference, Side
from app.shadow.messages import (
    Batch,
    Call,
    Compared,
    Done,
    Failure,
    FullState,
    Loaded,
    MessageError,
    Problem,
    SessionBegan,
    Share,
    Skipped,
    State,
    Stop,
    ToChild,
    ToParent,
    send,
    send_reports,
    to_child,
    to_parent,
)
from plugins.api.extension_points import Verb

HELD = Difference(
    "jobEnqueueable", "job", "a/big", "would hold it",
    Side("admitted"), Side("held", "overcommit", "resource in cluster is overused"),
    detail="", key="",
)  # fmt: skip

TO_CHILD: list[Any] = [
    pytest.param(
        Batch(
            [
                Call(1, "onSessionOpen", b"{}", 120, 118),
                Call(1, "jobEnqueueable", None, 40, 40),  # the live side refused it
                Call(1, "", None, 0, 0),  # the rest of session 1 dropped
            ]
        ),
        id="batch",
    ),
    pytest.param(Batch([]), id="batch-empty"),
    pytest.param(Share(frozenset({"pdb:a", "pdb:b"}), {"pdb:a": b"[]"}), id="share"),
    pytest.param(State(7), id="state"),
    pytest.param(Stop(), id="stop"),
]
TO_PARENT: list[Any] = [
    pytest.param(
        Loaded("0123abcd", ["overcommit", "pdb"], {"tiers[0].plugins[1]:pdb": "its own"}),
        id="loaded",
    ),
    pytest.param(Problem("tiers[0]: unknown plugin 'nope'"), id="problem"),
    pytest.param(SessionBegan(3, ""), id="session-began"),
    pytest.param(SessionBegan(4, "dropped: the shadow fell behind"), id="session-began-skipped"),
    pytest.param(Skipped(3, "the shadow failed to open it"), id="skipped"),
    pytest.param(Compared(3, Verb.JOB_ENQUEUEABLE, ()), id="compared-same"),
    pytest.param(Compared(3, Verb.JOB_ENQUEUEABLE, (HELD,)), id="compared-differing"),
    pytest.param(Failure("verb", "predicate", "ZeroDivisionError: division by zero"), id="failure"),
    pytest.param(FullState(), id="full-state"),
    pytest.param(Done(123_456), id="done"),
]


def test_the_tables_hold_every_kind() -> None:
    assert {type(c.values[0]) for c in TO_CHILD} == set(get_args(ToChild))
    assert {type(c.values[0]) for c in TO_PARENT} == set(get_args(ToParent))


@pytest.mark.parametrize("message", TO_CHILD)
def test_a_message_to_the_process_comes_back_as_sent(message: ToChild) -> None:
    into, out = multiprocessing.Pipe(duplex=False)
    with into, out:
        send(out, message)
        assert to_child(into.recv_bytes()) == message


@pytest.mark.parametrize("report", TO_PARENT)
def test_a_report_to_the_parent_comes_back_as_sent(report: ToParent) -> None:
    into, out = multiprocessing.Pipe(duplex=False)
    with into, out:
        send_reports(out, [report, Done(1)])
        assert to_parent(into.recv_bytes()) == [report, Done(1)]


encode = msgspec.msgpack.encode

REFUSED_BY_THE_PROCESS = [
    pytest.param(encode(["Gossip", 1]), "Invalid value 'Gossip'", id="unknown-kind"),
    pytest.param(encode(("batch", [])), "Invalid value 'batch'", id="a-tuple-of-before"),
    pytest.param(encode(["State", "seven"]), "Expected `int`, got `str`", id="wrong-field-type"),
    pytest.param(encode(["State"]), "Expected `array` of at least length 2", id="missing-field"),
    pytest.param(encode(Done(5)), "Invalid value 'Done'", id="a-report-sent-the-wrong-way"),
    pytest.param(
        encode(["Batch", [[1, "jobEnqueueable", b"{}", 10]]]),
        "at least length 5, got 4",
        id="a-call-missing-its-length",
    ),
    pytest.param(encode(None), "Expected `array`, got `None`", id="the-none-that-used-to-stop-it"),
]


@pytest.mark.parametrize(("data", "says"), REFUSED_BY_THE_PROCESS)
def test_what_is_no_message_to_the_process_is_refused_at_decode(data: bytes, says: str) -> None:
    with pytest.raises(MessageError, match="not a message to the shadow's process") as refused:
        to_child(data)
    assert says in str(refused.value)


REFUSED_BY_THE_PARENT = [
    pytest.param(
        encode([["Gossip", 1]]), "Invalid value 'Gossip' - at `$[0][0]`", id="unknown-kind"
    ),
    pytest.param(encode(["Done", 5]), "Expected `array`, got `str` - at `$[0]`", id="not-a-list"),
    pytest.param(
        encode([Done(5), ["Failure", "lunch", "jobEnqueueable", "?"]]),
        "Invalid enum value 'lunch' - at `$[1][1]`",
        id="a-stage-of-no-name",
    ),
    pytest.param(
        encode([["Compared", 3, "jobEnqueueable", [["jobEnqueueable", "job"]]]]),
        "at least length 6, got 2",
        id="a-difference-cut-short",
    ),
    pytest.param(encode([Stop()]), "Invalid value 'Stop'", id="a-message-sent-the-wrong-way"),
    pytest.param(
        encode([["Compared", 3, "jobEnqueueabel", []]]),
        "Invalid enum value 'jobEnqueueabel' - at `$[0][2]`",
        id="a-verb-of-no-name",
    ),
]


@pytest.mark.parametrize(("data", "says"), REFUSED_BY_THE_PARENT)
def test_what_is_no_report_is_refused_at_decode(data: bytes, says: str) -> None:
    with pytest.raises(
        MessageError, match="not a list of reports from the shadow's process"
    ) as refused:
        to_parent(data)
    assert says in str(refused.value)
