"""First run is not empty: an owner's default project starts with the sample notes of
``data/samples/`` when it is created, once (``backend/consentry/runtime/sample_notes.py``), unless
``CONSENTRY_SAMPLE_NOTES=false``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from consentry.runtime.notes import read_sample_notes
from consentry.schemas.events import MessageEvent
from tests.sse import chat

SAMPLES = read_sample_notes()
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
