"""Fixtures of the system tests that talk to a module's own ``server`` (each module defines it:
one real server process per module) with a browser or an HTTP client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser

from tests.system.browser import WatchedPage, launched_chromium, watched_page
from tests.system.server import API_KEY, serve


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, launched once per module."""
    with launched_chromium() as (_, launched):
        yield launched


@pytest.fixture
def watched(browser: Browser, request: pytest.FixtureRequest) -> Iterator[WatchedPage]:
    """A fresh page for the test, its screenshot saved and its console checked at the end."""
    with watched_page(browser, request.node.name) as page:
        yield page


@pytest.fixture
def api(server: str) -> Iterator[httpx.Client]:
    """The module's server, over HTTP."""
    with httpx.Client(base_url=server, timeout=30.0) as client:
        yield client


@pytest.fixture(scope="module")
def key_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of the module's own that needs ``API_KEY``."""
    keys = {"CONSENTRY_API_KEYS": f"{API_KEY}=t:u"}
    with serve(tmp_path_factory.mktemp("keys") / "c.db", env=keys) as base_url:
        yield base_url
