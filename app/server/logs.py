"""Logging: one JSON object per line in production, readable text in a terminal.

Every record carries the id of the request being served (``X-Request-Id`` if the caller sent
one, else a generated one). Request bodies are never logged: they hold pod specs, whose env values
and annotations can be secrets.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

import orjson

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "color_message",  # uvicorn's ANSI copy of the message
}


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in entry and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s [%(request_id)s] %(message)s"
HTTP_CLIENT_LOGGER = "httpx2"
"""lightkube's HTTP client (the watches, pdb's, the PodGroup Events)."""


def configure_logging(level: str = "info", fmt: str = "auto") -> None:
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if use_json else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # per-call lines would cost the hot path
    # The HTTP client logs every request at INFO: a watch's relists and pdb's and Events' calls
    # would bury Caldera's own lines. Shown only when the operator asks for debug.
    logging.getLogger(HTTP_CLIENT_LOGGER).setLevel(
        logging.NOTSET if level.lower() == "debug" else logging.WARNING
    )


class Throttle:
    """Says whether a line of one kind may be logged now: the first at once, then at most one
    per ``interval`` seconds, and how many were held back meanwhile (for the next line).

    For what a client can repeat at will (a bad body on every call): the first tells the
    operator, the rest would only flood the log Volcano's own errors are read in."""

    def __init__(self, interval: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.clock = clock
        self._last: dict[object, float] = {}
        self._held: dict[object, int] = {}

    def allow(self, key: object) -> int | None:
        """None: hold this one back; else the number held back since the last one logged."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._held.pop(key, 0)
