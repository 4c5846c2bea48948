"""``consentry notes`` and what ``consentry chat`` says when it starts: the real CLI against a
real server (one per module), over the public API only.

``consentry notes`` lists projects and their notes with ids; ``consentry notes ID`` shows one
note and the conversations about it (``GET /v1/threads?note_id=``); ``consentry chat --note ID``
names the note it is about and how to leave."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.system.server import serve
from tests.system.test_terminal_client import create_note, lines, run_cli


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("terminal-notes") / "c.db") as base_url:
        yield base_url


@pytest.fixture
def api(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30.0) as client:
        yield client


def _conversation(api: httpx.Client, note_id: str) -> str:
    """A finished conversation about the note, started over plain HTTP: its thread id."""
    with api.stream("POST", "/v1/chat", json={"message": "What is RAG?", "note_id": note_id}) as r:
        assert r.status_code == 200
        thread_id: str = r.headers["X-Thread-Id"]
        assert "event: final" in "".join(r.iter_text())
    return thread_id


def test_notes_lists_each_project_and_its_notes_with_their_ids(
    server: str, api: httpx.Client
) -> None:
    title = f"RAG {uuid.uuid4().hex[:6]}"
    note_id = create_note(api, title, "RAG looks documents up first.")
    other = api.post("/v1/projects", json={"name": "Cooking"}).json()["project_id"]

    result = run_cli("notes", "--url", server, "--color", "never")

    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    default = next(i for i, line in enumerate(out) if line.startswith("My notes (default) · "))
    note_line = next(line for line in out if note_id in line)
    assert out.index(note_line) > default
    assert note_line.split()[:2] == [note_id, "RAG"]
    assert "version 1" in note_line
    assert f"Cooking · project {other}" in out
    assert out[out.index(f"Cooking · project {other}") + 1] == "  no notes yet"
    assert out[-1].startswith("show a note and its conversations: consentry notes NOTE_ID")

    only = run_cli("notes", "--project", other, "--url", server, "--color", "never")
    assert only.stdout.splitlines()[:2] == [f"Cooking · project {other}", "  no notes yet"]


def test_notes_id_shows_the_note_and_only_its_own_conversations(
    server: str, api: httpx.Client
) -> None:
    note_id = create_note(api, "Kana", "Hiragana and katakana.")
    other_id = create_note(api, "Other", "Something else.")
    first = _conversation(api, note_id)
    second = _conversation(api, note_id)
    elsewhere = _conversation(api, other_id)

    result = run_cli("notes", note_id, "--url", server, "--color", "never")

    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].startswith("Kana · version 1 · updated ")
    assert out[0].endswith(" · project My notes")
    assert out[1] == "Hiragana and katakana."
    conversations = out[out.index("conversations about this note") + 1 : -1]
    assert [line.split()[0] for line in conversations] == [second, first]
    assert all("What is RAG?" in line and "idle" in line for line in conversations)
    assert elsewhere not in result.stdout
    assert out[-1] == f"go on with one: consentry chat --thread THREAD_ID --note {note_id}"


def test_a_note_without_conversations_says_how_to_start_one(server: str, api: httpx.Client) -> None:
    note_id = create_note(api, "Fresh", "Nothing yet.")

    result = run_cli("notes", note_id, "--url", server, "--color", "never")

    assert result.stdout.splitlines()[-1] == (
        f"no conversation about this note yet: consentry chat --note {note_id}"
    )


def test_an_unknown_note_is_the_servers_refusal_and_exit_1(server: str) -> None:
    result = run_cli("notes", "no-such-note", "--url", server)

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "error: note_not_found: No note with id 'no-such-note'."


def test_chat_for_a_note_names_the_note_and_how_to_leave(server: str, api: httpx.Client) -> None:
    note_id = create_note(api, "RAG for chat", "RAG looks documents up first.")

    result = run_cli("chat", "--note", note_id, "--url", server, stdin=lines("/quit"))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "chat about the note “RAG for chat” (version 1)",
        "type a message and Enter; /quit or Ctrl-D to leave",
        "you> /quit",
    ]


def test_chat_without_a_note_says_how_to_leave_and_an_unknown_note_stops_it(server: str) -> None:
    plain = run_cli("chat", "--url", server, stdin="")
    unknown = run_cli("chat", "--note", "no-such-note", "--url", server, stdin=lines("Hi"))

    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == "type a message and Enter; /quit or Ctrl-D to leave"
    assert unknown.returncode == 1
    assert "error: note_not_found" in unknown.stderr
    assert "you>" not in unknown.stdout
