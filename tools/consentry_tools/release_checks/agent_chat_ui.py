"""Release check: LangChain's Agent Chat UI, built from its own source, through whole conversations
against a real Consentry server, in Debian's Chromium (``docs/release-checks.md``).

    .venv/bin/python -m consentry_tools.release_checks.agent_chat_ui --source PATH

``PATH`` is a checkout of ``langchain-ai/agent-chat-ui``. It is copied (without ``node_modules``
and ``.next``), its web font is left out (``next/font/google`` fetches it while it builds, which
an offline machine cannot), it is installed with npm and built with ``next build``, and served
with ``next start``. Consentry serves the tutor and a graph of LangChain's human-in-the-loop
middleware (``consentry_graphs.examples.tool_review_agent``) on a fresh SQLite file, with the
UI's origin in ``CONSENTRY_CORS_ORIGINS``. Then, in the UI:

1. it connects (``GET /info``: no "Failed to connect" toast);
2. a question is answered, its text growing token by token on the page;
3. "add a summary" makes the tutor ask its consent, drawn as the UI's own review card, and it is
   approved; in a new thread, edited (the note saved with the person's text); in another,
   rejected with a message; in another, whose note is named in the thread's metadata
   (``threads.update``, as an SDK client would: the UI itself sends only messages), the tutor
   drafts an edit of that note, which is approved and saved;
4. a middleware review of two tool calls is approved ("Approve All") and the tools' results are
   shown; in another thread one call is rejected with a message and the other's arguments are
   edited, each from its own card;
5. a past message (the thread's first) is edited and sent again (a fork), and the branch
   switcher appears;
6. the threads are listed in the history panel.

What the server recorded is checked beside what the page shows (``/v1/approvals``, the notes).
Screenshots go to ``--artifacts`` (default ``test-artifacts/agent-chat-ui``). The exit status is
0 when every step passed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect, sync_playwright

__all__ = ["main"]

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
WAIT_MS = 30_000
GRAPHS = "agent=consentry_graphs.examples.tool_review_agent:graph"
SUMMARIZE = "Add a summary of our discussion to my note"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="an agent-chat-ui checkout")
    parser.add_argument("--artifacts", type=Path, default=Path("test-artifacts/agent-chat-ui"))
    parser.add_argument("--consentry", default=str(Path(sys.executable).with_name("consentry")))
    args = parser.parse_args(argv)
    args.artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agent-chat-ui-") as work:
        app = _built(args.source, Path(work) / "app")
        ui_port, api_port = _free_port(), _free_port()
        ui = f"http://127.0.0.1:{ui_port}"
        api = f"http://127.0.0.1:{api_port}"
        with (
            _consentry(args.consentry, api_port, Path(work) / "consentry.db", origin=ui),
            _served_ui(app, ui_port),
        ):
            return _check(ui, api, args.artifacts)


# --- the UI, built from its source -------------------------------------------------------------


def _built(source: Path, app: Path) -> Path:
    """A copy of the source, without its web font, installed and built."""
    shutil.copytree(source, app, ignore=shutil.ignore_patterns("node_modules", ".next", ".git"))
    layout = app / "src" / "app" / "layout.tsx"
    text = layout.read_text(encoding="utf-8")
    font = re.search(r'import \{ (\w+) \} from "next/font/google";\n', text)
    if font is not None:
        name = font.group(1)
        text = text.replace(font.group(0), "")
        text = re.sub(rf"const (\w+) = {name}\(\{{.*?\}}\);\n", "", text, flags=re.S)
        text = re.sub(r" className=\{\w+\.className\}", "", text)
        layout.write_text(text, encoding="utf-8")
    _run(["npm", "install", "--no-audit", "--no-fund"], app)
    _run(["npm", "run", "build"], app, env={"NEXT_TELEMETRY_DISABLED": "1"})
    return app


@contextmanager
def _served_ui(app: Path, port: int) -> Iterator[None]:
    command = ["npx", "next", "start", "-p", str(port), "-H", "127.0.0.1"]
    with _process(command, app, {"NEXT_TELEMETRY_DISABLED": "1"}):
        _wait_for(f"http://127.0.0.1:{port}/")
        yield


@contextmanager
def _consentry(consentry: str, port: int, database: Path, *, origin: str) -> Iterator[None]:
    env = {
        "CONSENTRY_DATABASE_URL": f"sqlite:///{database}",
        "CONSENTRY_CORS_ORIGINS": origin,
        "CONSENTRY_GRAPHS": GRAPHS,
    }
    command = [consentry, "serve", "--host", "127.0.0.1", "--port", str(port)]
    with _process(command, Path.cwd(), env):
        _wait_for(f"http://127.0.0.1:{port}/ok")
        yield


# --- the conversations ------------------------------------------------------------------------


def _check(ui: str, api: str, artifacts: Path) -> int:
    failures: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(WAIT_MS)
        steps: list[tuple[str, Callable[[Page, str, str], None]]] = [
            ("connects", _connects),
            ("answers a question", _answers),
            ("approves the tutor's consent from its card", _approves_consent),
            ("edits the tutor's consent from its card", _edits_consent),
            ("rejects the tutor's consent from its card", _rejects_consent),
            ("approves an edit of the note the thread is about", _approves_note_edit),
            ("approves a middleware review of two tool calls", _approves_tool_call),
            ("rejects one reviewed tool call and edits the other", _edits_and_rejects_tool_calls),
            ("edits a past message and sends it again", _edits_past_message),
            ("lists the threads in its history panel", _lists_threads),
        ]
        for index, (name, step) in enumerate(steps, start=1):
            try:
                step(page, ui, api)
                print(f"ok   {index}. {name}")
            except Exception as exc:  # each step is reported, the next one still runs
                failures.append(name)
                print(f"FAIL {index}. {name}: {str(exc).splitlines()[0][:300]}")
            page.screenshot(path=str(artifacts / f"{index:02d}-{_slug(name)}.png"), full_page=True)
        browser.close()
    print(f"{len(steps) - len(failures)}/{len(steps)} passed; screenshots in {artifacts}")
    return 1 if failures else 0


def _open(page: Page, ui: str, api: str, assistant: str = "tutor") -> None:
    page.goto(f"{ui}/?apiUrl={api}&assistantId={assistant}&chatHistoryOpen=true")
    expect(page.get_by_placeholder("Type your message...")).to_be_visible()


def _send(page: Page, text: str) -> None:
    box = page.get_by_placeholder("Type your message...")
    box.fill(text)
    box.press("Enter")


def _connects(page: Page, ui: str, api: str) -> None:
    _open(page, ui, api)
    page.wait_for_timeout(1500)  # the connection check's toast would show by now
    if page.get_by_text("Failed to connect").count():
        raise AssertionError("the UI says it failed to connect")


def _answers(page: Page, ui: str, api: str) -> None:
    _open(page, ui, api)
    page.evaluate(_WATCH_ANSWERS)
    _send(page, "What is retrieval?")
    expect(page.get_by_text("I'm the offline model", exact=False).first).to_be_visible()
    page.wait_for_timeout(500)  # the last token's render
    shown: list[str] = page.evaluate("window.__answers")
    growing = [text for text in shown if text]
    # Longer at each change (markdown drawn half-way may reshape a word, so not each a prefix).
    if len(growing) < 3 or any(len(b) <= len(a) for a, b in itertools.pairwise(growing)):
        raise AssertionError(f"the answer did not grow token by token: {growing[:5]}")


_WATCH_ANSWERS = """() => {
  window.__answers = [];
  const last = () => {
    const answers = document.querySelectorAll("div.group.mr-auto");
    const text = answers.length ? answers[answers.length - 1].querySelector("div.py-1") : null;
    return text ? text.innerText.trim() : "";
  };
  new MutationObserver(() => {
    const text = last();
    const seen = window.__answers;
    if (seen[seen.length - 1] !== text) seen.push(text);
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""
"""Each text the newest AI message shows (its markdown, without its buttons' labels), as the
page changes."""


def _asked(page: Page, ui: str, api: str) -> None:
    """A new thread whose tutor asks to save a summary: its card is shown."""
    _open(page, ui, api)
    _send(page, "What is retrieval?")
    expect(page.get_by_text("I'm the offline model", exact=False).first).to_be_visible()
    _send(page, SUMMARIZE)
    expect(page.get_by_text("I drafted a new note", exact=False).first).to_be_visible()
    expect(page.get_by_text("note_create", exact=False).first).to_be_visible()


def _approves_consent(page: Page, ui: str, api: str) -> None:
    _asked(page, ui, api)
    page.get_by_role("button", name="Approve").first.click()
    expect(page.get_by_text("Done: I created the new note", exact=False).first).to_be_visible()
    _decided(api, "approved", kind="note_create")


def _edits_consent(page: Page, ui: str, api: str) -> None:
    _asked(page, ui, api)
    content = page.get_by_text("Content", exact=True).locator("xpath=following-sibling::textarea")
    content.fill("# My own summary\n\nRetrieval, in my words.\n")
    page.get_by_role("button", name="Submit").first.click()
    expect(page.get_by_text("Done: I saved your version as", exact=False).first).to_be_visible()
    _decided(api, "edited", kind="note_create")
    notes = _get(api, "/v1/projects")["projects"][0]["project_id"]
    listed = _get(api, f"/v1/projects/{notes}/notes")["notes"]
    if not any("Retrieval, in my words." in note.get("content", "") for note in listed):
        raise AssertionError("the edited note is not saved with the person's text")


def _rejects_consent(page: Page, ui: str, api: str) -> None:
    _asked(page, ui, api)
    page.get_by_placeholder("Share feedback with the agent...").fill("Not now, thanks.")
    page.get_by_role("button", name="Submit rejection").click()
    expect(page.get_by_text("I created no note", exact=False).first).to_be_visible()
    rejected = _decided(api, "rejected", kind="note_create")
    if rejected.get("decided", {}).get("comment") != "Not now, thanks.":
        raise AssertionError(f"the rejection's message is not recorded: {rejected}")


def _approves_note_edit(page: Page, ui: str, api: str) -> None:
    """The thread's note named by ``threads.update`` (the UI sends only messages); the tutor's
    edit of it is approved from the card and saved."""
    project = _get(api, "/v1/projects")["projects"][0]["project_id"]
    note = _get(api, f"/v1/projects/{project}/notes")["notes"][0]
    _open(page, ui, api)
    _send(page, "What is retrieval?")
    expect(page.get_by_text("I'm the offline model", exact=False).first).to_be_visible()
    thread_id = re.search(r"threadId=([0-9a-f-]+)", page.url)
    if thread_id is None:
        raise AssertionError(f"no thread in the page's address: {page.url}")
    _send_json(api, f"/threads/{thread_id.group(1)}", {"metadata": {"note_id": note["note_id"]}})
    _send(page, SUMMARIZE)
    expect(page.get_by_text("I drafted an edit of your note", exact=False).first).to_be_visible()
    expect(page.get_by_text("note_edit", exact=False).first).to_be_visible()
    page.get_by_role("button", name="Approve").first.click()
    expect(page.get_by_text("Done: I updated", exact=False).first).to_be_visible()
    approved = _decided(api, "approved", kind="note_edit")
    saved = _get(api, f"/v1/notes/{note['note_id']}")
    edited = (approved["proposal"]["note_id"], saved["version"])
    if edited != (note["note_id"], note["version"] + 1):
        raise AssertionError(f"the thread's note was not edited: {approved}, {saved}")


def _approves_tool_call(page: Page, ui: str, api: str) -> None:
    _open(page, ui, api, assistant="agent")
    _send(page, "Plan a trip to Rome")
    approve = page.get_by_role("button", name="Approve All")
    expect(approve).to_be_visible()
    approve.click()
    _decided(api, "approved", kind="tool_call")
    expect(page.get_by_text("Rome", exact=False).last).to_be_visible()


def _edits_and_rejects_tool_calls(page: Page, ui: str, api: str) -> None:
    """The agent's review allows ``get_weather`` approve or reject, ``send_email`` an edit too."""
    _open(page, ui, api, assistant="agent")
    _send(page, "Plan a trip to Rome")
    expect(page.get_by_role("button", name="Approve All")).to_be_visible()
    page.get_by_role("button", name="Action 1", exact=True).click()
    page.get_by_placeholder("Share feedback with the agent...").fill("No weather, please.")
    page.get_by_role("button", name="Submit rejection").click()
    page.get_by_role("button", name="Action 2", exact=True).click()
    subject = page.get_by_text("Subject", exact=True).locator("xpath=following-sibling::textarea")
    subject.fill("Our trip")
    page.get_by_role("button", name="Submit", exact=True).click()
    page.get_by_role("button", name="Submit all 2 decisions").click()
    expect(page.get_by_text("sent: Our trip", exact=False).first).to_be_visible()
    rejected = _decided(api, "rejected", kind="tool_call")
    edited = _decided(api, "edited", kind="tool_call")
    if rejected.get("decided", {}).get("comment") != "No weather, please.":
        raise AssertionError(f"the rejection's message is not recorded: {rejected}")
    if (edited.get("decided", {}).get("edited") or {}).get("subject") != "Our trip":
        raise AssertionError(f"the edited call's arguments are not recorded: {edited}")


def _edits_past_message(page: Page, ui: str, api: str) -> None:
    _open(page, ui, api)
    _send(page, "What is retrieval?")
    expect(page.get_by_text("I'm the offline model", exact=False).first).to_be_visible()
    _send(page, "What is generation?")
    expect(page.get_by_text("What is generation?").first).to_be_visible()
    expect(page.get_by_text("I'm the offline model", exact=False)).to_have_count(2)
    bubble = page.locator("div.group.ml-auto", has_text="What is retrieval?").first
    bubble.hover()
    bubble.get_by_role("button", name="Edit").click()
    page.locator("div.group.ml-auto textarea").fill("What is augmentation?")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.get_by_text("What is augmentation?").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"^\s*2 / 2\s*$")).first).to_be_visible()
    if page.get_by_text("What is generation?").count():
        raise AssertionError("the branch shown still has the message sent after the edited one")


def _lists_threads(page: Page, ui: str, api: str) -> None:
    _open(page, ui, api)
    page.wait_for_timeout(2000)
    listed = page.get_by_role("button", name=re.compile("What is retrieval"))
    if listed.count() < 3:
        raise AssertionError(f"{listed.count()} threads in the history panel, expected 3 or more")


# --- what the server recorded -----------------------------------------------------------------


def _decided(api: str, status: str, *, kind: str | None = None) -> dict[str, Any]:
    """The newest approval with ``status`` (and ``kind``), once it is recorded."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        approvals = _get(api, f"/v1/approvals?status={status}")["approvals"]
        found = [a for a in approvals if kind is None or a.get("kind") == kind]
        if found:
            return dict(found[0])
        if time.monotonic() > deadline:
            raise AssertionError(f"no {status} approval recorded")
        time.sleep(0.2)


def _send_json(api: str, path: str, body: dict[str, Any]) -> Any:
    """``PATCH`` ``body`` to ``path``, as an SDK client's ``threads.update``."""
    request = urllib.request.Request(
        f"{api}{path}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="PATCH",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def _get(api: str, path: str) -> Any:
    with urllib.request.urlopen(f"{api}{path}", timeout=10) as answer:
        return json.load(answer)


# --- processes --------------------------------------------------------------------------------


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True, env={**os.environ, **(env or {})})


@contextmanager
def _process(command: list[str], cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """A process of its own group (``npx`` starts ``next`` as its child), with the caller's
    environment but none of its ``CONSENTRY_`` settings (keys or a model would change what the
    check expects)."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CONSENTRY_")}
    process = subprocess.Popen(command, cwd=cwd, env={**inherited, **env}, start_new_session=True)
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _chromium() -> str:
    for candidate in (*CHROMIUM_PATHS, shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError("Chromium is not installed: `apt-get install chromium`")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


if __name__ == "__main__":
    sys.exit(main())
