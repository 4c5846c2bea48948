"""Statelessness: a consent asked in one server process is decided in a brand-new process.

The first process is SIGKILLed after the consent event: nothing it held in memory survives, so
the second process can only resume from what is in the database (checkpoint + app tables).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from consentry.schemas.events import ConsentEvent, NoteEvent
from tests.sse import kinds, parse_events
from tests.system.server import serve


def _chat(base_url: str, body: dict[str, object]) -> list:  # type: ignore[type-arg]
    response = httpx.post(f"{base_url}/v1/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return parse_events(response.text)


def test_a_consent_asked_in_one_process_is_decided_in_another(tmp_path: Path) -> None:
    database = tmp_path / "consentry.db"
    with serve(database) as first:
        project = httpx.get(f"{first}/v1/projects").json()["projects"][0]
        note = httpx.post(
            f"{first}/v1/projects/{project['project_id']}/notes",
            json={"title": "Kana", "content": "Hiragana has 46 basic characters."},
        ).json()
        answered = _chat(
            first, {"message": "How many hiragana are there?", "note_id": note["note_id"]}
        )
        asked = _chat(
            first,
            {
                "thread_id": answered[0].thread_id,
                "message": "Put a summary in my note",
                "note_id": note["note_id"],
            },
        )
        consent = next(e for e in asked if isinstance(e, ConsentEvent))
    # The first process is gone (SIGKILL). A new one opens the same database.
    with serve(database) as second:
        thread = httpx.get(f"{second}/v1/threads/{consent.thread_id}").json()
        assert thread["status"] == "awaiting_consent"
        assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]

        resumed = _chat(
            second,
            {
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, "decision": "approve"},
            },
        )

        assert kinds(resumed) == ["run_started", "step", "step", "note", "message", "final"]
        assert resumed[0].seq == consent.seq + 2
        written = next(e for e in resumed if isinstance(e, NoteEvent))
        assert (written.note_id, written.version) == (note["note_id"], 2)
        assert written.content == consent.proposal["proposed_content"]
        assert "How many hiragana are there?" in written.content
        transcript = httpx.get(f"{second}/v1/threads/{consent.thread_id}/messages").json()
        assert len(transcript["messages"]) == 5  # (what it drafted, said before it asked)
