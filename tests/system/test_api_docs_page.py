"""The OpenAPI page renders in Chromium from the server alone: Swagger UI at ``/docs`` loads
nothing from a CDN (the machine has no internet, and every request the page makes is checked to
go to the server), under its Content Security Policy (a violation is a console error, which fails
the test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Request, expect

from tests.system.browser import WatchedPage
from tests.system.server import serve

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("docs") / "c.db") as base_url:
        yield base_url


def _requests_of(watched: WatchedPage) -> list[str]:
    urls: list[str] = []

    def record(request: Request) -> None:
        urls.append(request.url)

    watched.page.on("request", record)
    return urls


def test_swagger_ui_renders_the_api_offline(server: str, watched: WatchedPage) -> None:
    page = watched.page
    urls = _requests_of(watched)

    page.goto(f"{server}/docs")

    expect(page.locator(".swagger-ui .info .title")).to_contain_text(
        "Consentry", timeout=TIMEOUT_MS
    )
    expect(page.locator(".opblock-summary-path", has_text="/v1/chat").first).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/v1/me").first).to_be_visible()
    assert urls, "the page made no request"
    assert [url for url in urls if not url.startswith(server)] == []
