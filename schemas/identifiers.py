"""Bodies of the extender protocol's identifiers mode (docs/proposals/extender-identifiers.md).

Under ``extender.bodies: identifiers`` the patched extender plugin
(protocol/volcano-identifiers, ``patched/argument.go``'s ``...IdentifiersRequest`` types) names
the session and the objects a call is about instead of marshalling them: a job by its
``api.JobID`` (``<namespace>/<podgroup>``), a task by its pod's UID, a node and a queue by name.
Every body's first key is ``session`` (Go marshals a struct's fields in order), which is how
Caldera tells them from today's bodies (:func:`is_identifiers`). Only Caldera's cluster mode
reads them: the objects come from its derived state plus the session's placements.
"""

from __future__ import annotations

from msgspec import Struct

IDENTIFIERS = "identifiers"
OBJECTS = "objects"


class Capabilities(Struct):
    """``GET /capabilities``: the bodies Caldera reads, and whether it answers the batched
    predicate (the patch's ``Capabilities``)."""

    bodies: list[str]
    batchPredicate: bool


class SessionOpenIds(Struct):
    """onSessionOpen: the session's id and its roster (the keys of ``ssn.Jobs``, ``ssn.Nodes``,
    ``ssn.Queues`` and ``ssn.RevocableNodes``)."""

    session: str
    jobs: list[str] | None = None
    nodes: list[str] | None = None
    queues: list[str] | None = None
    revocableNodes: list[str] | None = None


class SessionIds(Struct):
    """onSessionClose."""

    session: str


class PredicateIds(Struct):
    """The predicate: ``node`` for one node; ``nodes`` for the batched predicate
    (``extender.batchPredicateVerb``), which Caldera serves on the predicate's endpoint."""

    session: str
    task: str
    job: str
    node: str = ""
    nodes: list[str] | None = None


class NodesIds(Struct):
    """prioritize: the task and the nodes asked."""

    session: str
    task: str
    job: str
    nodes: list[str] | None = None


class TaskIds(Struct):
    uid: str
    job: str


class EvictIds(Struct):
    """preemptable and reclaimable."""

    session: str
    evictor: TaskIds
    evictees: list[TaskIds] | None = None


class JobIds(Struct):
    """jobEnqueueable, jobEnqueued and jobReady."""

    session: str
    job: str


class QueueIds(Struct):
    session: str
    queue: str


class EventIds(Struct):
    """allocateFunc and deallocateFunc: the task's node and its ``api.TaskStatus`` name after
    the event (``Allocated``/``Pipelined`` placed, ``Pending`` its discard, ``Releasing``
    evicted, ``Running`` the eviction's discard)."""

    session: str
    task: str
    job: str
    node: str
    status: str


class NodeFailure(Struct):
    """Why a node fails: ``code`` is an ``api.Status`` code, as the predicate's."""

    code: int
    reason: str


class BatchPredicateResponse(Struct):
    """The nodes that fail; a node absent passes."""

    failedNodes: dict[str, NodeFailure]


class VictimIds(Struct):
    """preemptable and reclaimable: the victims as UIDs of the evictees sent."""

    status: int
    victims: list[str]


_SPACE = b" \t\r\n"
_SESSION_KEY = b'"session"'
_COMPACT_HEAD = b'{"'
_COMPACT_SESSION = b'{"session"'


def is_identifiers(body: bytes | bytearray) -> bool:
    """Whether the body's first key is ``session``: an identifiers-mode body. Go's compact JSON
    (every body Volcano sends) is decided by two ``startswith``; anything else by its first bytes
    with the white space JSON allows. Today's bodies (whose first key is never ``session``) cost
    about 0.1 us."""
    if body.startswith(_COMPACT_HEAD):
        return body.startswith(_COMPACT_SESSION)
    head = bytes(body[:64]).lstrip(_SPACE)
    if not head.startswith(b"{"):
        return False
    return head[1:].lstrip(_SPACE).startswith(_SESSION_KEY)
