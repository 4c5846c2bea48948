"""First run is not empty: an owner's default project starts with the sample notes of
``data/samples/`` when it is created, once (``backend/consentry/runtime/sample_notes.py``), unless
``CONSENTRY_SAMPLE_NOTES=false``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from consentry.runtime.notes import read_sample_notes
from consentry.schemas.events import ConsentEvent, Event, MessageEvent
from tests.sse import chat

SAMPLES = read_sample_notes()
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
KEYS = "ka=acme:alice,kb=acme:bob"
ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}


async def _notes(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> list[Any]:
    projects = (await client.get("/v1/projects", headers=headers)).json()["projects"]
    assert [p["is_default"] for p in projects] == [True]
    listed = await client.get(f"/v1/projects/{projects[0]['project_id']}/notes", headers=headers)
    assert listed.status_code == 200, listed.text
    notes: list[Any] = listed.json()["notes"]
    return notes


async def test_a_new_default_project_starts_with_the_sample_notes(open_client: Any) -> None:
    async with open_client(sample_notes=True) as client:
        notes = await _notes(client)

    assert [(n["title"], n["content"]) for n in notes] == [(s.title, s.content) for s in SAMPLES]
    assert [n["title"] for n in notes] == [
        "Taking notes with the tutor",
        "Retrieval-augmented generation",
        "Spaced repetition",
        "Japanese kana",
    ]
    assert {n["version"] for n in notes} == {1}


async def test_with_sample_notes_off_the_default_project_starts_empty(open_client: Any) -> None:
    async with open_client(sample_notes=False) as client:
        assert await _notes(client) == []


async def test_a_second_start_adds_no_sample_notes_again(open_client: Any) -> None:
    async with open_client(sample_notes=True) as client:
        first = await _notes(client)
    async with open_client(sample_notes=True) as client:
        second = await _notes(client)

    assert [n["note_id"] for n in second] == [n["note_id"] for n in first]


async def test_deleted_sample_notes_do_not_come_back(open_client: Any) -> None:
    async with open_client(sample_notes=True) as client:
        for note in await _notes(client):
            assert (await client.delete(f"/v1/notes/{note['note_id']}")).status_code == 204
    async with open_client(sample_notes=True) as client:
        await chat(client, {"message": "What is spaced repetition?"})
        assert await _notes(client) == []


async def test_a_first_message_gets_an_answer_from_the_sample_notes(open_client: Any) -> None:
    async with open_client(sample_notes=True, api_keys=KEYS) as client:
        events = await chat(client, {"message": "What is spaced repetition?"}, headers=ALICE)
        alices = await _notes(client, ALICE)
        bobs = await _notes(client, BOB)

    answer = next(e.content for e in events if isinstance(e, MessageEvent))
    assert "- In \u201cSpaced repetition\u201d: Spaced repetition is a way to remember" in answer
    assert [n["title"] for n in alices] == [n["title"] for n in bobs] == [s.title for s in SAMPLES]
    assert {n["note_id"] for n in alices}.isdisjoint(n["note_id"] for n in bobs)


async def test_racing_first_requests_write_the_sample_notes_once(open_live: Any) -> None:
    async with open_live(sample_notes=True) as (client, _):
        listed = await asyncio.gather(*(client.get("/v1/projects") for _ in range(8)))
        chats = await asyncio.gather(
            *(client.post("/v1/chat", json={"message": "What is RAG?"}) for _ in range(3))
        )
        notes = await _notes(client)

    assert [r.status_code for r in [*listed, *chats]] == [200] * 11
    assert sorted(n["title"] for n in notes) == sorted(s.title for s in SAMPLES)


async def test_the_tutor_answers_from_the_sample_note_that_fits_the_question(
    open_client: Any,
) -> None:
    """With the RAG sample open, a question about spacing or katakana is answered from the note
    about it, never from the open one; its summary cites the same notes; a new conversation
    with nothing discussed proposes no summary."""
    async with open_client(sample_notes=True) as client:
        rag = next(n for n in await _notes(client) if n["title"] == SAMPLES[1].title)
        about = {"note_id": rag["note_id"]}
        spacing = await chat(client, {"message": "Why does spacing help memory?", **about})
        thread = {"thread_id": spacing[0].thread_id, **about}
        katakana = await chat(
            client, {"message": "How do I read katakana words like coffee?", **thread}
        )
        summary = await chat(client, {"message": ASK_FOR_SUMMARY, **thread})
        empty = await chat(client, {"message": ASK_FOR_SUMMARY, **about})

    assert _said(spacing).splitlines()[1:] == [
        "- In \u201cSpaced repetition\u201d: Spaced repetition is a way to remember things for "
        "a long time with little study. Every review makes the memory more stable, so the curve "
        "gets flatter. Recall the answer before you look at it: retrieving a memory strengthens "
        "it more than rereading."
    ]
    assert _said(katakana).splitlines()[1:] == [
        "- In \u201cJapanese kana\u201d: Katakana writes words borrowed from other languages, "
        "foreign names and sound effects. For example, \u30b3\u30fc\u30d2\u30fc is k\u014dh\u012b "
        "(coffee) and \u30c6\u30ec\u30d3 is terebi (television). Most learners can read both "
        "kana within a few weeks, and spaced repetition makes them stick."
    ]
    proposal = next(e for e in summary if isinstance(e, ConsentEvent)).proposal
    answers = [line for line in proposal["proposed_content"].splitlines() if "**Answer:**" in line]
    assert [line.split("\u201d")[0] for line in answers] == [
        "  **Answer:** In \u201cSpaced repetition",
        "  **Answer:** In \u201cJapanese kana",
    ]
    assert not any(isinstance(e, ConsentEvent) for e in empty)
    assert _said(empty) == (
        "We have not discussed anything yet in this conversation, so there is no summary to "
        "save. Ask me a question first."
    )


def _said(events: list[Event]) -> str:
    return next(e.content for e in events if isinstance(e, MessageEvent))
