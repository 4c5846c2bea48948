"""The built-in web app is served by Consentry itself: its page at ``/``, its modules, styles and
icon under ``/web/``, with a Content Security Policy that lets the browser load nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from consentry.api.web import WEB_DIRECTORY

_SRC_OR_HREF = re.compile(r'(?:src|href)="([^"#]+)"')
_IMPORT = re.compile(r'^import .* from "\./([^"]+)";$', re.MULTILINE)
_ABSOLUTE_URL = re.compile(r"\b(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", re.IGNORECASE)
_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",  # a vendored library's own ESM build (web/vendor/)
    ".css": "text/css",
    ".svg": "image/svg+xml",
}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


async def test_the_page_is_served_at_the_root_with_a_strict_content_security_policy(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/")

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self';" in policy  # no inline scripts, no eval, no CDN
    assert "connect-src 'self'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/web/app.js"></script>' in response.text


async def test_everything_the_page_loads_comes_from_the_server_with_its_type(
    client: httpx.AsyncClient,
) -> None:
    page = (await client.get("/")).text
    to_load = {url for url in _SRC_OR_HREF.findall(page) if url.startswith("/web/")}
    modules = {"/web/app.js"}
    while modules:  # follow the module graph: every import must be served too
        module = modules.pop()
        source = (await client.get(module)).text
        for name in _IMPORT.findall(source):
            if f"/web/{name}" not in to_load:
                modules.add(f"/web/{name}")
            to_load.add(f"/web/{name}")

    assert {"/web/app.js", "/web/app.css", "/web/favicon.svg", "/web/consentry.js"} <= to_load
    assert {"/web/vendor/marked.esm.js", "/web/vendor/purify.es.mjs"} <= to_load
    for url in sorted(to_load):
        response = await client.get(url)
        assert response.status_code == 200, url
        suffix = url[url.rindex(".") :]
        assert response.headers["content-type"].startswith(_TYPES[suffix]), url
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path", sorted(p.name for p in WEB_DIRECTORY.iterdir() if p.suffix in {".html", ".js", ".css"})
)
def test_no_web_file_points_at_another_host(path: str) -> None:
    text = (WEB_DIRECTORY / path).read_text()
    assert not _ABSOLUTE_URL.findall(text), f"{path} refers to another host"


async def test_an_unknown_web_file_is_a_json_404_and_nothing_outside_the_folder_is_served(
    client: httpx.AsyncClient,
) -> None:
    missing = await client.get("/web/missing.js")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    for escape in ("/web/../app.py", "/web/%2e%2e/app.py", "/web/..%2fsettings.py"):
        response = await client.get(escape)
        assert response.status_code == 404, escape
        assert "create_app" not in response.text


async def test_the_favicon_a_browser_asks_for_on_any_page_is_served(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/favicon.ico")

    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.content == (WEB_DIRECTORY / "favicon.svg").read_bytes()
