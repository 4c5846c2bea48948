"""The web app with a model that says what the test wants: a reload in the middle of a run (the
page joins the run with the last event id it saw, and shows the rest of it once), and an answer
in Markdown (shown as such, never run).

The model is the local OpenAI-compatible stub (``tests/openai_stub.py``), in a thread of its own
(Playwright's sync API runs in the test's thread); for the reload it holds the answer until the
test releases it, so the run is surely mid-way when the page reloads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.openai_stub import OpenAIStub, serve_openai_stub
from tests.system.browser import watched_page
from tests.system.server import serve

CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
QUESTION = "What is retrieval?"
WAIT_SECONDS = 30


class StubInThread:
    """The stub served by a loop in its own thread; its methods called in that loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stub: OpenAIStub | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self.loop.run_until_complete, args=(self._serve(),))

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with serve_openai_stub() as stub:
            self.stub = stub
            self._ready.set()
            await self._stop.wait()
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:  # the stub's stream helpers, so the loop closes clean
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def __enter__(self) -> OpenAIStub:
        self._thread.start()
        assert self._ready.wait(WAIT_SECONDS), "the stub did not start"
        assert self.stub is not None
        return self.stub

    def __exit__(self, *_: object) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(WAIT_SECONDS)
        self.loop.close()

    def call(self, action: Callable[[], Any]) -> None:
        async def run() -> None:
            action()

        asyncio.run_coroutine_threadsafe(run(), self.loop).result(WAIT_SECONDS)

    def wait_until_holding(self) -> None:
        assert self.stub is not None
        holding = asyncio.wait_for(self.stub.holding.wait(), WAIT_SECONDS)
        asyncio.run_coroutine_threadsafe(holding, self.loop).result(WAIT_SECONDS + 1)


@pytest.fixture(scope="module")
def model() -> Iterator[StubInThread]:
    stub_thread = StubInThread()
    with stub_thread:
        yield stub_thread


@pytest.fixture(scope="module")
def server(model: StubInThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert model.stub is not None
    with serve(tmp_path_factory.mktemp("mid-run") / "c.db", env=model.stub.server_env()) as url:
        yield url


def test_a_reload_mid_run_joins_the_run_and_shows_its_answer_once(
    model: StubInThread, server: str, browser: Browser, request: pytest.FixtureRequest
) -> None:
    assert model.stub is not None
    stub = model.stub
    model.call(lambda: stub.reply(CLASSIFIED_AS_ANSWER))
    model.call(lambda: stub.hold(ANSWER))
    with httpx.Client(base_url=server, timeout=WAIT_SECONDS) as api:
        project = api.get("/v1/projects").json()["projects"][0]
        note = api.post(
            f"/v1/projects/{project['project_id']}/notes",
            json={"title": "Retrieval", "content": "Retrieval finds documents."},
        ).json()

        with watched_page(browser, request.node.name) as watched:
            page = watched.page
            page.goto(server)
            page.locator(f'#note-list li[data-note-id="{note["note_id"]}"] button').click()
            expect(page.locator("#note-title")).to_have_value("Retrieval")
            # The note's conversations are loaded (the page sends nothing while it loads them).
            expect(page.locator("#chat-send")).to_be_enabled()
            page.locator("#chat-input").fill(QUESTION)
            page.locator("#chat-input").press("Enter")
            model.wait_until_holding()  # the run waits for the model, mid-way
            expect(page.locator("#chat-log p.step")).to_have_count(2)  # both steps seen

            page.reload()
            expect(page.locator("#note-title")).to_have_value("Retrieval")
            expect(page.locator("#chat-send")).to_be_disabled()  # following the running run
            model.call(stub.release)

            answer = page.locator("#chat-log .msg.assistant .text")
            expect(answer).to_have_text([ANSWER])
            expect(page.locator("#chat-send")).to_be_enabled()  # its final arrived
            expect(page.locator("#chat-log .msg.user .text")).to_have_text([QUESTION])
            # the steps before the reload are not replayed: the page joined after them
            expect(page.locator("#chat-log p.step")).to_have_count(0)

        threads = api.get("/v1/threads").json()["threads"]
        assert [(t["status"], t["last_reason"]) for t in threads] == [("idle", "completed")]


MARKDOWN_ANSWER = """## Summary

Retrieval finds **relevant** documents first.

<img src=x onerror="window.pwned = 'img'"><script>window.pwned = 'script'</script>"""


def test_an_answer_in_markdown_shows_as_markdown_and_nothing_in_it_runs(
    model: StubInThread, server: str, browser: Browser, request: pytest.FixtureRequest
) -> None:
    assert model.stub is not None
    stub = model.stub
    model.call(lambda: stub.reply(CLASSIFIED_AS_ANSWER))
    model.call(lambda: stub.reply(MARKDOWN_ANSWER))
    with httpx.Client(base_url=server, timeout=WAIT_SECONDS) as api:
        project = api.get("/v1/projects").json()["projects"][0]
        note = api.post(
            f"/v1/projects/{project['project_id']}/notes",
            json={"title": "Markdown answers", "content": "Retrieval."},
        ).json()

        with watched_page(browser, request.node.name) as watched:
            page = watched.page
            page.goto(server)
            page.locator(f'#note-list li[data-note-id="{note["note_id"]}"] button').click()
            expect(page.locator("#note-title")).to_have_value("Markdown answers")
            expect(page.locator("#chat-send")).to_be_enabled()  # its conversations loaded
            page.locator("#chat-input").fill("What does retrieval do?")
            page.locator("#chat-input").press("Enter")

            for _ in ("as it streamed", "after a reload, from the transcript"):
                answer = page.locator("#chat-log .msg.assistant .text")
                expect(answer.locator("h2")).to_have_text(["Summary"])
                expect(answer.locator("strong")).to_have_text(["relevant"])
                expect(answer.locator("img, script")).to_have_count(0)
                expect(answer).not_to_contain_text("**")
                expect(page.locator("#chat-send")).to_be_enabled()
                assert page.evaluate("() => window.pwned") is None
                page.reload()
