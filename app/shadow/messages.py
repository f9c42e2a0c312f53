"""The messages between the shadow configuration's process (``app/shadow/worker.py``) and its
parent (``app/shadow/service.py``): one tagged struct per kind, a union per direction, sent as
MessagePack and decoded against that union. A message of a kind the other side does not know,
or of a known kind in another shape, is refused where it is read (:class:`MessageError`, with
msgspec's account of what did not match), not at the line that would have unpacked it.

The transport is the ``multiprocessing`` pipe each way, one message a ``send_bytes``. To the
process (:data:`ToChild`): a :class:`Batch` of calls, followed on the same pipe by their request
bodies as raw bytes (``app/shadow/pipe.py``); the live data sources' states (:class:`Share`,
``app/shadow/sources.py``); cluster mode's :class:`State`, followed by the state delta as one
message of raw bytes (``app/shadow/state.py``); :class:`Stop`. To the parent: after each batch,
every report it gave rise to, as one list of :data:`ToParent` (:func:`send_reports`), so the
parent's receiving thread takes the GIL once a batch.

Structs are encoded as arrays, the tag first (``["Compared", 3, "jobEnqueueable", []]``), as the
tuples they replace were. Against those pickled, for a batch of 200 jobEnqueueable calls (medians;
the commit that made them has the table): in the live process, the sending thread's encode of the
header 18.5 -> 6.6 us, the receiving thread's decode of the reports 16.3 -> 14.0 us (117 -> 21.5
us with 20 differences); in the shadow's process the header's decode 20 -> 24 us, each call's
verb decoded as a string of its own where pickle shared one. For the live side's decode,
:class:`Compared` carries a :class:`~plugins.api.extension_points.Verb` and a tuple: an enum
member and the empty tuple are not allocated per call, where a ``str`` and a ``list`` took 5.5
of the 19.5 us a first version spent.
No struct here holds a reference cycle: none is tracked by the garbage collector (``gc=False``).
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any, Literal, get_args

import msgspec

from app.shadow.diff import Difference
from plugins.api.extension_points import Verb


class MessageError(ValueError):
    """What came down the pipe is not a message of this direction's union."""


class _Message(msgspec.Struct, tag=True, array_like=True, gc=False):
    """Each subclass is one kind, tagged by its class name."""


# --- to the shadow's process ------------------------------------------------------------------


class Call(msgspec.Struct, array_like=True, gc=False):
    """One call of a :class:`Batch`; its body is the batch's next ``length`` raw bytes."""

    session: int
    """The live session the call belongs to."""
    verb: str
    """Empty: the parent dropped the rest of ``session`` (or all of it)."""
    live: bytes | None
    """The live answer; None when the live configuration refused the call."""
    size: int
    """What the call counts against the parent's queue bound: reported back in :class:`Done`."""
    length: int
    """The body's bytes, which follow the batch on the pipe."""


class Batch(_Message):
    calls: list[Call]


class Share(_Message):
    """The live configuration's shareable data sources (``keys``) and those whose state changed
    (``states``), sent before the session's onSessionOpen (``app/shadow/sources.py``)."""

    keys: frozenset[str]
    states: dict[str, bytes]


class State(_Message):
    """Cluster mode: the next session's state, as a delta numbered ``number``, follows as one
    message of raw bytes (``app/shadow/state.py``); sent before the batch holding the session's
    onSessionOpen."""

    number: int


class Stop(_Message):
    """The parent is stopping: the process ends."""


ToChild = Batch | Share | State | Stop


# --- to the parent ------------------------------------------------------------------------------

Stage = Literal["load", "open", "verb", "compare"]
"""Where a shadow failure happened: ``caldera_shadow_failures_total``'s ``stage``
(``app/shadow/reports.py``)."""


class Loaded(_Message):
    """The shadow file loaded (or reloaded)."""

    sha256: str
    plugins: list[str]
    sources: dict[str, str]
    """Per tier entry with a data source: its own, or shared with the live configuration
    (``app/shadow/sources.py``)."""


class Problem(_Message):
    """The shadow file did not load; the shadow goes on with the configuration it had."""

    message: str


class SessionBegan(_Message):
    number: int
    skipped: str
    """Why the session is not evaluated; empty when it is."""


class Skipped(_Message):
    """The rest of session ``number`` is not evaluated."""

    number: int
    why: str


class Compared(_Message):
    """A call's two answers compared: what the shadow would have decided otherwise (mostly
    nothing)."""

    number: int
    verb: Verb
    differences: tuple[Difference, ...]


class Failure(_Message):
    """Also a plugin's fault whose policy let the verb be answered (``onError: abstain``, or a
    call over its budget whose answer was used): a fault that fails the verb is reported once,
    where the verb's exception is caught."""

    stage: Stage
    verb: str
    error: str


class FullState(_Message):
    """A state delta did not apply: the next state must be whole."""


class Done(_Message):
    """The bytes of every call handled so far (the sum of their :attr:`Call.size`), after each
    batch: the parent's queue bound counts a call until then."""

    size: int


Report = Loaded | Problem | SessionBegan | Skipped | Compared | Failure
"""What the parent keeps for the routes (:class:`app.shadow.reports.ShadowReports`)."""
ToParent = Report | FullState | Done

# Each used by one thread of a process: the parent's sending and receiving threads, the loop of
# the shadow's process.
_encoder = msgspec.msgpack.Encoder()
_to_child: msgspec.msgpack.Decoder[ToChild] = msgspec.msgpack.Decoder(ToChild)
_to_parent = msgspec.msgpack.Decoder(list[ToParent])


def _kinds(union: Any) -> str:
    return ", ".join(kind.__name__ for kind in get_args(union))


_TO_CHILD_KINDS = _kinds(ToChild)
_TO_PARENT_KINDS = _kinds(ToParent)


def send(pipe: Connection, message: ToChild) -> None:
    """One message to the shadow's process (raw bytes that follow it go on the same pipe)."""
    pipe.send_bytes(_encoder.encode(message))


def send_reports(pipe: Connection, reports: list[ToParent]) -> None:
    """A batch's reports to the parent, as one message."""
    pipe.send_bytes(_encoder.encode(reports))


def to_child(data: bytes) -> ToChild:
    """The message the process read; :class:`MessageError` when it is none it knows."""
    try:
        return _to_child.decode(data)
    except msgspec.DecodeError as exc:
        raise MessageError(
            f"not a message to the shadow's process ({_TO_CHILD_KINDS}): {exc}"
        ) from None


def to_parent(data: bytes) -> list[ToParent]:
    """The reports the parent read; :class:`MessageError` when they are not all ones it knows."""
    try:
        return _to_parent.decode(data)
    except msgspec.DecodeError as exc:
        raise MessageError(
            f"not a list of reports from the shadow's process ({_TO_PARENT_KINDS}): {exc}"
        ) from None
