"""A frontend on its own dev server: a page served from a second origin calls the API in
Chromium with ``fetch`` (``CONSENTRY_CORS_ORIGINS`` lists that origin): a key, JSON, an
``Idempotency-Key`` and a ``Last-Event-ID`` (each needs a preflight), an event stream read to
its ``final``, the exposed headers, and a refusal it can read. A page of an origin not listed
is refused by the browser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.system.browser import WatchedPage
from tests.system.frontend_origin import QuietHandler, frontend_origin
from tests.system.server import serve

PAGE = b"<!doctype html><html><head><title>A frontend</title></head><body>dev</body></html>"

# Runs in the page (its origin is FRONTEND); ``api`` is the server's URL.
CALL_THE_API = """
async (api) => {
  const key = { Authorization: "Bearer k1" };
  const json = { ...key, "Content-Type": "application/json" };
  const readEvents = async (response) => {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    return text.split(/\\r?\\n/).filter((l) => l.startsWith("event: ")).map((l) => l.slice(7));
  };
  const me = await (await fetch(`${api}/v1/me`, { headers: key })).json();
  const body = JSON.stringify({ message: "What is RAG?" });
  const chat = await fetch(`${api}/v1/chat`, {
    method: "POST", headers: { ...json, "Idempotency-Key": "page-1" }, body,
  });
  const seen = {
    status: chat.status,
    threadId: chat.headers.get("X-Thread-Id"),
    runId: chat.headers.get("X-Run-Id"),
    requestId: chat.headers.get("X-Request-ID"),
    events: await readEvents(chat),
  };
  const replay = await fetch(`${api}/v1/chat`, {
    method: "POST", headers: { ...json, "Idempotency-Key": "page-1" }, body,
  });
  const replayed = replay.headers.get("Idempotent-Replayed");
  await replay.text();
  const rejoin = await fetch(`${api}/v1/threads/${seen.threadId}/stream`, {
    headers: { ...key, "Last-Event-ID": "2" },
  });
  const rejoined = await readEvents(rejoin);
  const refused = await fetch(`${api}/v1/threads`);
  const refusal = (await refused.json()).error.code;
  return { me, seen, replayed, rejoined, refused: [refused.status, refusal] };
}
"""
CALL_FROM_ELSEWHERE = """
async (api) => {
  try {
    await fetch(`${api}/v1/me`, { headers: { Authorization: "Bearer k1" } });
    return "read";
  } catch (error) {
    return error.name;
  }
}
"""


class _Page(QuietHandler):
    """A tiny dev server of the frontend's own: one page."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture(scope="module")
def frontend() -> Iterator[str]:
    with frontend_origin(_Page) as origin:
        yield origin


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, frontend: str) -> Iterator[str]:
    env = {"CONSENTRY_API_KEYS": "k1=acme:ada:Ada Lovelace", "CONSENTRY_CORS_ORIGINS": frontend}
    with serve(tmp_path_factory.mktemp("cors") / "c.db", env=env) as base_url:
        yield base_url


def test_a_page_of_a_listed_origin_reads_answers_streams_and_headers(
    server: str, frontend: str, watched: WatchedPage
) -> None:
    watched.expect_http_status(401)  # the refusal the page reads on purpose
    watched.page.goto(frontend)

    got = watched.page.evaluate(CALL_THE_API, server)

    assert got["me"] == {
        "principal": "acme/ada",
        "tenant": "acme",
        "user": "ada",
        "name": "Ada Lovelace",
    }
    seen = got["seen"]
    assert seen["status"] == 200
    assert all(seen[header] for header in ("threadId", "runId", "requestId")), seen
    assert seen["events"][0] == "run_started"
    assert seen["events"][-1] == "final"
    assert got["replayed"] == "true"
    assert got["rejoined"] == [e for e in seen["events"] if e != "token"][2:]
    assert got["refused"] == [401, "unauthorized"]


def test_a_page_of_an_origin_not_listed_cannot_read_the_api(server: str, browser: Browser) -> None:
    context = browser.new_context()  # not watched: the browser reports the refusal as an error
    try:
        page = context.new_page()
        with frontend_origin(_Page) as elsewhere:
            page.goto(elsewhere)
            read = page.evaluate(CALL_FROM_ELSEWHERE, server)
    finally:
        context.close()

    assert read == "TypeError"
