"""GET /docs (app/server/routes/docs.py): Swagger UI from files Caldera serves itself (issue 47 item 11:
an operator's cluster cannot reach a CDN), and a note that says where the same description is
when the browser does not run the page's script (issue 34: a blank page)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import load_config
from app.server.main import create_app
from app.server.options import ServeOptions


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(ServeOptions.of(load_config(None)))) as client:
        yield client


def page(client: TestClient) -> str:
    response = client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def loaded(html: str) -> list[str]:
    """Every URL the page makes the browser load or link to."""
    return re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)


def test_the_page_loads_swagger_ui_over_the_apps_description(client: TestClient) -> None:
    html = page(client)
    assert "url: '/openapi.json'" in html
    assert client.get("/openapi.json").status_code == 200
    [script] = re.findall(r'<script src="([^"]+)"', html)
    assert script == "/docs/static/swagger-ui-bundle.js"


def test_the_page_loads_nothing_from_another_host(client: TestClient) -> None:
    urls = loaded(page(client))
    assert len(urls) >= 4  # the script, the styles, the icon, the description
    assert [u for u in urls if not u.startswith("/")] == []


@pytest.mark.parametrize(
    ("name", "content_type", "marker"),
    [
        pytest.param("swagger-ui-bundle.js", "text/javascript", b"SwaggerUIBundle", id="script"),
        pytest.param("swagger-ui.css", "text/css", b".swagger-ui", id="styles"),
        pytest.param("favicon.png", "image/png", b"\x89PNG", id="icon"),
    ],
)
def test_each_file_the_page_loads_is_served_with_its_type(
    client: TestClient, name: str, content_type: str, marker: bytes
) -> None:
    url = f"/docs/static/{name}"
    assert url in loaded(page(client))
    response = client.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == content_type
    assert marker in response.content


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/docs/static/redoc.standalone.js", id="a file of the package not used"),
        pytest.param("/docs/static/..%2Fcore.py", id="a path out of the folder"),
        pytest.param("/docs/static/", id="the folder"),
    ],
)
def test_no_other_file_is_served(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert "no such endpoint" in response.json()["error"]


def test_a_browser_that_does_not_run_the_script_reads_where_the_description_is(
    client: TestClient,
) -> None:
    html = page(client)
    body = html[html.index("<body>") :]
    note = re.search(r'<div id="caldera-offline-note"[^>]*>(.*?)</div>', body, re.S)
    assert note is not None, "the note is the first thing in the body, before any script"
    assert body.index("caldera-offline-note") < body.index("<script")
    text = note[1]
    assert "/openapi.json" in text and "caldera openapi" in text and "/docs/static" in text
    # the note goes only once Swagger UI's script has defined SwaggerUIBundle
    last_script = body[body.rindex("<script>") :]
    assert "typeof SwaggerUIBundle !== 'undefined'" in last_script
    assert "getElementById('caldera-offline-note').remove()" in last_script


def test_docs_is_not_an_api_operation() -> None:
    schema = create_app(ServeOptions.of(load_config(None))).openapi()
    assert [path for path in schema["paths"] if path.startswith("/docs")] == []
