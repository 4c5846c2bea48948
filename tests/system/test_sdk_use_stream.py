"""A React page written as a LangGraph app is (``useStream`` of ``@langchain/langgraph-sdk``, the
npm packages pinned in ``use_stream_page/package-lock.json``, bundled by esbuild: nothing from a
CDN) drives a real Consentry server from another origin (``CONSENTRY_CORS_ORIGINS``), in Debian's
Chromium: a message and its answer growing token by token (the offline model), a consent shown
with its approval id and approved with ``submit(undefined, {command: {resume}})``, a raw
``interrupt()`` answered, a page with ``useStream``'s defaults (no ``reconnectOnMount``), the
thread's state at an interrupt, a reload in the middle of a run that rejoins it
(``reconnectOnMount``: the run id kept in sessionStorage, ``joinStream``), and a past message
edited and sent again (a fork), its branches switched, and a consent left on another branch.

What the page shows is asserted, and what the server recorded beside it (``/v1/approvals``, the
thread's audit trail). Screenshots: ``test-artifacts/screenshots/<test>.png``, and
``<test>-<moment>.png`` for the moments in between.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import Page, Response, expect

from tests.sse import CREATED, DRAFTED_NOTE, OFFLINE_ANSWER, QUESTION, SUMMARY_TITLE
from tests.system.browser import ARTIFACTS, WatchedPage
from tests.system.held_answer_graph import HELD_ANSWER_DIR, RELEASED
from tests.system.npm_pages import bundled_page, served
from tests.system.server import serve

pytestmark = pytest.mark.npm

PAGE_SOURCE = Path(__file__).parent / "use_stream_page"
WAIT_MS = 20_000
GRAPHS = (
    "city=consentry_graphs.examples.ask_city:graph,"
    "agent=consentry_graphs.examples.tool_review_agent:graph,"
    "held=tests.system.held_answer_graph:build_held_answer_graph"
)

SUMMARIZE = "Add a summary of our discussion to my note"
ASKED_ON_THE_PAGE = [QUESTION, OFFLINE_ANSWER, SUMMARIZE, DRAFTED_NOTE]
"""The messages the page shows when the tutor asks to save a summary."""


# --- the page: installed, bundled and served from an origin of its own -------------------------


@pytest.fixture(scope="session")
def page_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``npm ci`` (skipped while ``node_modules`` matches the lock), then esbuild's bundle of
    ``src/main.jsx`` beside ``index.html`` in a folder of its own."""
    return bundled_page(
        PAGE_SOURCE,
        tmp_path_factory.mktemp("use-stream-page"),
        "src/main.jsx",
        "--format=esm",
        "--jsx=automatic",
        '--define:process.env.NODE_ENV="production"',
    )


@pytest.fixture(scope="module")
def frontend(page_bundle: Path) -> Iterator[str]:
    with served(page_bundle) as origin:
        yield origin


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the ``held`` graph and the test share (``holding``, ``release``)."""
    return tmp_path_factory.mktemp("held")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, frontend: str, held: Path) -> Iterator[str]:
    env = {
        "CONSENTRY_CORS_ORIGINS": frontend,
        "CONSENTRY_GRAPHS": GRAPHS,
        HELD_ANSWER_DIR: str(held),
    }
    with serve(tmp_path_factory.mktemp("use-stream") / "c.db", env=env) as base_url:
        yield base_url


# --- steps ---------------------------------------------------------------------------------------


def open_page(
    page: Page,
    frontend: str,
    server: str,
    assistant: str,
    *,
    reconnect: bool = True,
    history: bool = False,
    blocks: bool = False,
) -> None:
    query = {
        "api": server,
        "assistant": assistant,
        "reconnect": "1" if reconnect else "0",
        "history": "1" if history else "0",
        "blocks": "1" if blocks else "0",
    }
    page.goto(f"{frontend}/index.html?{urlencode(query)}")
    expect(page.locator("#thread")).to_have_text("no thread yet")


def send(page: Page, text: str) -> None:
    page.locator("#message").fill(text)
    page.locator("#send").click()


def expect_idle(page: Page) -> None:
    expect(page.locator("#status")).to_have_attribute("data-loading", "false", timeout=WAIT_MS)
    expect(page.locator("#error")).to_have_count(0)


def resend(page: Page, index: int, text: str) -> None:
    """Edit the page's person's message ``index`` and send it again."""
    human = page.locator(".msg.human").nth(index)
    human.locator(".edit").click()
    human.locator(".edit-text").fill(text)
    human.locator(".resend").click()


def shown_state(page: Page) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(page.locator("#state").inner_text())
    return state


def snapshot(page: Page, request: pytest.FixtureRequest, moment: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{moment}.png"), full_page=True)


def wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + WAIT_MS / 1000
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def streamed_answers(page: Page) -> list[str]:
    """The assistant's text as each render showed it while the run streamed."""
    renders: list[dict[str, Any]] = page.evaluate("window.__renders")
    return [r["answers"][-1] for r in renders if r["loading"] and r["answers"]]


# --- the tests -----------------------------------------------------------------------------------


def test_a_message_streams_its_answer_and_a_consent_is_approved_from_the_page(
    watched: WatchedPage,
    api: httpx.Client,
    frontend: str,
    server: str,
    request: pytest.FixtureRequest,
) -> None:
    page = watched.page
    open_page(page, frontend, server, "tutor")

    send(page, QUESTION)

    expect(page.locator(".msg.human .text")).to_have_text([QUESTION])
    expect(page.locator(".msg.ai .text")).to_have_text([OFFLINE_ANSWER], timeout=WAIT_MS)
    expect_idle(page)
    growing = streamed_answers(page)
    assert len(growing) >= 3, growing  # tokens were shown before the run ended
    assert growing[-1] == OFFLINE_ANSWER or OFFLINE_ANSWER.startswith(growing[-1]), growing
    assert growing[0] != OFFLINE_ANSWER, growing  # the first token came before the rest
    assert all(a != b and b.startswith(a) for a, b in pairwise(growing)), growing
    thread_id = page.locator("#thread").inner_text()
    snapshot(page, request, "answered")

    send(page, SUMMARIZE)

    card = page.locator("#interrupt")
    expect(card).to_be_visible(timeout=WAIT_MS)
    interrupt_id = card.get_attribute("data-interrupt-id")
    assert interrupt_id
    expect(card.locator(".interrupt-id")).to_have_text(interrupt_id)
    asked = json.loads(card.locator(".interrupt-value").inner_text())
    assert (asked["kind"], asked["proposal"]["title"]) == ("note_create", SUMMARY_TITLE)
    assert asked["allowed_decisions"] == ["approve", "edit", "reject"]
    expect(page.locator(".msg .text")).to_have_text(
        [QUESTION, OFFLINE_ANSWER, SUMMARIZE, DRAFTED_NOTE]
    )
    inbox = api.get("/v1/approvals", params={"status": "pending"}).json()["approvals"]
    assert [(a["approval_id"], a["kind"], a["thread_id"]) for a in inbox] == [
        (interrupt_id, "note_create", thread_id)
    ]
    snapshot(page, request, "asked")

    card.locator("#approve").click()

    expect(page.locator(".msg .text")).to_have_text(
        [QUESTION, OFFLINE_ANSWER, SUMMARIZE, DRAFTED_NOTE, CREATED], timeout=WAIT_MS
    )
    expect(card).to_have_count(0)
    expect_idle(page)
    state = shown_state(page)
    assert state["decision"]["approval_id"] == interrupt_id
    assert state["decision"]["decision"] == "approve"
    assert "__interrupt__" not in state
    expect(page.locator("#runs li")).to_have_count(3)  # each run's id, from Content-Location
    decided = api.get(f"/v1/approvals/{interrupt_id}").json()
    assert decided["status"] == "approved"
    audit = api.get(f"/v1/threads/{thread_id}/audit").json()
    assert interrupt_id in json.dumps(audit)
    notes = api.get(f"/v1/projects/{state['project_id']}/notes").json()["notes"]
    assert [n["title"] for n in notes] == [SUMMARY_TITLE]


def test_a_raw_interrupt_is_answered_from_the_page_and_the_graph_goes_on(
    watched: WatchedPage, api: httpx.Client, frontend: str, server: str
) -> None:
    page = watched.page
    open_page(page, frontend, server, "city")

    send(page, "Plan a trip")

    card = page.locator("#interrupt")
    expect(card.locator(".interrupt-value")).to_have_text(
        '{\n  "question": "Which city?"\n}', timeout=WAIT_MS
    )
    interrupt_id = card.get_attribute("data-interrupt-id")
    assert api.get(f"/v1/approvals/{interrupt_id}").json()["status"] == "pending"

    card.locator("#answer").fill("Lisbon")
    card.locator("#send-answer").click()

    expect(page.locator(".msg .text")).to_have_text(
        ["Plan a trip", "Booked a trip to Lisbon."], timeout=WAIT_MS
    )
    expect_idle(page)
    assert shown_state(page) == {"city": "Lisbon"}
    decided = api.get(f"/v1/approvals/{interrupt_id}").json()
    assert (decided["status"], decided["decided"]["value"]) == ("answered", "Lisbon")


def test_a_page_with_use_streams_defaults_sends_a_message(
    watched: WatchedPage, frontend: str, server: str
) -> None:
    """Without ``reconnectOnMount`` ``useStream`` asks ``on_disconnect: "cancel"``."""
    page = watched.page
    open_page(page, frontend, server, "city", reconnect=False)

    with page.expect_response(lambda r: r.url.endswith("/runs/stream")) as started:
        send(page, "Plan a trip")

    run = started.value
    assert json.loads(run.request.post_data or "{}")["on_disconnect"] == "cancel"
    assert run.status == 200, f"{run.status} {run.text()}"
    expect(page.locator("#interrupt .interrupt-value")).to_have_text(
        '{\n  "question": "Which city?"\n}', timeout=WAIT_MS
    )


def test_the_state_shown_at_an_interrupt_is_the_threads_state_then(
    watched: WatchedPage, api: httpx.Client, frontend: str, server: str
) -> None:
    """LangGraph streams the state (``values``) and then ``{"__interrupt__": [...]}`` as a
    ``values`` frame of its own; ``useStream`` takes only ``__interrupt__`` from a frame that has
    it, so a state sent in the same frame is never shown."""
    page = watched.page
    open_page(page, frontend, server, "tutor")
    send(page, QUESTION)  # something discussed: the tutor proposes a summary of it
    expect(page.locator(".msg.ai .text")).to_have_text([OFFLINE_ANSWER], timeout=WAIT_MS)
    expect_idle(page)

    send(page, SUMMARIZE)

    expect(page.locator("#interrupt")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".msg .text")).to_have_text(
        [QUESTION, OFFLINE_ANSWER, SUMMARIZE, DRAFTED_NOTE]
    )
    thread_id = page.locator("#thread").inner_text()
    values = api.get(f"/threads/{thread_id}/state").json()["values"]
    del values["messages"]
    state = shown_state(page)
    assert state.pop("__interrupt__")[0]["id"] == page.locator("#interrupt").get_attribute(
        "data-interrupt-id"
    )
    assert state == values  # the proposal, the intent, ... as the thread has them


def test_a_reload_mid_run_rejoins_the_run_and_shows_its_end(
    watched: WatchedPage, frontend: str, server: str, held: Path, request: pytest.FixtureRequest
) -> None:
    page = watched.page
    open_page(page, frontend, server, "held")
    send(page, QUESTION)
    wait_for_file(held / "holding")  # the run waits mid-way, after its answer
    expect(page.locator(".msg.ai .text")).to_have_text([OFFLINE_ANSWER])
    expect(page.locator("#status")).to_have_attribute("data-loading", "true")
    thread_id = page.locator("#thread").inner_text()
    [run_id] = page.locator("#runs li").all_inner_texts()
    snapshot(page, request, "before-reload")

    with page.expect_response(lambda r: r.url.split("?")[0].endswith("/stream")) as joined:
        page.reload()

    join: Response = joined.value
    assert join.url.startswith(f"{server}/threads/{thread_id}/runs/{run_id}/stream?")
    assert join.request.method == "GET"
    assert join.request.headers.get("last-event-id") == "-1"  # useStream: the whole run again
    assert join.status == 200, f"{join.status} {join.text()}"
    expect(page.locator("#thread")).to_have_text(thread_id)
    expect(page.locator("#status")).to_have_attribute("data-loading", "true")
    expect(page.locator(".msg .text")).to_have_text([QUESTION, OFFLINE_ANSWER])
    snapshot(page, request, "rejoined")

    (held / "release").write_text("go")

    expect(page.locator(".msg .text")).to_have_text(
        [QUESTION, OFFLINE_ANSWER, RELEASED], timeout=WAIT_MS
    )
    expect_idle(page)
    stored = page.evaluate("(id) => sessionStorage.getItem(`lg:stream:${id}`)", thread_id)
    assert stored is None, "the run's id is forgotten once it ended"


def test_a_past_message_is_edited_and_sent_again_and_the_branches_switch(
    watched: WatchedPage,
    api: httpx.Client,
    frontend: str,
    server: str,
    request: pytest.FixtureRequest,
) -> None:
    """Agent Chat UI's edit: the new text is sent from the state the message was first asked
    in (its first seen state's parent checkpoint); the server forks the thread there, and the
    message's branches are switched on the page. Editing a message while a consent waits
    leaves the consent's branch: the card goes, and the consent ends ``superseded``. (A
    thread's first message has no state before it, on the Agent Server too: `useStream` sends
    no checkpoint for it.)"""
    page = watched.page
    humans = page.locator(".msg.human")
    open_page(page, frontend, server, "tutor", history=True)
    send(page, QUESTION)
    expect(page.locator(".msg.ai")).to_have_count(1, timeout=WAIT_MS)
    expect_idle(page)
    send(page, "What is chunking?")
    expect(page.locator(".msg.ai")).to_have_count(2, timeout=WAIT_MS)
    expect_idle(page)
    thread_id = page.locator("#thread").inner_text()

    resend(page, 1, "What is spaced repetition?")

    expect(page.locator(".msg.human .text")).to_have_text(
        [QUESTION, "What is spaced repetition?"], timeout=WAIT_MS
    )
    expect(page.locator(".msg.ai")).to_have_count(2, timeout=WAIT_MS)
    expect_idle(page)
    expect(humans.nth(1).locator(".branch")).to_have_text("2/2", timeout=WAIT_MS)
    snapshot(page, request, "edited")
    head = api.get(f"/threads/{thread_id}/state").json()
    assert [m["content"] for m in head["values"]["messages"] if m["type"] == "human"] == [
        QUESTION,
        "What is spaced repetition?",
    ]

    humans.nth(1).locator(".previous").click()

    expect(page.locator(".msg.human .text")).to_have_text([QUESTION, "What is chunking?"])
    expect(humans.nth(1).locator(".branch")).to_have_text("1/2")
    snapshot(page, request, "first-branch")
    humans.nth(1).locator(".next").click()
    expect(page.locator(".msg.human .text")).to_have_text([QUESTION, "What is spaced repetition?"])

    send(page, SUMMARIZE)
    card = page.locator("#interrupt")
    expect(card).to_be_visible(timeout=WAIT_MS)
    interrupt_id = card.get_attribute("data-interrupt-id")
    resend(page, 1, "What is recall?")

    expect(page.locator(".msg.human .text")).to_have_text(
        [QUESTION, "What is recall?"], timeout=WAIT_MS
    )
    expect(page.locator(".msg.ai")).to_have_count(2, timeout=WAIT_MS)
    expect_idle(page)
    expect(card).to_have_count(0)
    expect(humans.nth(1).locator(".branch")).to_have_text("3/3", timeout=WAIT_MS)
    snapshot(page, request, "superseded")
    assert api.get(f"/v1/approvals/{interrupt_id}").json()["status"] == "superseded"
    pending = api.get("/v1/approvals", params={"status": "pending"}).json()["approvals"]
    assert [a for a in pending if a["thread_id"] == thread_id] == []


def test_a_message_sent_as_content_blocks_is_read_and_asks_the_tutors_consent(
    watched: WatchedPage, api: httpx.Client, frontend: str, server: str
) -> None:
    """Agent Chat UI sends a message's content as LangChain content blocks: the tutor reads
    their text, answers, and asks its consent for the summary as for a plain string."""
    page = watched.page
    open_page(page, frontend, server, "tutor", blocks=True)

    with page.expect_request(lambda r: r.url.endswith("/runs/stream")) as sent:
        send(page, QUESTION)
    expect(page.locator(".msg.ai .text")).to_have_text([OFFLINE_ANSWER], timeout=WAIT_MS)
    expect_idle(page)
    send(page, SUMMARIZE)

    body = json.loads(sent.value.post_data or "{}")
    assert body["input"]["messages"][0]["content"] == [{"type": "text", "text": QUESTION}]
    card = page.locator("#interrupt")
    expect(card).to_be_visible(timeout=WAIT_MS)
    asked = json.loads(card.locator(".interrupt-value").inner_text())
    assert (asked["kind"], asked["proposal"]["title"]) == ("note_create", SUMMARY_TITLE)
    project_id = shown_state(page)["project_id"]

    def summaries() -> int:
        notes = api.get(f"/v1/projects/{project_id}/notes").json()["notes"]
        return [n["title"] for n in notes].count(SUMMARY_TITLE)

    before = summaries()  # (the module's server is shared: other tests' notes are there)
    card.locator("#approve").click()
    expect(page.locator(".msg .text")).to_have_text(
        [QUESTION, OFFLINE_ANSWER, SUMMARIZE, DRAFTED_NOTE, CREATED], timeout=WAIT_MS
    )
    expect_idle(page)
    expect(card).to_have_count(0)  # the card went with the decision
    decision = shown_state(page)["decision"]
    assert api.get(f"/v1/approvals/{decision['approval_id']}").json()["status"] == "approved"
    assert summaries() == before + 1


def test_a_tool_call_review_is_approved_with_decisions_from_the_page(
    watched: WatchedPage, api: httpx.Client, frontend: str, server: str
) -> None:
    """LangChain's HumanInTheLoopMiddleware asks a review of the agent's tool calls; the page
    answers as Agent Chat UI's card does (``{"input": {}, "command": {"resume": {"decisions":
    [...]}}}``), through Consentry's consent gate."""
    page = watched.page
    open_page(page, frontend, server, "agent")
    send(page, "Plan a trip to Rome")

    card = page.locator("#interrupt")
    expect(card.locator("#approve-all")).to_be_visible(timeout=WAIT_MS)
    asked = json.loads(card.locator(".interrupt-value").inner_text())
    assert [a["name"] for a in asked["action_requests"]] == ["get_weather", "send_email"]
    thread_id = page.locator("#thread").inner_text()

    def reviews(status: str) -> list[str]:
        listed = api.get("/v1/approvals", params={"status": status}).json()["approvals"]
        return [a["kind"] for a in listed if a["thread_id"] == thread_id]

    assert reviews("pending") == ["tool_call", "tool_call"]  # one consent a reviewed call

    with page.expect_request(lambda r: r.url.endswith("/runs/stream")) as answered:
        card.locator("#approve-all").click()

    expect(page.locator(".msg.ai .text").last).to_have_text(
        "Done. Sunny in Rome, 21°C. Email to team@example.com sent: Trip to Rome.",
        timeout=WAIT_MS,
    )
    expect_idle(page)
    expect(card).to_have_count(0)
    body = json.loads(answered.value.post_data or "{}")
    assert body["input"] == {}
    assert body["command"] == {"resume": {"decisions": [{"type": "approve"}] * 2}}
    assert reviews("pending") == []
    assert reviews("approved") == ["tool_call", "tool_call"]
