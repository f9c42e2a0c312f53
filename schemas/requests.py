"""Request bodies of each extender verb (``pkg/scheduler/plugins/extender/argument.go``).

Top-level keys of ``OnSessionOpenRequest`` are untagged Go names; every other request is tagged in
lower camel case. Required objects have no default, so a body without them fails decoding with a
message that names the missing key.
"""

from __future__ import annotations

from msgspec import Raw, Struct

from schemas.api import JobInfo, NamespaceInfo, NodeInfo, QueueInfo, TaskInfo


class OnSessionOpenRequest(Struct, gc=False):
    """The whole-cluster snapshot. ``RevocableNodes`` (a second copy of some ``Nodes``) and
    ``NodeList`` (always null) are not read."""

    Jobs: dict[str, JobInfo] | None = None
    Nodes: dict[str, NodeInfo] | None = None
    Queues: dict[str, QueueInfo] | None = None
    NamespaceInfo: dict[str, NamespaceInfo] | None = None


class OnSessionCloseRequest(Struct):
    """``{}``."""


class PredicateRequest(Struct, gc=False):
    task: TaskInfo
    node: NodeInfo


class PrioritizeRequest(Struct, gc=False):
    task: TaskInfo
    nodes: list[NodeInfo] | None


class EvictRequest(Struct, gc=False):
    """``PreemptableRequest`` / ``ReclaimableRequest``. The evictees stay raw so the victims can
    be echoed byte for byte: Volcano evicts the objects it decodes from the answer."""

    evictor: TaskInfo
    evictees: list[Raw] | None


class JobRequest(Struct, gc=False):
    """``JobEnqueueableRequest``, ``JobEnqueuedRequest`` and ``JobReadyRequest``."""

    job: JobInfo


class QueueOverusedRequest(Struct, gc=False):
    queue: QueueInfo


class EventHandlerRequest(Struct, gc=False):
    """``allocateFunc`` / ``deallocateFunc``."""

    task: TaskInfo


class LegacyReclaimablePathRequest(Struct):
    """v1.6–v1.7 POST jobEnqueueable and queueOverused bodies to the reclaimable verb; the shape
    (``evictor``, ``job`` or ``queue``) tells them apart (protocol reference §3.3)."""

    evictor: Raw = Raw()  # empty when absent
    job: Raw = Raw()
    queue: Raw = Raw()


# --- Envelopes: the same bodies read only deep enough to validate their shape, for verbs that no
# configured plugin answers (their answer does not depend on the contents). msgspec still checks
# the whole document is well-formed JSON, but builds nothing below these headers.


class TaskHeader(Struct, gc=False):
    UID: str = ""


class NodeHeader(Struct, gc=False):
    Name: str = ""


class JobHeader(Struct, gc=False):
    UID: str = ""


class QueueHeader(Struct, gc=False):
    Name: str = ""


class PredicateEnvelope(Struct, gc=False):
    task: TaskHeader
    node: NodeHeader


class PrioritizeEnvelope(Struct, gc=False):
    task: TaskHeader
    nodes: list[NodeHeader] | None


class EvictEnvelope(Struct, gc=False):
    evictor: TaskHeader
    evictees: list[TaskHeader] | None


class JobEnvelope(Struct, gc=False):
    job: JobHeader


class QueueEnvelope(Struct, gc=False):
    queue: QueueHeader


class EventHandlerEnvelope(Struct, gc=False):
    task: TaskHeader
