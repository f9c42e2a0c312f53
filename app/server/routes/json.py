"""The JSON response of the operator endpoints (the verbs send their own bytes)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Response


def json_response(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")
