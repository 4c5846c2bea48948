"""Headless Chromium (Debian's ``chromium`` package) driven by Playwright, for the web app tests.

Nothing is downloaded: Playwright launches the installed browser by its path. Each test gets a
fresh browser context (empty storage), and leaves a screenshot of its final page in
``test-artifacts/screenshots/<test name>.png``. A page error, or a console error other than the
browser's own report of an HTTP status or a network failure the test said it expects, fails the
test.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from tests.paths import ROOT

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # the machine has no internet: without these, Chromium's own connections fail noisily
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
_RESOURCE_STATUS = re.compile(
    r"Failed to load resource: the server responded with a status of (\d+)"
)
_NETWORK_FAILURE = re.compile(r"Failed to load resource: net::ERR_")


def chromium_path() -> str:
    for candidate in (*CHROMIUM_PATHS, shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError("Chromium is not installed: `apt-get install chromium` (.ci/run does)")


@contextmanager
def launched_chromium() -> Iterator[tuple[Playwright, Browser]]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield playwright, browser
        finally:
            browser.close()


@dataclass
class WatchedPage:
    """A page whose console and errors are watched for the whole test."""

    page: Page
    expected_statuses: set[int] = field(default_factory=set)
    network_failures_expected: bool = False
    problems: list[str] = field(default_factory=list)

    def expect_http_status(self, *statuses: int) -> None:
        """Chromium logs every refused fetch (a 409 the app handles, say) as a console error;
        these statuses are part of the test's story, not a fault of the page."""
        self.expected_statuses.update(statuses)

    def expect_network_failures(self) -> None:
        """Chromium logs a request that got no answer (one the test aborts with ``page.route``,
        say) as a console error; here that is the test's story."""
        self.network_failures_expected = True

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        status = _RESOURCE_STATUS.search(message.text)
        if status and int(status.group(1)) in self.expected_statuses:
            return
        if self.network_failures_expected and _NETWORK_FAILURE.search(message.text):
            return
        self.problems.append(f"console error: {message.text} at {message.location}")


@contextmanager
def watched_page(
    browser: Browser, name: str, *, viewport: dict[str, int] = LAPTOP
) -> Iterator[WatchedPage]:
    """A fresh context and page; on exit a screenshot, then the check for console errors."""
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = context.new_page()
    watched = WatchedPage(page)
    page.on("console", watched.on_console)
    page.on("pageerror", lambda error: watched.problems.append(f"page error: {error}"))
    try:
        yield watched
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        try:
            page.screenshot(path=str(ARTIFACTS / f"{safe}.png"), full_page=True)
        finally:
            context.close()
    assert not watched.problems, "\n".join(watched.problems)
