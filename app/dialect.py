"""Wire dialects: what each Volcano release sends and expects (protocol reference §3).

The predicate answer changed shape twice, verbs arrived over time, and v1.6–v1.7 post
jobEnqueueable and queueOverused bodies to the reclaimable verb. One Caldera process serves one
scheduler, so the dialect is chosen once, from ``volcanoVersion``.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from plugins.api.base import FitError, StatusCode
from schemas.responses import (
    PredicateResponse,
    PredicateResponseV16,
    PredicateResponseV18,
    PredicateStatus,
)

VERBS: tuple[str, ...] = (
    "onSessionOpen",
    "onSessionClose",
    "predicate",
    "prioritize",
    "preemptable",
    "reclaimable",
    "jobEnqueueable",
    "jobEnqueued",
    "queueOverused",
    "jobReady",
    "allocate",
    "deallocate",
)

VERB_ARGUMENT = {
    "onSessionOpen": "extender.onSessionOpenVerb",
    "onSessionClose": "extender.onSessionCloseVerb",
    "predicate": "extender.predicateVerb",
    "prioritize": "extender.prioritizeVerb",
    "preemptable": "extender.preemptableVerb",
    "reclaimable": "extender.reclaimableVerb",
    "jobEnqueueable": "extender.jobEnqueueableVerb",
    "jobEnqueued": "extender.jobEnqueuedVerb",
    "queueOverused": "extender.queueOverusedVerb",
    "jobReady": "extender.jobReadyVerb",
    "allocate": "extender.allocateFuncVerb",
    "deallocate": "extender.deallocateFuncVerb",
}
"""The ``volcano-scheduler.conf`` argument that enables each verb."""

_encode = msgspec.json.encode
_PASS_V110 = _encode(PredicateResponse(status="", code=0))
_PASS_V18 = _encode(PredicateResponseV18(status=[]))
_PASS_V16 = _encode(PredicateResponseV16(errorMessage=""))


@dataclass(frozen=True, slots=True)
class Dialect:
    version: tuple[int, int]

    @property
    def name(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def predicate_shape(self) -> str:
        if self.version <= (1, 7):
            return "errorMessage"
        if self.version <= (1, 9):
            return "status-list"
        return "status-code"

    @property
    def legacy_reclaimable_path(self) -> bool:
        """v1.6–v1.7 send jobEnqueueable and queueOverused to the reclaimable verb."""
        return self.version <= (1, 7)

    def has_verb(self, verb: str) -> bool:
        if verb == "jobReady":
            return self.version >= (1, 7)
        if verb in ("allocate", "deallocate"):
            return self.version >= (1, 13)
        if verb == "jobEnqueued":
            return self.version >= (1, 16)
        if verb in ("jobEnqueueable", "queueOverused"):
            return True  # on v1.6–v1.7 they travel on the reclaimable verb
        return verb in VERBS

    @property
    def has_managed_resources(self) -> bool:
        return self.version >= (1, 13)

    def encode_predicate(self, error: FitError | None) -> bytes:
        """The predicate answer in this release's shape. Code 0 with a message means Error to
        v1.10+, so a plugin's SUCCESS code is sent as ERROR to keep the meaning explicit."""
        shape = self.predicate_shape
        if error is None:
            return (
                _PASS_V110
                if shape == "status-code"
                else (_PASS_V18 if shape == "status-list" else _PASS_V16)
            )
        reason = error.reason or "rejected"  # an empty message would read as a pass
        code = int(error.code) or int(StatusCode.ERROR)
        if shape == "status-code":
            return _encode(PredicateResponse(status=reason, code=code))
        if shape == "status-list":
            return _encode(PredicateResponseV18(status=[PredicateStatus(Code=code, Reason=reason)]))
        return _encode(PredicateResponseV16(errorMessage=reason))
