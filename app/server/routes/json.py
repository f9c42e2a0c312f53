"""The JSON response of the operator endpoints (the verbs send their own bytes)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Response


def json_response(data: Any, status_code: int = 200) -> Response:
    # Non-str keys: a dict keyed by verb has Verb (a StrEnum) keys, which orjson takes only with
    # this option (and writes as their values).
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status_code, media_type="application/json")
