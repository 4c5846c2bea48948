"""``consentry chat`` and ``consentry approvals``: the real CLI, scripted stdin, a real server.

Each test runs ``python -m consentry.cli …`` as a subprocess against one server per module (the
tutor, ``parallel``: two consents at once, three plain LangGraph graphs with a raw
``interrupt()``: ``city`` asks a question, ``age`` gives a ``response_schema``, ``confirm`` asks
yes or no, and ``agent``, whose tool calls LangChain's human-in-the-loop middleware reviews),
each with its own note and thread. The tutor proposes a summary only of a thread that has
discussed something, so a summary is asked for after a question (``QUESTION``). A small
recording proxy in front of the server shows what the client sends (the ``Idempotency-Key`` of
each decision) and can cut a stream half-way (the client must rejoin it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from consentry.terminal.sse import SseFrame, SseParser
from tests.paths import ROOT
from tests.sse import ASK_FOR_SUMMARY, QUESTION
from tests.system import yes_no_graph
from tests.system.server import free_port, serve

GREEN, RED, CYAN, RESET = "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[0m"
CLI_TIMEOUT_SECONDS = 90.0
_FRAME_END = re.compile(rb"\r?\n\r?\n")
_CLIENT_ENV = ("CONSENTRY_URL", "CONSENTRY_API_KEY", "EDITOR", "VISUAL", "NO_COLOR")


# -- the server, the CLI, and the API the tests check with ----------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    graphs = {
        "CONSENTRY_GRAPHS": "parallel=consentry_graphs.examples.parallel_consents:graph_spec,"
        "city=consentry_graphs.examples.ask_city:graph,"
        "age=consentry_graphs.examples.validate_age:builder,"
        "confirm=tests.system.yes_no_graph:graph,"
        "agent=consentry_graphs.examples.tool_review_agent:graph"
    }
    with serve(tmp_path_factory.mktemp("terminal") / "c.db", env=graphs) as base_url:
        yield base_url


def run_cli(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``consentry ARGS`` with ``stdin``; the client's own variables only from ``env`` (an
    editor that fails at once unless a test gives one: never ``vi`` waiting on a pipe)."""
    base = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV} | {"EDITOR": "false"}
    return subprocess.run(
        [sys.executable, "-m", "consentry.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )


def lines(*typed: str) -> str:
    return "".join(f"{line}\n" for line in typed)


def create_note(api: httpx.Client, title: str, content: str) -> str:
    project = api.get("/v1/projects").json()["projects"][0]["project_id"]
    response = api.post(f"/v1/projects/{project}/notes", json={"title": title, "content": content})
    assert response.status_code == 201, response.text
    note_id: str = response.json()["note_id"]
    return note_id


def versions(api: httpx.Client, note_id: str) -> list[tuple[int, str, str | None]]:
    body = api.get(f"/v1/notes/{note_id}/versions").json()
    return [(v["version"], v["author"], v["approval_id"]) for v in body["versions"]]


def approval(api: httpx.Client, approval_id: str) -> dict[str, Any]:
    response = api.get(f"/v1/approvals/{approval_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def the_approval_id(output: str, approvals: list[dict[str, Any]]) -> str:
    """The one approval (of those the API lists) whose id the client printed."""
    shown = [a["approval_id"] for a in approvals if a["approval_id"] in output]
    assert len(shown) == 1, output
    return shown[0]


def ask_for_summary_consent(api: httpx.Client, note_id: str) -> tuple[str, str]:
    """Over plain HTTP: a thread asked ``QUESTION``, then for a summary, waiting for its
    ``note_edit`` consent; (thread id, approval id)."""
    with api.stream("POST", "/v1/chat", json={"message": QUESTION, "note_id": note_id}) as r:
        assert r.status_code == 200
        thread_id = r.headers["X-Thread-Id"]
        assert '"reason":"completed"' in "".join(r.iter_text())
    body = {"thread_id": thread_id, "message": ASK_FOR_SUMMARY, "note_id": note_id}
    with api.stream("POST", "/v1/chat", json=body) as response:
        assert response.status_code == 200
        text = "".join(response.iter_text())
    consent = next(line for line in text.splitlines() if '"type":"consent"' in line)
    approval_id = consent.split('"approval_id":"')[1].split('"')[0]
    return thread_id, approval_id


def decisions_recorded(api: httpx.Client, thread_id: str) -> list[dict[str, Any]]:
    """The ``consent_decided`` records of the thread's audit trail."""
    trail = api.get(f"/v1/threads/{thread_id}/audit").json()["records"]
    return [r for r in trail if r["action"] == "consent_decided"]


def wait_until_idle(api: httpx.Client, thread_id: str, *, timeout: float = 30.0) -> None:
    """The thread's background run is over (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    while (status := api.get(f"/v1/threads/{thread_id}").json()["status"]) != "idle":
        assert time.monotonic() < deadline, f"thread {thread_id} still {status}"
        time.sleep(0.05)


# -- a recording proxy, which can also cut the first chat stream --------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Proxy:
    url: str
    records: list[Recorded] = field(default_factory=list)
    cut_chat_after_frames: int | None = None
    """Close the first ``POST /v1/chat`` stream after this many SSE frames."""


def _proxy_handler(upstream: str, proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:  # quiet
            pass

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            proxy.records.append(Recorded(self.command, self.path, dict(self.headers), body))
            skip = {"host", "content-length", "connection"}
            headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
            cut = proxy.cut_chat_after_frames if self.path == "/v1/chat" else None
            proxy.cut_chat_after_frames = None if cut is not None else proxy.cut_chat_after_frames
            with httpx.stream(
                self.command, upstream + self.path, headers=headers, content=body, timeout=60
            ) as response:
                self.send_response(response.status_code)
                for name, value in response.headers.items():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                sent = b""
                for chunk in response.iter_raw():
                    sent += chunk
                    ends = [m.end() for m in _FRAME_END.finditer(sent)] if cut else []
                    if cut is not None and len(ends) >= cut:
                        # cut after the frame: the run goes on without this listener
                        self.wfile.write(chunk[: len(chunk) - (len(sent) - ends[cut - 1])])
                        return
                    self.wfile.write(chunk)
                    self.wfile.flush()

        def do_GET(self) -> None:
            self._forward()

        def do_POST(self) -> None:
            self._forward()

    return Handler


@pytest.fixture
def proxy(server: str) -> Iterator[Proxy]:
    port = free_port()
    recorder = Proxy(url=f"http://127.0.0.1:{port}")
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _proxy_handler(server, recorder))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- chat --------------------------------------------------------------------------------------


def test_a_question_streams_its_answer_and_prints_the_thread_id(
    server: str, api: httpx.Client
) -> None:
    result = run_cli("chat", "--url", server, stdin=lines("What is RAG?"))

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    thread_id = result.stdout.split("thread ", 1)[1].split(" ", 1)[0]
    assert f"consentry chat --thread {thread_id}" in result.stdout
    transcript = api.get(f"/v1/threads/{thread_id}/messages").json()["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant"]
    assert f"tutor> {transcript[1]['content']}\n" in result.stdout
    assert "  · Reading your message\n" in result.stdout
    assert "\x1b[" not in result.stdout, "no colour when stdout is not a terminal"


def test_approving_a_note_edit_shows_the_diff_in_colour_and_writes_version_2(
    server: str, api: httpx.Client
) -> None:
    note_id = create_note(api, "RAG", "RAG looks documents up first.\n")

    result = run_cli(
        "chat",
        *("--url", server, "--note", note_id, "--color", "always"),
        stdin=lines("What is RAG?", ASK_FOR_SUMMARY, "a"),
    )

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Add a summary to your note “RAG”?" in out
    assert "\x1b[1m--- RAG (version 1)\x1b[0m" in out  # a hunk of the change, no hunk header
    assert " RAG looks documents up first.\n" in out
    assert f"{GREEN}+## Summary of our discussion{RESET}" in out
    assert "[a]pprove / [e]dit / [r]eject? " in out
    assert "expires in 23h 59m" in out
    assert "note “RAG” is now version 2" in out
    approval_id = the_approval_id(out, api.get("/v1/approvals").json()["approvals"])
    assert versions(api, note_id) == [(1, "user", None), (2, "assistant", approval_id)]
    content = api.get(f"/v1/notes/{note_id}").json()["content"]
    assert approval(api, approval_id)["proposal"]["proposed_content"] == content


def test_edit_opens_the_editor_on_the_proposal_and_saves_exactly_its_text(
    server: str, api: httpx.Client, tmp_path: Path
) -> None:
    note_id = create_note(api, "Kana", "Kana: the Japanese syllabaries.\n")
    seen = tmp_path / "seen.md"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import shutil, sys\n"
        f"shutil.copy(sys.argv[1], {str(seen)!r})\n"
        "open(sys.argv[1], 'w').write('Kana: hiragana and katakana.\\n')\n"
    )

    result = run_cli(
        "chat",
        *("--url", server, "--note", note_id),
        stdin=lines(QUESTION, ASK_FOR_SUMMARY, "e"),
        env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": "false"},
    )

    assert result.returncode == 0, result.stderr
    assert api.get(f"/v1/notes/{note_id}").json()["content"] == "Kana: hiragana and katakana.\n"
    approval_id = the_approval_id(result.stdout, api.get("/v1/approvals").json()["approvals"])
    record = approval(api, approval_id)
    assert seen.read_text() == record["proposal"]["proposed_content"], "pre-filled proposal"
    assert record["status"] == "edited"
    assert record["decided"]["edited"] == {"content": "Kana: hiragana and katakana.\n"}
    assert versions(api, note_id) == [(1, "user", None), (2, "assistant", approval_id)]


def test_an_edit_quit_without_saving_sends_nothing_and_the_consent_stays_pending(
    server: str, api: httpx.Client, tmp_path: Path
) -> None:
    """Issue 33, "a decision the person did not make": vi's ``:q!`` leaves the file as it was
    and exits 0; that is no edit."""
    note_id = create_note(api, "Kanji", "Kanji: characters borrowed from Chinese.\n")
    seen = tmp_path / "seen.md"
    editor = tmp_path / "quit_without_saving.py"
    editor.write_text(f"import shutil, sys\nshutil.copy(sys.argv[1], {str(seen)!r})\n")

    result = run_cli(
        "chat",
        *("--url", server, "--note", note_id),
        stdin=lines(QUESTION, ASK_FOR_SUMMARY, "e"),  # then the input ends at the question
        env={"EDITOR": f"{sys.executable} {editor}"},
    )

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    approval_id = the_approval_id(out, api.get("/v1/approvals").json()["approvals"])
    record = approval(api, approval_id)
    assert seen.read_text() == record["proposal"]["proposed_content"], "the editor was opened"
    assert "\nNothing sent: the edit was left unchanged\n" in out
    assert out.count("[a]pprove / [e]dit / [r]eject? ") == 2, "the decision is asked again"
    assert f"consent {approval_id} is still pending" in out
    assert "Done:" not in out
    assert (record["status"], record["decided"]) == ("pending", None)
    thread_id = record["thread_id"]
    assert decisions_recorded(api, thread_id) == []
    assert versions(api, note_id) == [(1, "user", None)]
    assert api.get(f"/v1/notes/{note_id}").json()["version"] == 1
    [pending] = api.get(f"/v1/threads/{thread_id}").json()["pending_consents"]
    assert pending["approval_id"] == approval_id


def test_reject_with_a_comment_leaves_the_note_at_version_1(server: str, api: httpx.Client) -> None:
    note_id = create_note(api, "Tides", "Tides follow the moon.\n")

    result = run_cli(
        "chat",
        *("--url", server, "--note", note_id),
        stdin=lines(QUESTION, ASK_FOR_SUMMARY, "x", "r", "too long"),
    )

    assert result.returncode == 0, result.stderr
    assert "please answer a (approve) or e (edit) or r (reject)" in result.stdout
    approval_id = the_approval_id(result.stdout, api.get("/v1/approvals").json()["approvals"])
    record = approval(api, approval_id)
    assert (record["status"], record["decided"]["comment"]) == ("rejected", "too long")
    assert versions(api, note_id) == [(1, "user", None)]


def test_a_delete_consent_offers_only_its_allowed_decisions(server: str, api: httpx.Client) -> None:
    note_id = create_note(api, "Scratch", "one\ntwo\n")

    result = run_cli(
        "chat",
        *("--url", server, "--note", note_id, "--color", "always"),
        stdin=lines("delete this note", "e", "r", ""),
    )

    assert result.returncode == 0, result.stderr
    assert "[a]pprove / [r]eject? " in result.stdout
    assert "[e]dit" not in result.stdout
    assert "please answer a (approve) or r (reject)" in result.stdout
    assert f"{RED}-one{RESET}\n{RED}-two{RESET}" in result.stdout
    assert api.get(f"/v1/notes/{note_id}").status_code == 200
    approval_id = the_approval_id(result.stdout, api.get("/v1/approvals").json()["approvals"])
    assert approval(api, approval_id)["status"] == "rejected"


def test_each_consent_of_a_parallel_run_is_asked_with_its_own_idempotency_key(
    proxy: Proxy, api: httpx.Client
) -> None:
    result = run_cli("chat", "--url", proxy.url, "--graph", "parallel", stdin=lines("Hi", "a", "a"))

    assert result.returncode == 0, result.stderr
    assert '"team": "editors",' in result.stdout, "a proposal of another kind, as JSON"
    assert "parallel> Published post-" in result.stdout
    assert "parallel> Told the editors." in result.stdout
    thread_id = result.stdout.split("thread ", 1)[1].split(" ", 1)[0]
    approvals = [
        a for a in api.get("/v1/approvals").json()["approvals"] if a["thread_id"] == thread_id
    ]
    assert sorted(a["status"] for a in approvals) == ["approved", "approved"]
    decisions = [r for r in proxy.records if r.method == "POST" and b'"resume"' in r.body]
    keys = [r.headers.get("Idempotency-Key") for r in decisions]
    assert len(keys) == 2
    assert len({uuid.UUID(str(key)) for key in keys}) == 2, keys


def test_a_stream_cut_half_way_is_rejoined_from_the_last_stored_event_id(
    proxy: Proxy, api: httpx.Client
) -> None:
    proxy.cut_chat_after_frames = 5  # run_started, two steps, two tokens

    result = run_cli("chat", "--url", proxy.url, stdin=lines("What is RAG?"))

    assert result.returncode == 0, result.stderr
    thread_id = result.stdout.split("thread ", 1)[1].split(" ", 1)[0]
    rejoins = [r for r in proxy.records if r.path == f"/v1/threads/{thread_id}/stream"]
    # the last stored event (the second step): tokens are not stored, so never named
    assert [r.headers.get("Last-Event-ID") for r in rejoins] == ["3"]
    answer = api.get(f"/v1/threads/{thread_id}/messages").json()["messages"][1]["content"]
    assert result.stdout.count("tutor> ") == 1
    assert f"tutor> {answer}\n" in result.stdout, "the streamed start, then the rest"


def test_a_thread_given_with_thread_asks_its_pending_consent_first(
    server: str, api: httpx.Client
) -> None:
    note_id = create_note(api, "Owls", "Owls hunt at night.\n")
    thread_id, approval_id = ask_for_summary_consent(api, note_id)

    result = run_cli("chat", "--url", server, "--thread", thread_id, stdin=lines("a"))

    assert result.returncode == 0, result.stderr
    assert f"thread {thread_id} " in result.stdout
    assert approval_id in result.stdout
    assert versions(api, note_id) == [(1, "user", None), (2, "assistant", approval_id)]


def test_a_consent_decided_elsewhere_first_shows_who_won(server: str, api: httpx.Client) -> None:
    note_id = create_note(api, "Bees", "Bees dance.\n")
    thread_id, approval_id = ask_for_summary_consent(api, note_id)
    process = subprocess.Popen(
        [sys.executable, "-m", "consentry.cli", "chat", "--url", server, "--thread", thread_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    shown = bytearray()
    deadline = time.monotonic() + CLI_TIMEOUT_SECONDS
    while b"[a]pprove" not in shown:  # the consent is on screen, waiting for the person
        assert time.monotonic() < deadline, shown
        byte = process.stdout.read(1)
        assert byte, shown
        shown += byte
    other_tab = api.post(
        f"/v1/approvals/{approval_id}/decision", json={"decision": "reject", "comment": "mine"}
    )
    assert other_tab.status_code == 202, other_tab.text

    out, err = process.communicate(lines("a", "/quit").encode(), timeout=CLI_TIMEOUT_SECONDS)

    assert process.returncode == 0, err
    assert "error: already_decided: This consent was already rejected." in err.decode()
    assert "(decided: reject by local/local at " in err.decode()
    assert "comment: mine" in err.decode()
    assert "Traceback" not in err.decode()
    assert "you> /quit" in out.decode(), "the session goes on"
    wait_until_idle(api, thread_id)
    assert versions(api, note_id) == [(1, "user", None)]


def test_a_raw_interrupt_is_answered_with_a_typed_line_asked_again_while_it_misfits(
    server: str, api: httpx.Client
) -> None:
    result = run_cli("chat", "--url", server, "--graph", "age", stdin=lines("Hi", "200", "30"))

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert 'consent What is your age?\n{\n  "question": "What is your age?"\n}\n' in out
    assert 'answer with JSON that fits {"type": "integer", "minimum": 0, "maximum": 150}' in out
    assert "interrupt · no deadline · approval " in out
    assert out.count("answer> ") == 2, "asked again after the misfit answer"
    assert result.stderr == (
        "error: invalid_answer: The answer does not fit the schema the graph asked for; the "
        "consent is still pending.\n  200 is greater than the maximum of 150\n"
    )
    assert "age> You are 30 years old.\n" in out
    approval_id = the_approval_id(out, api.get("/v1/approvals").json()["approvals"])
    record = approval(api, approval_id)
    assert (record["status"], record["decided"]["value"]) == ("answered", 30)


def test_a_yes_no_question_is_asked_in_words_and_answered_yes(
    server: str, api: httpx.Client
) -> None:
    """Issue 33, "the terminal refuses `yes` for a boolean"."""
    result = run_cli(
        "chat", "--url", server, "--graph", "confirm", stdin=lines("Hi", "maybe", "Yes")
    )

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    asked = f"{yes_no_graph.QUESTION} (yes/no) "
    assert f"consent {yes_no_graph.QUESTION}\n" in out
    assert '  report: "weekly.pdf"\ninterrupt · no deadline · approval ' in out
    assert "answer with JSON" not in out
    assert f"{asked}maybe\nplease answer yes or no (y or n)\n{asked}Yes\n" in out
    assert f"confirm> {yes_no_graph.SENT}\n" in out
    approval_id = the_approval_id(out, api.get("/v1/approvals").json()["approvals"])
    record = approval(api, approval_id)
    assert (record["status"], record["decided"]["value"]) == ("answered", True)
    [decided] = decisions_recorded(api, record["thread_id"])
    assert decided["data"]["decision"] == "answer"


def test_a_yes_no_question_answered_n_keeps_the_report(server: str, api: httpx.Client) -> None:
    result = run_cli("chat", "--url", server, "--graph", "confirm", stdin=lines("Hi", "n"))

    assert result.returncode == 0, result.stderr
    assert f"confirm> {yes_no_graph.KEPT}\n" in result.stdout
    approval_id = the_approval_id(result.stdout, api.get("/v1/approvals").json()["approvals"])
    assert approval(api, approval_id)["decided"]["value"] is False


def test_the_tool_calls_of_one_review_are_asked_in_turn_and_sent_together(
    proxy: Proxy, api: httpx.Client
) -> None:
    typed = lines("Plan a trip to Rome", "a", "s", "Not sent: I will write myself.")

    result = run_cli("chat", "--url", proxy.url, "--graph", "agent", stdin=typed)

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "2 tool calls to review together" in out
    assert '(1 of 2)\nconsent Run the tool get_weather?\ntool get_weather\n  city: "Rome"\n' in out
    assert "[a]pprove / [e]dit / [r]eject / re[s]pond? " in out
    (decided,) = [r for r in proxy.records if r.method == "POST" and b'"resume"' in r.body]
    resume = json.loads(decided.body)["resume"]
    assert [d["decision"] for d in resume] == ["approve", "respond"]
    thread_id = out.split("thread ", 1)[1].split(" ", 1)[0]
    statuses = sorted(
        a["status"]
        for a in api.get("/v1/approvals").json()["approvals"]
        if a["thread_id"] == thread_id
    )
    assert statuses == ["answered", "approved"]
    assert "agent> Done. Not sent: I will write myself." in out


# -- approvals ---------------------------------------------------------------------------------


def test_approvals_list_approve_and_approve_again(
    server: str, proxy: Proxy, api: httpx.Client
) -> None:
    note_id = create_note(api, "Ferns", "Ferns have spores.\n")
    thread_id, approval_id = ask_for_summary_consent(api, note_id)

    listed = run_cli("approvals", "list", "--status", "pending", "--url", server)
    approved = run_cli("approvals", "approve", approval_id, "--comment", "ok", "--url", proxy.url)
    wait_until_idle(api, thread_id)
    again = run_cli("approvals", "approve", approval_id, "--url", server)

    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "KIND", "TITLE", "EXPIRES", "/", "DECIDED"]
    row = next(row for row in rows if row.startswith(approval_id))
    assert row.split()[1:3] == ["pending", "note_edit"]
    assert "Add a summary to your note “Ferns”?" in row
    assert "expires in 23h" in row
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"approved: approval {approval_id}; thread {thread_id}")
    (decision,) = [r for r in proxy.records if r.path.endswith("/decision")]
    uuid.UUID(decision.headers["Idempotency-Key"])
    assert versions(api, note_id) == [(1, "user", None), (2, "assistant", approval_id)]
    assert approval(api, approval_id)["decided"]["comment"] == "ok"
    assert again.returncode == 1
    assert again.stderr.startswith("error: already_decided: This consent was already approved.")
    assert "decided: approve by local/local at " in again.stderr
    assert "Traceback" not in again.stderr


def test_approvals_show_prints_the_diff_and_reject_records_the_comment(
    server: str, api: httpx.Client
) -> None:
    note_id = create_note(api, "Moss", "Moss likes shade.\n")
    thread_id, approval_id = ask_for_summary_consent(api, note_id)

    shown = run_cli("approvals", "show", approval_id, "--url", server, "--color", "always")
    rejected = run_cli("approvals", "reject", approval_id, "--comment", "no", "--url", server)
    wait_until_idle(api, thread_id)
    listed = run_cli("approvals", "list", "--status", "rejected", "--url", server)

    assert shown.returncode == 0, shown.stderr
    assert f"{GREEN}+## Summary of our discussion{RESET}" in shown.stdout
    assert rejected.returncode == 0, rejected.stderr
    assert rejected.stdout.startswith(f"rejected: approval {approval_id}")
    record = approval(api, approval_id)
    assert (record["status"], record["decided"]["comment"]) == ("rejected", "no")
    row = next(row for row in listed.stdout.splitlines() if row.startswith(approval_id))
    assert "reject by local/local at " in row
    assert row.endswith("comment: no")
    assert versions(api, note_id) == [(1, "user", None)]


def test_approvals_show_and_answer_a_raw_interrupt_with_text(
    server: str, api: httpx.Client
) -> None:
    response = api.post("/v1/chat", json={"graph": "city", "message": "Hi"})
    thread_id = response.headers["X-Thread-Id"]
    [consent] = api.get(f"/v1/threads/{thread_id}").json()["pending_consents"]
    approval_id = consent["approval_id"]

    shown = run_cli("approvals", "show", approval_id, "--url", server)
    answered = run_cli("approvals", "answer", approval_id, "--value", "Lisbon", "--url", server)
    wait_until_idle(api, thread_id)
    listed = run_cli("approvals", "list", "--status", "answered", "--url", server)

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith('Which city?  pending\n{\n  "question": "Which city?"\n}\n')
    assert f"answer it: consentry approvals answer {approval_id} --value VALUE" in shown.stdout
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.startswith(f"answered: approval {approval_id}; thread {thread_id}")
    said = api.get(f"/v1/threads/{thread_id}/messages").json()["messages"]
    assert said[-1]["content"] == "Booked a trip to Lisbon."
    row = next(row for row in listed.stdout.splitlines() if row.startswith(approval_id))
    assert row.split()[1:3] == ["answered", "interrupt"]
    assert row.endswith('answer: "Lisbon"')


# -- reading the stream -----------------------------------------------------------------------


def test_sse_frames_join_data_lines_and_skip_comments_on_any_line_ending() -> None:
    parser = SseParser()
    stream = ': ping\r\nid: 7\r\nevent: note\r\ndata: {"a":\r\ndata:1}\r\n\r\n'
    stream += "retry: 2000\n\nid: 8\rdata:  two spaces\r\r"

    frames = list(parser.frames(stream.replace("\r\n", "\n").replace("\r", "\n").split("\n")))

    assert frames == [
        SseFrame(event="note", data='{"a":\n1}', id="7"),
        SseFrame(event="message", data=" two spaces", id="8"),
    ]
    assert (parser.last_event_id, parser.retry_ms) == ("8", 2000)


# -- reaching the server -----------------------------------------------------------------------


def test_an_unreachable_server_is_one_line_on_stderr_and_exit_2() -> None:
    closed = f"http://127.0.0.1:{free_port()}"

    chat = run_cli("chat", stdin=lines("hello"), env={"CONSENTRY_URL": closed})
    listing = run_cli("approvals", "list", "--url", closed)

    for result in (chat, listing):
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
    assert chat.stderr.startswith(
        f"error: unreachable: cannot reach the Consentry server at {closed}"
    )
    assert listing.stderr == chat.stderr


def test_a_server_with_api_keys_refuses_a_missing_key_and_accepts_a_given_one(
    tmp_path: Path,
) -> None:
    with serve(tmp_path / "keys.db", env={"CONSENTRY_API_KEYS": "k1=t:u"}) as url:
        refused = run_cli("chat", "--url", url, stdin=lines("hello"))
        chat = run_cli("chat", "--url", url, "--api-key", "k1", stdin=lines("What is RAG?"))
        listing = run_cli("approvals", "list", "--url", url, env={"CONSENTRY_API_KEY": "k1"})

    assert refused.returncode == 1
    assert refused.stderr.startswith("error: unauthorized: "), refused.stderr
    assert len(refused.stderr.splitlines()) == 1, "one line, no traceback"
    assert chat.returncode == 0, chat.stderr
    assert "tutor> I'm the offline model" in chat.stdout
    assert (listing.returncode, listing.stdout) == (0, "no approvals\n")
