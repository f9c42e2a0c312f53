"""GET /docs (app/server/routes/docs.py): Swagger UI from its CDN, and a note that says where the
same description is when the browser cannot reach that CDN (issue 34: a blank page offline)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.config import load_config
from app.server.main import create_app


def page() -> str:
    with TestClient(create_app(load_config(None))) as client:
        response = client.get("/docs")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert (
            client.get(re.search(r'href="(/openapi\.json)"', response.text)[1]).status_code == 200
        )  # type: ignore[index]
        return response.text


def test_the_page_loads_swagger_ui_over_the_apps_description() -> None:
    html = page()
    assert "url: '/openapi.json'" in html
    [script] = re.findall(r'<script src="(https://[^"]+)"', html)
    assert script.endswith("swagger-ui-bundle.js")


def test_an_offline_browser_reads_where_the_description_is() -> None:
    html = page()
    body = html[html.index("<body>") :]
    note = re.search(r'<div id="caldera-offline-note"[^>]*>(.*?)</div>', body, re.S)
    assert note is not None, "the note is the first thing in the body, before any script"
    assert body.index("caldera-offline-note") < body.index("<script")
    cdn = re.search(r'<script src="https://([^/"]+)/', html)[1]  # type: ignore[index]
    text = note[1]
    assert cdn in text and "/openapi.json" in text and "caldera openapi" in text
    # the note goes only once Swagger UI's script has defined SwaggerUIBundle
    last_script = body[body.rindex("<script>") :]
    assert "typeof SwaggerUIBundle !== 'undefined'" in last_script
    assert "getElementById('caldera-offline-note').remove()" in last_script


def test_docs_is_not_an_api_operation() -> None:
    schema = create_app(load_config(None)).openapi()
    assert "/docs" not in schema["paths"]
