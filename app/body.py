"""Reading request bodies under ``maxRequestBytes``.

The limit is checked against ``Content-Length`` before a byte is read, and counted while
streaming when the length is absent (chunked), so an oversized body is never buffered past the
limit.
"""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    def __init__(self, limit: int, seen: int | None) -> None:
        self.limit = limit
        self.seen = seen
        size = f"{seen} bytes" if seen is not None else "more than the limit"
        super().__init__(
            f"request body of {size} exceeds maxRequestBytes = {limit} bytes; raise"
            " maxRequestBytes in the Caldera configuration for clusters this large"
        )


class BadLength(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise BadLength(f"Content-Length {declared!r} is not a number") from None
        if length > limit:
            raise BodyTooLarge(limit, length)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit, None)
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
