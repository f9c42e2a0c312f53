"""GET /metrics: Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.server.runtime import runtime_of

router = APIRouter(tags=["operations"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    state = runtime_of(request)
    served = state.served
    m = state.metrics
    current = served.sessions.current
    m.session_age.set(current.age() if current is not None else 0.0)
    for key, background in served.backgrounds.items():
        m.background_ready.labels(key).set(1.0 if background.ready() else 0.0)
        numbers = getattr(background, "metrics", None)
        if callable(numbers):
            for name, value in numbers().items():
                m.background_value.labels(key, name).set(float(value))
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
