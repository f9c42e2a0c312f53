"""GET /docs: Swagger UI over ``/openapi.json``, its script and styles served by Caldera itself.

FastAPI's page loads Swagger UI from a CDN, which a sidecar's cluster usually cannot reach: the
page then stays blank. The files come instead from a runtime dependency that ships them,
``fastapi-offline`` (Swagger UI 5, MIT; only its static files are used), under
:data:`STATIC_PATH`, so the page works wherever ``caldera serve`` runs, the container image
included (it installs the locked runtime dependencies). They are read once, at the first request
for them, and kept: 1.7 MB, and ``/docs`` is an operator's page, not Volcano's.

The page still carries a note saying where the same description is — ``/openapi.json``,
``caldera openapi`` — which a script removes once Swagger UI has loaded: a browser that blocks
scripts, or a proxy that rewrites the page, still leaves the operator somewhere to go."""

from __future__ import annotations

import functools
import importlib.resources

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.exceptions import HTTPException
from starlette.responses import Response

router = APIRouter()

STATIC_PATH = "/docs/static"
"""Where Swagger UI's files are served (below /docs: no path of the API is taken)."""
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
"""The files the page loads, by name, and their content type (not guessed from the system's
MIME table, which differs between Python versions and distributions)."""
OFFLINE_NOTE = (
    '<div id="caldera-offline-note" style="font-family: sans-serif; margin: 2em;">'
    "<p><b>Swagger UI did not load.</b> This page loads its script and styles from"
    " {static} on this server; this browser did not run them (scripts blocked?).</p>"
    '<p>The same API description: <a href="{openapi}">{openapi}</a> (JSON), or'
    " <code>caldera openapi</code> on the command line; every verb and operator endpoint is"
    " also answered by <code>curl</code> (README, &quot;Debugging with curl&quot;).</p></div>"
)
REMOVE_NOTE = (
    "<script>if (typeof SwaggerUIBundle !== 'undefined')"
    " document.getElementById('caldera-offline-note').remove();</script>"
)


@functools.cache
def asset(name: str) -> bytes:
    """The bytes of one of :data:`ASSETS`, from the installed ``fastapi-offline``."""
    return (importlib.resources.files("fastapi_offline") / "static" / name).read_bytes()


@router.get("/docs", include_in_schema=False)
async def docs(request: Request) -> HTMLResponse:
    openapi = request.app.openapi_url or "/openapi.json"
    root = request.scope.get("root_path", "")
    static = f"{root}{STATIC_PATH}"
    page = get_swagger_ui_html(
        openapi_url=openapi,
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{static}/swagger-ui-bundle.js",
        swagger_css_url=f"{static}/swagger-ui.css",
        swagger_favicon_url=f"{static}/favicon.png",
    )
    html = bytes(page.body).decode()
    html = html.replace(
        "<body>", "<body>\n" + OFFLINE_NOTE.format(static=static, openapi=openapi), 1
    )
    html = html.replace("</body>", REMOVE_NOTE + "\n</body>", 1)
    return HTMLResponse(html)


@router.get(STATIC_PATH + "/{name}", include_in_schema=False)
async def static(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        # Only the page's own files: no other file of the installed package is reachable.
        raise HTTPException(404)  # the app's JSON 404 (app/main.py, http_error)
    return Response(
        asset(name), media_type=media_type, headers={"cache-control": "public, max-age=86400"}
    )
