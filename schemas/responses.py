"""Response bodies Caldera sends, per verb and per Volcano wire dialect.

Volcano decodes them with ``encoding/json`` into the structs of ``argument.go``: integers for
``status``/``code``, real booleans, an object for ``nodeScore``. The predicate answer changed shape
twice (protocol reference §3.2), hence three predicate structs.
"""

from __future__ import annotations

from msgspec import Raw, Struct


class Empty(Struct):
    """``{}``: onSessionOpen, onSessionClose, jobEnqueued (their bodies are ignored or unread)."""


class PredicateResponse(Struct):
    """v1.10 and later: the message travels under ``status``; empty means the node fits."""

    status: str
    code: int


class PredicateStatus(Struct):
    """``api.Status`` as v1.8–v1.9 marshal it (untagged ``Code`` and ``Reason``)."""

    Code: int
    Reason: str


class PredicateResponseV18(Struct):
    """v1.8–v1.9: a list of statuses; empty means the node fits. Never a null element."""

    status: list[PredicateStatus]


class PredicateResponseV16(Struct):
    """v1.6–v1.7: ``errorMessage``; empty means the node fits."""

    errorMessage: str


class PrioritizeResponse(Struct):
    nodeScore: dict[str, float]
    errorMessage: str = ""


class EvictResponse(Struct):
    """``PreemptableResponse`` / ``ReclaimableResponse``: 0 abstains; victims are evictees as
    received."""

    status: int
    victims: list[Raw]


class JobEnqueueableResponse(Struct):
    status: int


class QueueOverusedResponse(Struct):
    overused: bool


class JobReadyResponse(Struct):
    status: bool


class EventHandlerResponse(Struct):
    errorMessage: str = ""


class ErrorResponse(Struct, omit_defaults=True):
    """Caldera's own error body (4xx/5xx). Volcano treats any non-200 as an extender error and
    applies ``extender.ignorable``."""

    error: str
    verb: str = ""
    plugin: str = ""
    limit: int | None = None
