"""What crosses the wire both ways, shared by today's bodies (app/extender.py) and the
identifiers protocol's (app/identifiers.py): a request body decoded into its typed view with the
errors worded as key paths, and the answers.

The predicate answer changed shape twice (protocol reference §3.2); every other answer is the
same for every release, and its neutral form is a row of the extension-point table. The answers
with few values are encoded once here, not per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from app.errors import RequestError
from plugins.api.base import FitError, StatusCode, Vote
from plugins.api.release import PredicateShape, Release
from schemas.responses import (
    JobEnqueueableResponse,
    JobReadyResponse,
    PredicateResponse,
    PredicateResponseV16,
    PredicateResponseV18,
    PredicateStatus,
    QueueOverusedResponse,
)

Body = bytes | bytearray
"""A request body: bytes, or the buffer a long body was read into."""

NESTED_TOO_DEEPLY = (
    "malformed JSON: nested too deeply (Volcano's bodies nest a few dozen levels; Go's own"
    " decoder stops at 10000)"
)


def body_decoder(kind: type[Any], what: str = "") -> Callable[[Body], Any]:
    """A decoder of ``kind`` whose failures are :class:`RequestError` naming the key path
    (``what`` before a validation error's message: which body it was)."""
    decoder = msgspec.json.Decoder(kind)

    def decode(body: Body) -> Any:
        try:
            return decoder.decode(body)
        except msgspec.ValidationError as exc:
            raise RequestError(what + describe(str(exc))) from None
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise RequestError(f"malformed JSON: {exc}") from None
        except RecursionError:  # msgspec recurses per level, even through skipped keys
            raise RequestError(NESTED_TOO_DEEPLY) from None

    return decode


def describe(message: str) -> str:
    """msgspec says ``... - at `$.task.Pod```; say ``at task.Pod`` like a key path."""
    return message.replace("`$.", "`").replace("`$`", "the body")


def describe_at(prefix: str, message: str) -> str:
    """Re-root a message about a nested document at ``prefix``."""
    if "- at `$" in message:
        return message.replace("- at `$", f"- at `{prefix}", 1)
    return f"{message} - at `{prefix}`"


_encode = msgspec.json.encode
VOTE_ANSWER = {vote: _encode(JobEnqueueableResponse(status=int(vote))) for vote in Vote}
"""jobEnqueueable's answer per vote."""
OVERUSED_ANSWER = {flag: _encode(QueueOverusedResponse(overused=flag)) for flag in (True, False)}
READY_ANSWER = {flag: _encode(JobReadyResponse(status=flag)) for flag in (True, False)}
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
