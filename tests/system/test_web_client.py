"""``backend/consentry/web/consentry.js``, the reference JavaScript client, in real headless
Chromium.

How test code runs in the page: each test opens a blank page that ``context.route`` serves at
``/__test__/client.html`` on the server's own origin, with the app's own security headers
(``consentry.api.web.SECURITY_HEADERS``: ``script-src 'self'``, no inline script, no eval). Test
code runs through ``page.evaluate`` of an async function: Playwright calls it over the DevTools
protocol, which the page's CSP does not govern, and the function loads the module the way an app
does, ``await import("/web/consentry.js")`` (same origin, so the policy allows it). Its ``fetch``
calls go to the real server process (``tests/system/server.py``), unless a test scripts the
server's side with ``context.route`` (a stream cut by a ``retry:`` hint, a network that stays
down) or, for a body that breaks off mid-way, with a ``fetch`` stub in the page. The parser is fed
``ReadableStream``s built in the page, cut at every byte.

Handlers given to the client note every call (``PRELUDE``'s ``recorder``), so a test asserts the
whole dispatch: each event once, to its typed handler and then to ``handlers.event``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Request, Route
from sse_starlette import ServerSentEvent

from consentry.api.web import SECURITY_HEADERS
from consentry.schemas.events import (
    EVENT_ADAPTER,
    Event,
    FinalEvent,
    MessageEvent,
    RunStartedEvent,
    StepEvent,
    TokenEvent,
)
from tests.sse import ASK_FOR_SUMMARY, QUESTION, TUTOR_ASKED, numbering, parse_frames
from tests.system.browser import WatchedPage
from tests.system.server import API_KEY, serve

WAIT_MS = 20_000
TEST_PAGE = "/__test__/client.html"
TEST_PAGE_HTML = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<link rel="icon" href="data:,"><title>consentry.js under test</title></head>'
    "<body></body></html>"
)

PRELUDE = """
const consentry = await import("/web/consentry.js");
const EVENT_TYPES = [
  "run_started", "step", "token", "model_retry", "message", "consent", "note", "error", "final",
  "resync",
];

/** Handlers for every event type, `event` and `reconnecting`, noting each call in order. */
function recorder() {
  const calls = [];
  const reconnects = [];
  const handlers = {
    event: (event) => calls.push({ handler: "event", event }),
    reconnecting: (info) => reconnects.push(info),
  };
  for (const type of EVENT_TYPES) handlers[type] = (event) => calls.push({ handler: type, event });
  return { handlers, calls, reconnects };
}

/** How `promise` was refused: a plain object the test can read. */
async function refusal(promise) {
  try {
    await promise;
  } catch (error) {
    return {
      name: error.name,
      is_consentry_error: error instanceof consentry.ConsentryError,
      status: error.status ?? null,
      code: error.code ?? null,
      message: error.message,
      details: error.details ?? null,
    };
  }
  throw new Error("the promise was not refused");
}

function timeout(ms) {
  return new Promise((_, reject) => {
    setTimeout(() => reject(new Error(`the test script still waited after ${ms} ms`)), ms);
  });
}
"""


# ---- fixtures: one server and one browser per module, a fresh page per test ----


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("web-client") / "c.db") as base_url:
        yield base_url


@pytest.fixture
def page(watched: WatchedPage, server: str) -> Page:
    open_test_page(watched.page, server)
    return watched.page


# ---- helpers: the page, the client's calls, the server's side ----


def open_test_page(page: Page, base_url: str) -> None:
    """A blank page on ``base_url``'s origin, under the app's Content Security Policy."""

    def serve_test_page(route: Route) -> None:
        route.fulfill(
            status=200,
            headers={**SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8"},
            body=TEST_PAGE_HTML,
        )

    page.context.route(f"{base_url}{TEST_PAGE}", serve_test_page)
    page.goto(f"{base_url}{TEST_PAGE}")


def run_in_page(page: Page, script: str, arg: Any = None) -> Any:
    """Run ``script``, the body of an async function of ``arg`` after ``PRELUDE``; its result.
    A script still waiting after ``WAIT_MS`` fails (a client that never resolves, say)."""
    return page.evaluate(
        "async (arg) => {\n" + PRELUDE + "const test = async () => {\n" + script + "\n};\n"
        "return await Promise.race([test(), timeout(" + str(WAIT_MS) + ")]);\n}",
        arg,
    )


def dispatched(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """The events a recorder saw, once it is checked that each went to its typed handler and
    then to ``handlers.event``, once each."""
    calls = recording["calls"]
    events = [call["event"] for call in calls if call["handler"] == "event"]
    expected = [
        call
        for event in events
        for call in (
            {"handler": event["type"], "event": event},
            {"handler": "event", "event": event},
        )
    ]
    assert calls == expected, "each event goes to handlers[type], then handlers.event, once"
    return events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] != "token"]


def requests_to(page: Page, method: str, path: str) -> list[Request]:
    """The page's requests to ``path`` from now on (headers as the browser sent them)."""
    seen: list[Request] = []

    def note(request: Request) -> None:
        if request.method == method and request.url.split("?")[0].endswith(path):
            seen.append(request)

    page.on("request", note)
    return seen


def stored_events(response: httpx.Response) -> list[dict[str, Any]]:
    """A stream's events as JSON, without tokens (a replay has none)."""
    assert response.status_code == 200, response.text
    events = [json.loads(frame.data) for frame in parse_frames(response.text)]
    return [e for e in events if e["type"] != "token"]


def create_note(api: httpx.Client) -> dict[str, Any]:
    projects = api.get("/v1/projects").json()["projects"]
    default = next(p for p in projects if p["is_default"])
    response = api.post(
        f"/v1/projects/{default['project_id']}/notes",
        json={"title": "RAG", "content": "Retrieval first, then generation."},
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


# The server's side, scripted: typed events in the frames a real server sends (sse_starlette).
SCRIPTED_THREAD = "5f0c1c1e-3b55-4c39-9a57-2d0a4a6c7e11"
SCRIPTED_RUN = "b7b0f5d2-77f4-4f57-8f5e-0c1d9f6a2b33"


def scripted_run() -> list[Event]:
    """A run of four events on ``SCRIPTED_THREAD``: seqs 1 to 4."""
    envelope: dict[str, Any] = {
        "thread_id": SCRIPTED_THREAD,
        "run_id": SCRIPTED_RUN,
        "ts": datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
    }
    return [
        RunStartedEvent(seq=1, graph="tutor", trigger="message", **envelope),
        StepEvent(seq=2, node="analyze_message", label="Reading your message", **envelope),
        MessageEvent(seq=3, message_id="m-1", content="Retrieval comes first.", **envelope),
        FinalEvent(seq=4, reason="completed", **envelope),
    ]


def frames(*events: Event) -> bytes:
    return b"".join(
        ServerSentEvent(data=e.model_dump_json(), event=e.type, id=str(e.seq)).encode()
        for e in events
    )


def reconnect_hint(retry_ms: int) -> bytes:
    comment = "the run continues elsewhere: reconnect with Last-Event-ID"
    return ServerSentEvent(comment=comment, retry=retry_ms).encode()


def forgive_network_errors(watched: WatchedPage) -> None:
    """Chromium logs each scripted network failure as a console error: part of the test's story
    (``WatchedPage`` forgives HTTP statuses only)."""
    logged = "net::ERR_INTERNET_DISCONNECTED"
    watched.problems[:] = [problem for problem in watched.problems if logged not in problem]


def as_json(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(event.model_dump_json())
    return data


def fulfil_stream(route: Route, body: bytes) -> None:
    route.fulfill(
        status=200,
        headers={"Content-Type": "text/event-stream", "X-Thread-Id": SCRIPTED_THREAD},
        body=body,
    )


def script_chat(page: Page, base_url: str, body: bytes) -> None:
    """``POST /v1/chat`` answers ``body``."""
    page.context.route(f"{base_url}/v1/chat", lambda route: fulfil_stream(route, body))


NETWORK_DOWN = "internetdisconnected"


def script_rejoins(page: Page, base_url: str, body: bytes | None) -> list[str | None]:
    """``GET /v1/threads/SCRIPTED_THREAD/stream`` answers ``body`` (None: the network is down);
    the ``Last-Event-ID`` of each such request, in order."""
    last_event_ids: list[str | None] = []

    def rejoin(route: Route) -> None:
        last_event_ids.append(route.request.headers.get("last-event-id"))
        if body is None:
            route.abort(NETWORK_DOWN)
        else:
            fulfil_stream(route, body)

    page.context.route(f"{base_url}/v1/threads/{SCRIPTED_THREAD}/stream", rejoin)
    return last_event_ids


CHAT = """
const recording = recorder();
const client = new consentry.ConsentryClient();
const result = await client.chat({ message: "What is RAG?" }, recording.handlers);
return { result, ...recording };
"""


# ---- streaming a run ----


def test_chat_streams_a_runs_events_in_order_to_typed_and_catch_all_handlers(
    page: Page, server: str
) -> None:
    posts = requests_to(page, "POST", "/v1/chat")

    streamed = run_in_page(page, CHAT)

    events = dispatched(streamed)
    result = streamed["result"]
    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert "token" in [e["type"] for e in events]
    # Stored events numbered 1, 2, 3, ...; each token carries the number of the event before it.
    typed = [EVENT_ADAPTER.validate_python(e) for e in events]
    assert [e["seq"] for e in events] == numbering(typed)
    assert {e["thread_id"] for e in events} == {result["threadId"]}
    assert result == {
        "threadId": events[0]["thread_id"],
        "lastEventId": str(events[-1]["seq"]),
        "final": events[-1],
    }
    assert result["final"]["reason"] == "completed"
    (post,) = posts
    assert post.headers["accept"] == "text/event-stream"
    assert post.headers["idempotency-key"], "every message carries an Idempotency-Key"
    assert streamed["reconnects"] == []


def test_chat_sent_again_with_the_same_idempotency_key_replays_the_first_run(page: Page) -> None:
    replayed = run_in_page(
        page,
        """
        const client = new consentry.ConsentryClient();
        const first = recorder();
        const body = { message: "What is RAG?" };
        const firstResult = await client.chat(body, first.handlers, { idempotencyKey: arg });
        const again = recorder();
        const againResult = await client.chat(body, again.handlers, { idempotencyKey: arg });
        return { first, firstResult, again, againResult };
        """,
        f"web-client-{uuid.uuid4()}",
    )

    first = dispatched(replayed["first"])
    again = dispatched(replayed["again"])
    assert kinds(first) == ["run_started", "step", "step", "message", "final"]
    assert again == [e for e in first if e["type"] != "token"], "the stored events, no new run"
    assert replayed["againResult"] == replayed["firstResult"]


# ---- consents ----


def test_decide_streams_the_resumed_run_and_a_second_decision_is_already_decided(
    watched: WatchedPage, page: Page, api: httpx.Client
) -> None:
    watched.expect_http_status(409)
    note = create_note(api)

    story = run_in_page(
        page,
        """
        const client = new consentry.ConsentryClient();
        const question = await client.chat({ message: arg.question, note_id: arg.noteId });
        const asking = recorder();
        const body = { message: arg.message, note_id: arg.noteId, thread_id: question.threadId };
        const asked = await client.chat(body, asking.handlers);
        const consent = asking.calls.find((call) => call.handler === "consent").event;
        const resuming = recorder();
        const resumed = await client.decide(
          asked.threadId, consent.approval_id, "approve", { comment: "looks right" },
          resuming.handlers,
        );
        const again = await refusal(client.decide(asked.threadId, consent.approval_id, "approve"));
        return { question, asked, asking, resumed, resuming, again };
        """,
        {"question": QUESTION, "message": ASK_FOR_SUMMARY, "noteId": note["note_id"]},
    )

    # The tutor proposes a summary of a discussion only: a question first, in the same thread.
    assert story["question"]["final"]["reason"] == "completed"
    assert story["asked"]["threadId"] == story["question"]["threadId"]
    asked, resumed = dispatched(story["asking"]), dispatched(story["resuming"])
    assert asked[0]["seq"] == int(story["question"]["lastEventId"]) + 1
    assert kinds(asked) == TUTOR_ASKED
    assert story["asked"]["final"]["reason"] == "interrupted"
    assert kinds(resumed) == ["run_started", "step", "step", "note", "message", "final"]
    assert resumed[0]["seq"] == asked[-1]["seq"] + 1
    assert resumed[0]["trigger"] == "resume"
    assert story["resumed"]["threadId"] == story["asked"]["threadId"]
    assert story["resumed"]["final"]["reason"] == "completed"
    (written,) = [e for e in resumed if e["type"] == "note"]
    stored = api.get(f"/v1/notes/{note['note_id']}").json()
    assert (written["version"], stored["version"]) == (2, 2)
    assert stored["content"] == written["content"]
    again = story["again"]
    assert (again["name"], again["is_consentry_error"]) == ("ConsentryError", True)
    assert (again["status"], again["code"]) == (409, "already_decided")
    assert again["details"]["decided"]["decision"] == "approve"
    assert again["details"]["decided"]["comment"] == "looks right"


def test_decide_approval_sent_again_with_the_same_idempotency_key_is_recorded_once(
    page: Page, api: httpx.Client
) -> None:
    note = create_note(api)
    question = stored_events(
        api.post("/v1/chat", json={"message": QUESTION, "note_id": note["note_id"]})
    )
    assert question[-1]["reason"] == "completed", question
    summary = {"message": ASK_FOR_SUMMARY, "note_id": note["note_id"]}
    asked = stored_events(
        api.post("/v1/chat", json={**summary, "thread_id": question[0]["thread_id"]})
    )
    consent = asked[-2]
    assert consent["type"] == "consent", asked
    key = f"web-client-{uuid.uuid4()}"
    decisions = requests_to(page, "POST", f"/v1/approvals/{consent['approval_id']}/decision")

    answers = run_in_page(
        page,
        """
        const client = new consentry.ConsentryClient();
        const options = { idempotencyKey: arg.key };
        const first = await client.decideApproval(arg.approvalId, "approve", options);
        const again = await client.decideApproval(arg.approvalId, "approve", options);
        return { first, again };
        """,
        {"approvalId": consent["approval_id"], "key": key},
    )

    assert answers["again"] == answers["first"]
    assert answers["first"]["approval_id"] == consent["approval_id"]
    assert [r.headers.get("idempotency-key") for r in decisions] == [key, key]
    audit = api.get(f"/v1/threads/{consent['thread_id']}/audit").json()["records"]
    assert [r["action"] for r in audit].count("consent_decided") == 1


# ---- refused requests ----


def test_refused_requests_reject_with_the_apis_status_code_and_details(
    watched: WatchedPage, page: Page
) -> None:
    watched.expect_http_status(404, 422)

    refused = run_in_page(
        page,
        """
        const client = new consentry.ConsentryClient();
        const recording = recorder();
        const both = { message: "Hi", resume: { approval_id: "a", decision: "approve" } };
        const invalid = await refusal(client.chat(both, recording.handlers));
        const unknown = await refusal(client.joinStream(arg, recording.handlers));
        return { invalid, unknown, calls: recording.calls };
        """,
        str(uuid.uuid4()),
    )

    invalid, unknown = refused["invalid"], refused["unknown"]
    assert (invalid["name"], invalid["is_consentry_error"]) == ("ConsentryError", True)
    assert (invalid["status"], invalid["code"]) == (422, "request_invalid")
    assert invalid["details"]["errors"], "details.errors says where"
    assert (unknown["status"], unknown["code"], unknown["is_consentry_error"]) == (
        404,
        "thread_not_found",
        True,
    )
    assert refused["calls"] == []


# ---- joining a thread ----


def test_join_stream_of_an_idle_thread_replays_the_events_after_last_event_id(
    page: Page, api: httpx.Client
) -> None:
    first = stored_events(api.post("/v1/chat", json={"message": "What is RAG?"}))
    thread_id = first[0]["thread_id"]
    second = stored_events(
        api.post("/v1/chat", json={"message": "What is a kana?", "thread_id": thread_id})
    )

    joined = run_in_page(
        page,
        """
        const client = new consentry.ConsentryClient();
        async function join(options) {
          const recording = recorder();
          const result = await client.joinStream(arg.threadId, recording.handlers, options);
          return { result, ...recording };
        }
        return {
          after: await join({ lastEventId: arg.after }),
          all: await join(),
          none: await join({ lastEventId: arg.last }),
        };
        """,
        {"threadId": thread_id, "after": first[-1]["seq"], "last": second[-1]["seq"]},
    )

    assert dispatched(joined["after"]) == second
    assert joined["after"]["result"] == {
        "threadId": thread_id,
        "lastEventId": str(second[-1]["seq"]),
        "final": second[-1],
    }
    assert dispatched(joined["all"]) == first + second
    assert joined["all"]["result"]["final"] == second[-1]
    assert dispatched(joined["none"]) == []
    assert joined["none"]["result"] == {
        "threadId": thread_id,
        "lastEventId": second[-1]["seq"],
        "final": None,
    }
    assert joined["after"]["reconnects"] == joined["all"]["reconnects"] == []


# ---- reconnecting (the server's side scripted) ----


def test_a_stream_ended_by_a_retry_hint_is_rejoined_with_its_last_event_id(
    page: Page, server: str
) -> None:
    run = scripted_run()
    script_chat(page, server, frames(run[0], run[1]) + reconnect_hint(50))
    rejoins = script_rejoins(page, server, frames(run[2], run[3]))

    streamed = run_in_page(page, CHAT)

    assert rejoins == ["2"]
    assert dispatched(streamed) == [as_json(e) for e in run]
    assert streamed["reconnects"] == [
        {"threadId": SCRIPTED_THREAD, "lastEventId": "2", "retryMs": 50}
    ]
    assert streamed["result"] == {
        "threadId": SCRIPTED_THREAD,
        "lastEventId": "4",
        "final": as_json(run[3]),
    }


def test_a_stream_that_breaks_off_mid_way_is_rejoined_with_its_last_event_id(
    page: Page, server: str
) -> None:
    """The body errors once event 2 was dispatched (a real network error cannot be scripted with
    ``route``, which sends whole bodies): a ``fetch`` stub answers the POST."""
    run = scripted_run()
    rejoins = script_rejoins(page, server, frames(run[2], run[3]))

    streamed = run_in_page(
        page,
        """
        const recording = recorder();
        let breakOff;
        const body = new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(arg.sent));
            breakOff = () => controller.error(new TypeError("network error"));
          },
        });
        const step = recording.handlers.step;
        recording.handlers.step = (event) => { step(event); breakOff(); };
        const realFetch = globalThis.fetch;
        globalThis.fetch = (url, init) => url.endsWith("/v1/chat")
          ? Promise.resolve(new Response(body, {
            headers: { "Content-Type": "text/event-stream", "X-Thread-Id": arg.threadId },
          }))
          : realFetch(url, init);
        const client = new consentry.ConsentryClient();
        const result = await client.chat({ message: "What is RAG?" }, recording.handlers);
        return { result, ...recording };
        """,
        {"sent": frames(run[0], run[1]).decode(), "threadId": SCRIPTED_THREAD},
    )

    assert rejoins == ["2"]
    assert dispatched(streamed) == [as_json(e) for e in run]
    assert [r["lastEventId"] for r in streamed["reconnects"]] == ["2"]
    assert streamed["result"]["final"] == as_json(run[3])


def test_rejoining_gives_up_after_max_reconnects_when_the_network_stays_down(
    watched: WatchedPage, page: Page, server: str
) -> None:
    run = scripted_run()
    script_chat(page, server, frames(run[0], run[1]) + reconnect_hint(10))
    rejoins = script_rejoins(page, server, None)

    outcome = run_in_page(
        page,
        """
        const recording = recorder();
        const client = new consentry.ConsentryClient({ maxReconnects: 3 });
        const refused = await refusal(client.chat({ message: "What is RAG?" }, recording.handlers));
        return { refused, ...recording };
        """,
    )

    assert rejoins == ["2", "2", "2"]
    assert dispatched(outcome) == [as_json(run[0]), as_json(run[1])]
    assert [r["lastEventId"] for r in outcome["reconnects"]] == ["2", "2", "2"]
    assert (outcome["refused"]["name"], outcome["refused"]["is_consentry_error"]) == (
        "TypeError",
        False,
    )
    forgive_network_errors(watched)


def test_a_chat_stream_that_ends_before_its_final_without_a_hint_is_rejoined(
    page: Page, server: str
) -> None:
    run = scripted_run()
    script_chat(page, server, frames(run[0], run[1]))
    rejoins = script_rejoins(page, server, frames(run[2], run[3]))

    streamed = run_in_page(page, CHAT)

    assert rejoins == ["2"]
    assert dispatched(streamed) == [as_json(e) for e in run]
    assert streamed["result"]["final"] == as_json(run[3])


def test_a_chat_cut_by_a_hint_before_its_first_event_rejoins_at_its_own_run(
    page: Page, server: str
) -> None:
    """No event id was seen, so the rejoin replays the thread from its start: the events of the
    runs before this one (an earlier message's) are not this chat's and are not dispatched."""
    run = scripted_run()
    earlier = [
        e.model_copy(update={"run_id": "an-earlier-run", "seq": e.seq}) for e in scripted_run()[:2]
    ]
    ours = [e.model_copy(update={"seq": e.seq + 2}) for e in run]
    page.context.route(
        f"{server}/v1/chat",
        lambda route: route.fulfill(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "X-Thread-Id": SCRIPTED_THREAD,
                "X-Run-Id": SCRIPTED_RUN,
            },
            body=reconnect_hint(10),
        ),
    )
    rejoins = script_rejoins(page, server, frames(*earlier, *ours))

    streamed = run_in_page(page, CHAT)

    assert rejoins == [None]
    assert dispatched(streamed) == [as_json(e) for e in ours]
    assert streamed["result"]["final"] == as_json(ours[-1])


def test_a_handler_that_throws_rejects_the_chat_and_is_not_taken_for_a_network_fault(
    page: Page, server: str
) -> None:
    """The app's own bug surfaces: no silent rejoin, no event after it dispatched."""
    run = scripted_run()
    script_chat(page, server, frames(*run))
    rejoins = script_rejoins(page, server, frames(*run))

    outcome = run_in_page(
        page,
        """
        const recording = recorder();
        recording.handlers.step = () => { throw new Error("a bug in the app's step handler"); };
        const client = new consentry.ConsentryClient();
        const refused = await refusal(client.chat({ message: "What is RAG?" }, recording.handlers));
        return { refused, ...recording };
        """,
    )

    assert outcome["refused"]["message"] == "a bug in the app's step handler"
    assert rejoins == []
    assert outcome["reconnects"] == []
    assert [c["event"]["seq"] for c in outcome["calls"]] == [1, 1]  # run_started, then nothing


def test_a_rejoin_names_the_last_stored_event_never_a_token(page: Page, server: str) -> None:
    """Tokens are not stored: another replica refuses a ``Last-Event-ID`` that names one."""
    run = scripted_run()
    token = TokenEvent(
        thread_id=SCRIPTED_THREAD,
        run_id=SCRIPTED_RUN,
        seq=3,
        ts=run[0].ts,
        message_id="m-1",
        delta="Retrieval ",
    )
    message = run[2].model_copy(update={"seq": 4})
    final = run[3].model_copy(update={"seq": 5})
    script_chat(page, server, frames(run[0], run[1], token) + reconnect_hint(10))
    rejoins = script_rejoins(page, server, frames(message, final))

    streamed = run_in_page(page, CHAT)

    assert rejoins == ["2"]
    assert dispatched(streamed) == [as_json(e) for e in (run[0], run[1], token, message, final)]
    assert streamed["result"]["lastEventId"] == "5"


def test_a_rejoin_that_brings_only_another_hint_is_rejoined_again(page: Page, server: str) -> None:
    """A server still draining answers the rejoin with a hint alone: the run is not over."""
    run = scripted_run()
    script_chat(page, server, frames(run[0], run[1]) + reconnect_hint(10))
    answers = iter([reconnect_hint(10), frames(run[2], run[3])])
    last_event_ids: list[str | None] = []

    def rejoin(route: Route) -> None:
        last_event_ids.append(route.request.headers.get("last-event-id"))
        fulfil_stream(route, next(answers))

    page.context.route(f"{server}/v1/threads/{SCRIPTED_THREAD}/stream", rejoin)

    streamed = run_in_page(page, CHAT)

    assert last_event_ids == ["2", "2"]
    assert dispatched(streamed) == [as_json(e) for e in run]
    assert streamed["result"]["final"] == as_json(run[3])


def test_an_aborted_chat_rejects_at_once_and_never_rejoins(page: Page, server: str) -> None:
    run = scripted_run()
    script_chat(page, server, frames(run[0], run[1]) + reconnect_hint(5_000))
    rejoins = script_rejoins(page, server, frames(run[2], run[3]))

    outcome = run_in_page(
        page,
        """
        const recording = recorder();
        const controller = new AbortController();
        recording.handlers.step = () => controller.abort();
        const client = new consentry.ConsentryClient();
        const started = Date.now();
        const refused = await refusal(client.chat(
          { message: "What is RAG?" }, recording.handlers, { signal: controller.signal }));
        return { refused, waitedMs: Date.now() - started, ...recording };
        """,
    )

    assert outcome["refused"]["name"] == "AbortError"
    assert outcome["waitedMs"] < 4_000  # not the hinted 5 s before noticing
    assert outcome["reconnects"] == []
    assert rejoins == []


# ---- the SSE parser ----

PARSER_INPUT = (
    ": ping\r\n\r\n"
    'id: 7\r\nevent: token\r\ndata: {"delta": "“kana”"}\r\n\r\n'
    "event: message\r\ndata: line one\r\ndata:line two\r\ndata\r\ndata: \r\n: a comment\r\n\r\n"
    "retry: soon\r\n\r\n"
    ": the run continues elsewhere\r\nretry: 2000\r\n\r\n"
    "data: cut short, no blank line"
)
PARSED = [
    {"event": "token", "id": "7", "data": '{"delta": "“kana”"}', "retry": None},
    {"event": "message", "id": None, "data": "line one\nline two\n\n", "retry": None},
    {"event": "message", "id": None, "data": None, "retry": 2000},
]


@pytest.mark.parametrize("newline", ["\r\n", "\n", "\r"], ids=["crlf", "lf", "cr"])
def test_read_server_sent_events_parses_frames_cut_at_any_byte(page: Page, newline: str) -> None:
    parsed = run_in_page(
        page,
        """
        const bytes = new TextEncoder().encode(arg);
        function chunked(cuts) {
          return new ReadableStream({
            start(controller) {
              let at = 0;
              for (const cut of [...cuts, bytes.length]) {
                controller.enqueue(bytes.slice(at, cut));
                at = cut;
              }
              controller.close();
            },
          });
        }
        async function read(cuts) {
          const frames = [];
          const stream = chunked(cuts);
          for await (const frame of consentry.readServerSentEvents(stream)) frames.push(frame);
          return frames;
        }
        const everyByte = [];
        for (let cut = 1; cut < bytes.length; cut++) everyByte.push(cut);
        const inTwo = [];
        for (const cut of everyByte) inTwo.push({ cut, frames: await read([cut]) });
        return { whole: await read([]), inTwo, byteByByte: await read(everyByte) };
        """,
        PARSER_INPUT.replace("\r\n", newline),
    )

    assert parsed["whole"] == PARSED
    assert parsed["byteByByte"] == PARSED
    wrong = [two["cut"] for two in parsed["inTwo"] if two["frames"] != PARSED]
    assert wrong == [], "cut in two at these bytes, the frames differ"


# ---- API keys ----


def test_on_unauthorized_is_called_on_a_401_and_a_client_with_a_key_succeeds(
    watched: WatchedPage, key_server: str
) -> None:
    watched.expect_http_status(401)
    open_test_page(watched.page, key_server)

    outcome = run_in_page(
        watched.page,
        """
        const unauthorized = [];
        const onUnauthorized = (key) => unauthorized.push(key);
        const anonymous = new consentry.ConsentryClient({ onUnauthorized });
        const wrongKey = new consentry.ConsentryClient({ apiKey: "not-a-key", onUnauthorized });
        const refusedAnonymous = await refusal(anonymous.listProjects());
        const refusedWrongKey = await refusal(wrongKey.chat({ message: "What is RAG?" }));
        const refusals = [...unauthorized];
        const keyed = new consentry.ConsentryClient({ apiKey: arg, onUnauthorized });
        const projects = await keyed.listProjects();
        const run = await keyed.chat({ message: "What is RAG?" });
        const joined = await keyed.joinStream(run.threadId, {});
        return { refusedAnonymous, refusedWrongKey, refusals, unauthorized, projects, run, joined };
        """,
        API_KEY,
    )

    for refused in (outcome["refusedAnonymous"], outcome["refusedWrongKey"]):
        assert (refused["status"], refused["code"], refused["is_consentry_error"]) == (
            401,
            "unauthorized",
            True,
        )
    assert outcome["refusals"] == [None, "not-a-key"]
    assert outcome["unauthorized"] == outcome["refusals"], "never called for the right key"
    assert [p["name"] for p in outcome["projects"]["projects"]] == ["My notes"]
    assert outcome["run"]["final"]["reason"] == "completed"
    assert outcome["joined"]["final"] == outcome["run"]["final"]
