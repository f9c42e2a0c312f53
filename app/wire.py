"""The predicate answer in the shape of the calling release (protocol reference §3.2).

The predicate answer changed shape twice; every other answer is the same for every release, and
its neutral form is a row of the extension-point table.
"""

from __future__ import annotations

import msgspec

from plugins.api.base import FitError, StatusCode
from plugins.api.release import PredicateShape, Release
from schemas.responses import (
    PredicateResponse,
    PredicateResponseV16,
    PredicateResponseV18,
    PredicateStatus,
)

_encode = msgspec.json.encode
_PASS: dict[PredicateShape, bytes] = {
    PredicateShape.STATUS_CODE: _encode(PredicateResponse(status="", code=0)),
    PredicateShape.STATUS_LIST: _encode(PredicateResponseV18(status=[])),
    PredicateShape.ERROR_MESSAGE: _encode(PredicateResponseV16(errorMessage="")),
}


def encode_predicate(release: Release, error: FitError | None) -> bytes:
    """The predicate answer for ``release``. Code 0 with a message means Error to v1.10+, so a
    plugin's SUCCESS code is sent as ERROR to keep the meaning explicit."""
    shape = release.predicate_shape
    if error is None:
        return _PASS[shape]
    code, reason = fit_failure(error)
    if shape is PredicateShape.STATUS_CODE:
        return _encode(PredicateResponse(status=reason, code=code))
    if shape is PredicateShape.STATUS_LIST:
        return _encode(PredicateResponseV18(status=[PredicateStatus(Code=code, Reason=reason)]))
    return _encode(PredicateResponseV16(errorMessage=reason))


def fit_failure(error: FitError) -> tuple[int, str]:
    """A failure's code and reason as sent: an empty message would read as a pass, and code 0
    (SUCCESS) with a message means Error to v1.10+, so it is sent as ERROR explicitly."""
    return int(error.code) or int(StatusCode.ERROR), error.reason or "rejected"
