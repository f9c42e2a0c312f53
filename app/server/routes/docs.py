"""GET /docs: Swagger UI over ``/openapi.json``, with a note that stays when it cannot load.

Swagger UI's script and styles come from a CDN (cdn.jsdelivr.net): no runtime dependency of
Caldera ships them, and vendoring 1.5 MB of JavaScript into the wheel for an operator page is
not worth it. Without internet access the browser cannot load them and FastAPI's page stays
blank, so this page carries a note saying where the same description is — ``/openapi.json``,
``caldera openapi`` — which a script removes once Swagger UI has loaded."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter()

OFFLINE_NOTE = (
    '<div id="caldera-offline-note" style="font-family: sans-serif; margin: 2em;">'
    "<p><b>Swagger UI did not load.</b> This page fetches its script and styles from"
    " {cdn}, which this browser could not reach (no internet access?).</p>"
    '<p>The same API description, without a CDN: <a href="{openapi}">{openapi}</a> (JSON), or'
    " <code>caldera openapi</code> on the command line; every verb and operator endpoint is"
    " also answered by <code>curl</code> (README, &quot;Debugging with curl&quot;).</p></div>"
)
REMOVE_NOTE = (
    "<script>if (typeof SwaggerUIBundle !== 'undefined')"
    " document.getElementById('caldera-offline-note').remove();</script>"
)
SCRIPT_HOST = re.compile(r'<script src="https?://([^/"]+)/')


@router.get("/docs", include_in_schema=False)
async def docs(request: Request) -> HTMLResponse:
    openapi = request.app.openapi_url or "/openapi.json"
    page = get_swagger_ui_html(openapi_url=openapi, title=f"{request.app.title} - Swagger UI")
    html = bytes(page.body).decode()
    host = SCRIPT_HOST.search(html)
    cdn = host[1] if host else "a CDN"
    html = html.replace("<body>", "<body>\n" + OFFLINE_NOTE.format(cdn=cdn, openapi=openapi), 1)
    html = html.replace("</body>", REMOVE_NOTE + "\n</body>", 1)
    return HTMLResponse(html)
