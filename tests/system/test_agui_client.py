"""The official AG-UI client (``HttpAgent`` of ``@ag-ui/client`` 1.0, pinned in
``agui_page/package-lock.json``) against a real Consentry server's ``POST /v1/agui/{graph}``.

From Node, ``agui_page/src/drive.mjs`` runs the agent for each step of a conversation (a user
message, or a ``resume``) and prints every event its subscriber got, after the client's own
parsing, enforcement (a stripped field is a warning) and verification (a frame out of order
fails the run), the typed callbacks' view of them (a run's outcome and interrupts, a tool call's
parsed arguments, a message's text) and the agent's messages and state after each run. Every
event type the server sends is asserted as ``HttpAgent`` received it, in whole sequences: text,
steps, tool calls and their results, the state snapshot, ``CUSTOM``, ``RUN_FINISHED`` with its
``success`` and ``interrupt`` outcomes, ``RUN_ERROR`` with Consentry's codes; and, beside it,
what the server recorded (``/v1/approvals``, the notes).

In Chromium, a small CopilotKit-style page (``agui_page/src/main.js``, bundled by esbuild,
served from another origin) sends a message, shows the consent it asks as a card and approves
it. Screenshots: ``test-artifacts/screenshots/<test>.png``, and ``<test>-<moment>.png``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlencode
from uuid import uuid4

import httpx
import pytest
from playwright.sync_api import expect

from tests.sse import (
    AGUI_ANSWERED_IN_A_SECOND_STEP,
    ASK_FOR_SUMMARY,
    CREATED,
    DRAFTED_NOTE,
    OFFLINE_ANSWER,
    QUESTION,
    SUMMARY_TITLE,
)
from tests.system.browser import ARTIFACTS, WatchedPage
from tests.system.frontend_origin import QuietHandler, frontend_origin
from tests.system.npm_pages import bundled_page, installed, served, tool
from tests.system.server import serve

pytestmark = pytest.mark.npm

PAGE_SOURCE = Path(__file__).parent / "agui_page"
DRIVER = PAGE_SOURCE / "src" / "drive.mjs"
DRIVE_SECONDS = 60
WAIT_MS = 20_000
GRAPHS = (
    "city=consentry_graphs.examples.ask_city:graph,"
    "agent=consentry_graphs.examples.tool_review_agent:graph"
)

APPROVE = {"status": "resolved", "payload": {"decision": "approve"}}


# --- the packages, the page and the server -------------------------------------------------------


@pytest.fixture(scope="session")
def driver() -> Path:
    """``drive.mjs``, its packages installed (``npm ci`` unless ``node_modules`` matches the
    lock)."""
    installed(PAGE_SOURCE)
    return DRIVER


@pytest.fixture(scope="session")
def page_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """esbuild's bundle of ``src/main.js`` beside ``index.html`` in a folder of its own."""
    return bundled_page(
        PAGE_SOURCE, tmp_path_factory.mktemp("agui-page"), "src/main.js", "--format=esm"
    )


@pytest.fixture(scope="module")
def frontend(page_bundle: Path) -> Iterator[str]:
    with served(page_bundle) as origin:
        yield origin


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, frontend: str) -> Iterator[str]:
    env = {"CONSENTRY_CORS_ORIGINS": frontend, "CONSENTRY_GRAPHS": GRAPHS}
    with serve(tmp_path_factory.mktemp("agui") / "c.db", env=env) as base_url:
        yield base_url


# --- the Node driver -----------------------------------------------------------------------------


@dataclass
class Drive:
    """What ``drive.mjs`` printed: one dict a line (``kind``: input, event, callback, warning,
    log, result, error), each with its ``step``."""

    lines: list[dict[str, Any]]
    returncode: int
    stderr: str

    def of(self, kind: str, step: int) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["kind"] == kind and line["step"] == step]

    def events(self, step: int) -> list[dict[str, Any]]:
        return [line["event"] for line in self.of("event", step)]

    def types(self, step: int) -> list[str]:
        """The step's event types in order, a run of text contents told once."""
        told: list[str] = []
        for event in self.events(step):
            kind = event["type"]
            if not (kind == "TEXT_MESSAGE_CONTENT" and told and told[-1] == kind):
                told.append(kind)
        return told

    def first(self, step: int, kind: str) -> dict[str, Any]:
        return next(e for e in self.events(step) if e["type"] == kind)

    def input(self, step: int) -> dict[str, Any]:
        (line,) = self.of("input", step)
        return dict(line["input"])

    def callbacks(self, step: int, name: str) -> list[dict[str, Any]]:
        return [line for line in self.of("callback", step) if line["name"] == name]

    def result(self, step: int) -> dict[str, Any]:
        (line,) = self.of("result", step)
        return line

    @property
    def warnings(self) -> list[str]:
        return [line["text"] for line in self.lines if line["kind"] == "warning"]

    @property
    def error(self) -> dict[str, Any] | None:
        return next((line for line in self.lines if line["kind"] == "error"), None)


def drive(
    driver: Path, base_url: str, graph: str, thread_id: str, steps: list[dict[str, Any]]
) -> Drive:
    """Run ``drive.mjs``: one ``HttpAgent`` through ``steps`` on ``thread_id``."""
    done = subprocess.run(
        [tool("node"), str(driver), base_url, graph, thread_id],
        input=json.dumps(steps),
        capture_output=True,
        text=True,
        timeout=DRIVE_SECONDS,
        check=False,
    )
    try:
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    except json.JSONDecodeError:
        pytest.fail(f"drive.mjs printed other than JSON lines:\n{done.stdout}\n{done.stderr}")
    return Drive(lines, done.returncode, done.stderr)


def drive_ok(
    driver: Path, base_url: str, graph: str, thread_id: str, steps: list[dict[str, Any]]
) -> Drive:
    """``drive``, every run received and applied by the client without an error or a warning."""
    driven = drive(driver, base_url, graph, thread_id, steps)
    assert driven.returncode == 0, f"{driven.error}\n{driven.stderr}"
    assert not driven.warnings, driven.warnings
    assert [r["step"] for r in driven.lines if r["kind"] == "result"] == list(range(len(steps)))
    return driven


def message_text(message: dict[str, Any]) -> tuple[str, str]:
    return message["role"], message.get("content", "")


# --- HttpAgent from Node -------------------------------------------------------------------------


def test_a_question_streams_text_steps_and_state_into_the_agent(
    driver: Path, server: str, api: httpx.Client
) -> None:
    thread_id = str(uuid4())

    driven = drive_ok(driver, server, "tutor", thread_id, [{"message": QUESTION}])

    assert driven.types(0) == AGUI_ANSWERED_IN_A_SECOND_STEP
    events = driven.events(0)
    sent = driven.input(0)
    assert [m["content"] for m in sent["messages"]] == [QUESTION]
    started, finished = events[0], events[-1]
    assert (started["threadId"], started["runId"]) == (thread_id, sent["runId"])
    assert (finished["threadId"], finished["runId"]) == (thread_id, sent["runId"])
    assert started["metadata"]["graph"] == "tutor"
    steps = [(e["type"], e["stepName"]) for e in events if e["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "analyze_message"),
        ("STEP_FINISHED", "analyze_message"),
        ("STEP_STARTED", "answer_question"),
        ("STEP_FINISHED", "answer_question"),
    ]
    begun = driven.first(0, "TEXT_MESSAGE_START")
    assert begun["role"] == "assistant"
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 3  # token by token
    assert "".join(deltas) == OFFLINE_ANSWER
    assert {e["messageId"] for e in events if e["type"].startswith("TEXT_")} == {begun["messageId"]}
    assert [c["text"] for c in driven.callbacks(0, "onTextMessageEndEvent")] == [OFFLINE_ANSWER]
    assert finished["outcome"] == {"type": "success"}
    [told] = driven.callbacks(0, "onRunFinishedEvent")
    assert (told["outcome"], told["pendingToolCallIds"]) == ("success", [])

    result = driven.result(0)
    assert [message_text(m) for m in result["messages"]] == [
        ("user", QUESTION),
        ("assistant", OFFLINE_ANSWER),
    ]
    assert result["messages"][1]["id"] == begun["messageId"]
    assert [m["id"] for m in result["newMessages"]] == [begun["messageId"]]
    snapshot = driven.first(0, "STATE_SNAPSHOT")["snapshot"]
    assert result["state"] == snapshot
    assert [m["type"] for m in snapshot["messages"]] == ["human", "ai"]
    assert result["pendingInterrupts"] == []
    stored = api.get(f"/v1/threads/{thread_id}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", QUESTION),
        ("assistant", OFFLINE_ANSWER),
    ]


def test_a_consent_is_an_interrupt_a_resume_approves_once_and_again_is_a_run_error(
    driver: Path, server: str, api: httpx.Client
) -> None:
    thread_id = str(uuid4())
    steps: list[dict[str, Any]] = [
        {"message": QUESTION},
        {"message": ASK_FOR_SUMMARY},
        {"resume": [APPROVE]},
        {"resume": [APPROVE]},  # the same interrupt, answered again
    ]

    driven = drive_ok(driver, server, "tutor", thread_id, steps)

    # the question: as in the test above; then the whole conversation goes with the next message
    assert driven.types(0)[-1] == "RUN_FINISHED"
    asking = driven.input(1)
    assert [message_text(m) for m in asking["messages"]] == [
        ("user", QUESTION),
        ("assistant", OFFLINE_ANSWER),
        ("user", ASK_FOR_SUMMARY),
    ]
    assert "resume" not in asking

    # the consent: the run ends with an interrupt
    assert driven.types(1) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STEP_STARTED",  # the draft, which says what it drafted
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    steps_run = [e["stepName"] for e in driven.events(1) if e["type"] == "STEP_STARTED"]
    assert steps_run == ["analyze_message", "draft_note_creation", "request_note_create_consent"]
    outcome = driven.events(1)[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    [told] = driven.callbacks(1, "onRunFinishedEvent")
    assert (told["outcome"], told["interrupts"]) == ("interrupt", [interrupt])
    assert driven.result(1)["pendingInterrupts"] == [interrupt]
    assert (interrupt["reason"], interrupt["metadata"]["title"]) == ("note_create", SUMMARY_TITLE)
    assert SUMMARY_TITLE in interrupt["message"]
    assert "What is retrieval?" in interrupt["metadata"]["content"]  # the discussion, summarized
    schema = interrupt["responseSchema"]
    assert schema["required"] == ["decision"]
    assert schema["properties"]["decision"]["enum"] == ["approve", "edit", "reject"]
    consent = api.get(f"/v1/approvals/{interrupt['id']}").json()
    assert interrupt["expiresAt"] == consent["expires_at"].replace("Z", "+00:00")
    assert driven.result(1)["state"]["proposal"]["title"] == SUMMARY_TITLE
    assert [m["role"] for m in driven.result(1)["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",  # what the tutor drafted
    ]

    # approved by `runAgent({resume})`: the note is made, the run succeeds
    resumed = driven.input(2)
    assert resumed["resume"] == [{"interruptId": interrupt["id"], **APPROVE}]
    assert driven.types(2) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STEP_STARTED",
        "CUSTOM",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    note = driven.first(2, "CUSTOM")
    assert (note["name"], note["value"]["title"]) == ("consentry.note", SUMMARY_TITLE)
    assert driven.events(2)[-1]["outcome"] == {"type": "success"}
    assert [c["text"] for c in driven.callbacks(2, "onTextMessageEndEvent")] == [CREATED]
    approved = driven.result(2)
    assert [message_text(m) for m in approved["messages"]] == [
        ("user", QUESTION),
        ("assistant", OFFLINE_ANSWER),
        ("user", ASK_FOR_SUMMARY),
        ("assistant", DRAFTED_NOTE),
        ("assistant", CREATED),
    ]
    assert approved["pendingInterrupts"] == []
    decision = approved["state"]["decision"]
    assert (decision["approval_id"], decision["decision"]) == (interrupt["id"], "approve")

    # the same resume again: refused, as a RUN_ERROR the client accepts as a whole run
    assert driven.types(3) == ["RUN_ERROR"]
    refused = driven.events(3)[0]
    assert (refused["code"], refused["metadata"]["status"]) == ("already_decided", 409)
    assert [c["code"] for c in driven.callbacks(3, "onRunErrorEvent")] == ["already_decided"]
    assert driven.result(3)["messages"] == approved["messages"]  # nothing changed

    decided = api.get(f"/v1/approvals/{interrupt['id']}").json()
    assert decided["status"] == "approved"
    assert decided["decided"]["decision"] == "approve"
    notes = api.get(f"/v1/projects/{approved['state']['project_id']}/notes").json()["notes"]
    assert [n["title"] for n in notes] == [SUMMARY_TITLE]


def test_a_cancelled_resume_rejects_the_consent(
    driver: Path, server: str, api: httpx.Client
) -> None:
    thread_id = str(uuid4())
    steps: list[dict[str, Any]] = [
        {"message": QUESTION},  # something discussed: the tutor proposes a summary of it
        {"message": ASK_FOR_SUMMARY},
        {"resume": [{"status": "cancelled"}]},
    ]

    driven = drive_ok(driver, server, "tutor", thread_id, steps)

    assert driven.events(0)[-1]["outcome"] == {"type": "success"}
    (interrupt,) = driven.events(1)[-1]["outcome"]["interrupts"]
    assert driven.input(2)["resume"] == [{"interruptId": interrupt["id"], "status": "cancelled"}]
    assert driven.events(2)[-1]["outcome"] == {"type": "success"}
    assert "CUSTOM" not in driven.types(2)  # no note
    assert driven.result(2)["pendingInterrupts"] == []
    assert api.get(f"/v1/approvals/{interrupt['id']}").json()["status"] == "rejected"


def test_a_raw_interrupt_is_answered_with_any_payload(
    driver: Path, server: str, api: httpx.Client
) -> None:
    thread_id = str(uuid4())
    steps: list[dict[str, Any]] = [
        {"message": "Plan a trip"},
        {"resume": [{"status": "resolved", "payload": "Lisbon"}]},
    ]

    driven = drive_ok(driver, server, "city", thread_id, steps)

    assert driven.types(0) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    (interrupt,) = driven.events(0)[-1]["outcome"]["interrupts"]
    assert set(interrupt) == {"id", "reason", "message", "metadata"}  # no schema: any JSON
    assert (interrupt["reason"], interrupt["message"]) == ("interrupt", "Which city?")
    assert interrupt["metadata"] == {"value": {"question": "Which city?"}}
    assert driven.result(0)["pendingInterrupts"] == [interrupt]
    assert [message_text(m) for m in driven.result(0)["messages"]] == [("user", "Plan a trip")]

    assert driven.input(1)["resume"] == [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": "Lisbon"}
    ]
    assert driven.types(1) == AGUI_ANSWERED_IN_A_SECOND_STEP
    steps_run = [e["stepName"] for e in driven.events(1) if e["type"] == "STEP_STARTED"]
    assert steps_run == ["ask_city", "book_trip"]
    assert driven.events(1)[-1]["outcome"] == {"type": "success"}
    done = driven.result(1)
    assert [message_text(m) for m in done["messages"]] == [
        ("user", "Plan a trip"),
        ("assistant", "Booked a trip to Lisbon."),
    ]
    assert done["state"]["city"] == "Lisbon"
    decided = api.get(f"/v1/approvals/{interrupt['id']}").json()
    assert (decided["status"], decided["decided"]["value"]) == ("answered", "Lisbon")


def test_a_tool_call_review_streams_tool_calls_interrupts_and_results(
    driver: Path, server: str
) -> None:
    thread_id = str(uuid4())
    steps: list[dict[str, Any]] = [
        {"message": "Plan a trip to Rome"},
        {
            "resume": [
                {"status": "resolved", "payload": {"type": "respond", "message": "Rainy."}},
                {"status": "resolved", "payload": {"type": "approve"}},
            ]
        },
    ]

    driven = drive_ok(driver, server, "agent", thread_id, steps)

    assert driven.types(0) == [
        "RUN_STARTED",
        "STEP_STARTED",
        *["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] * 2,
        "STEP_FINISHED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    starts = [e for e in driven.events(0) if e["type"] == "TOOL_CALL_START"]
    assert [s["toolCallName"] for s in starts] == ["get_weather", "send_email"]
    email_args = {"to": "team@example.com", "subject": "Trip to Rome", "body": "Let's go to Rome."}
    ended = driven.callbacks(0, "onToolCallEndEvent")  # the arguments, as the client parsed them
    assert [(c["toolCallName"], c["toolCallArgs"]) for c in ended] == [
        ("get_weather", {"city": "Rome"}),
        ("send_email", email_args),
    ]
    interrupts = driven.events(0)[-1]["outcome"]["interrupts"]
    assert [i["reason"] for i in interrupts] == ["tool_call", "tool_call"]
    assert [i["toolCallId"] for i in interrupts] == [s["toolCallId"] for s in starts]
    assert [i["metadata"]["name"] for i in interrupts] == ["get_weather", "send_email"]
    [told] = driven.callbacks(0, "onRunFinishedEvent")
    assert told["interrupts"] == interrupts
    # HttpAgent made the calls an assistant message of their own (the parent message id)
    plan = driven.result(0)["messages"][-1]
    assert (plan["role"], plan["id"]) == ("assistant", starts[0]["parentMessageId"])
    calls = [(c["id"], c["function"]["name"]) for c in plan["toolCalls"]]
    assert calls == [(s["toolCallId"], s["toolCallName"]) for s in starts]
    assert json.loads(plan["toolCalls"][1]["function"]["arguments"]) == email_args

    resumed = driven.input(1)["resume"]
    assert [r["interruptId"] for r in resumed] == [i["id"] for i in interrupts]
    assert driven.types(1) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "TOOL_CALL_RESULT",
        "STEP_FINISHED",
        "STEP_STARTED",
        "TOOL_CALL_RESULT",
        "STEP_FINISHED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    results = [e for e in driven.events(1) if e["type"] == "TOOL_CALL_RESULT"]
    assert [(r["toolCallId"], r["content"]) for r in results] == [
        ("weather-1", "Rainy."),
        ("email-1", "Email to team@example.com sent: Trip to Rome."),
    ]
    reply = "Done. Rainy. Email to team@example.com sent: Trip to Rome."
    done = driven.result(1)
    assert [(m["role"], m.get("toolCallId"), m.get("content")) for m in done["messages"]] == [
        ("user", None, "Plan a trip to Rome"),
        ("assistant", None, None),
        ("tool", "weather-1", "Rainy."),
        ("tool", "email-1", "Email to team@example.com sent: Trip to Rome."),
        ("assistant", None, reply),
    ]
    assert done["state"]["messages"][-1]["content"] == reply
    assert driven.events(1)[-1]["outcome"] == {"type": "success"}


def test_an_http_error_fails_the_run_in_the_client(driver: Path, server: str) -> None:
    driven = drive(driver, server, "nope", str(uuid4()), [{"message": "Hi"}])

    assert driven.returncode == 1
    assert driven.error is not None
    assert (driven.error["status"], driven.error["step"]) == (404, 0)
    assert driven.error["message"].startswith("HTTP 404: ")
    assert "graph_not_found" in driven.error["message"]


class _FakeAgent(QuietHandler):
    """An AG-UI server that streams ``frames`` (each with the request's thread and run ids)."""

    frames: ClassVar[tuple[dict[str, Any], ...]] = ()

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ids = {"threadId": body["threadId"], "runId": body["runId"]}
        frames = [
            {**frame, **ids} if frame["type"].startswith("RUN_") else frame for frame in self.frames
        ]
        payload = "".join(f"data: {json.dumps(frame)}\n\n" for frame in frames).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _OutOfOrder(_FakeAgent):
    frames = (
        {"type": "RUN_STARTED"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
    )


class _UnknownField(_FakeAgent):
    frames = (
        {"type": "RUN_STARTED", "surprise": 1},
        {"type": "RUN_FINISHED", "outcome": {"type": "success"}},
    )


def test_a_frame_the_client_rejects_fails_the_driver(driver: Path) -> None:
    """The driver's own check: what ``@ag-ui/client`` refuses is an exit, not a quiet pass."""
    with frontend_origin(_OutOfOrder) as fake:
        driven = drive(driver, fake, "tutor", str(uuid4()), [{"message": "Hi"}])

    assert driven.returncode == 1
    assert driven.error is not None
    assert "No active text message found with ID 'm1'" in driven.error["message"]


def test_a_field_the_client_strips_is_a_warning_of_the_driver(driver: Path) -> None:
    """The driver's own check: what ``@ag-ui/client`` strips (with a warning, the run going on)
    is told, so ``drive_ok`` fails on it."""
    with frontend_origin(_UnknownField) as fake:
        driven = drive(driver, fake, "tutor", str(uuid4()), [{"message": "Hi"}])

    assert driven.returncode == 0
    assert driven.types(0) == ["RUN_STARTED", "RUN_FINISHED"]
    assert "surprise" not in driven.events(0)[0]
    assert any("'/surprise' on RUN_STARTED" in w for w in driven.warnings), driven.warnings


# --- HttpAgent in a page, in Chromium ------------------------------------------------------------


def snapshot(watched: WatchedPage, request: pytest.FixtureRequest, moment: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{request.node.name}-{moment}.png"
    watched.page.screenshot(path=str(path), full_page=True)


def test_a_page_asks_a_consent_as_a_card_and_approving_it_finishes_the_run(
    watched: WatchedPage,
    api: httpx.Client,
    frontend: str,
    server: str,
    request: pytest.FixtureRequest,
) -> None:
    page = watched.page
    warned: list[str] = []  # @ag-ui/client warns of what it strips or translates
    page.on("console", lambda m: warned.append(m.text) if m.type == "warning" else None)
    page.goto(f"{frontend}/index.html?{urlencode({'api': server, 'graph': 'tutor'})}")
    thread_id = page.locator("#thread").inner_text()
    assert thread_id

    page.locator("#message").fill(QUESTION)
    page.locator("#send").click()

    texts = page.locator("#conversation .msg .text")
    expect(texts).to_have_text([QUESTION, OFFLINE_ANSWER], timeout=WAIT_MS)
    expect(page.locator("#status")).to_have_attribute("data-running", "false", timeout=WAIT_MS)

    page.locator("#message").fill(ASK_FOR_SUMMARY)
    page.locator("#send").click()

    card = page.locator("#interrupt")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#status")).to_have_attribute("data-running", "false", timeout=WAIT_MS)
    expect(card).to_have_attribute("data-reason", "note_create")
    expect(card.locator(".interrupt-message")).to_contain_text(SUMMARY_TITLE)
    expect(card.locator(".interrupt-details")).to_contain_text("What is retrieval?")
    interrupt_id = card.get_attribute("data-interrupt-id")
    assert interrupt_id
    pending = api.get(f"/v1/approvals/{interrupt_id}").json()
    assert (pending["status"], pending["thread_id"]) == ("pending", thread_id)
    snapshot(watched, request, "asked")

    card.locator("#approve").click()

    expect(texts).to_have_text(
        [QUESTION, OFFLINE_ANSWER, ASK_FOR_SUMMARY, DRAFTED_NOTE, CREATED], timeout=WAIT_MS
    )
    expect(page.locator("#status")).to_have_attribute("data-running", "false", timeout=WAIT_MS)
    expect(card).to_have_count(0)
    expect(page.locator("#error")).to_have_count(0)
    seen: list[dict[str, Any]] = page.evaluate("window.__events")
    finished = [e["outcome"]["type"] for e in seen if e["type"] == "RUN_FINISHED"]
    assert finished == ["success", "interrupt", "success"]
    assert [e["name"] for e in seen if e["type"] == "CUSTOM"] == ["consentry.note"]
    decided = api.get(f"/v1/approvals/{interrupt_id}").json()
    assert decided["status"] == "approved"
    assert decided["decided"]["decision"] == "approve"
    assert not warned, warned
