"""Principals in tests: the owner, another user of the owner's tenant and the owner's user name in
another tenant; the owner's objects, built through the API; and the owner's state as the API and
the database show it, to prove that what somebody else sends changes none of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa

from consentry.schemas.events import ConsentEvent
from consentry.storage.tables import metadata
from tests.sse import TUTOR_ASKED, after_a_question, kinds, parse_events

__all__ = [
    "API_KEYS",
    "ASK_FOR_SUMMARY",
    "OTHER_TENANT",
    "OWNER",
    "SAME_TENANT",
    "STRANGERS",
    "OwnedObjects",
    "ask_for_summary",
    "build_owned_objects",
    "checkpoint_ids",
    "row_counts",
    "visible_state",
]

API_KEYS = "ka=acme:alice,kb=acme:bob,kc=globex:alice"
OWNER = {"Authorization": "Bearer ka"}  # acme:alice
SAME_TENANT = {"Authorization": "Bearer kb"}  # acme:bob: the owner's tenant, another user
OTHER_TENANT = {"Authorization": "Bearer kc"}  # globex:alice: the owner's user name elsewhere
STRANGERS = {"acme:bob": SAME_TENANT, "globex:alice": OTHER_TENANT}
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"


@dataclass(frozen=True)
class OwnedObjects:
    """A project with a note, and two threads each waiting for a consent to edit that note: one
    to decide through ``POST /v1/chat``, one through the approvals inbox."""

    project_id: str
    note_id: str
    thread_id: str
    approval_id: str
    first_seq: int
    """The ``id:`` of the thread's first event: a valid ``Last-Event-ID``."""
    inbox_thread_id: str
    inbox_approval_id: str
    assistant_id: str
    """An assistant of the owner's own over the tutor."""
    cron_id: str
    """A cron of the owner's on ``thread_id`` (whose first tick is a year away)."""

    def ids(self) -> dict[str, str]:
        """The owner's ids by name (the placeholders of request templates)."""
        return {
            "project_id": self.project_id,
            "note_id": self.note_id,
            "thread_id": self.thread_id,
            "approval_id": self.approval_id,
            "inbox_thread_id": self.inbox_thread_id,
            "inbox_approval_id": self.inbox_approval_id,
            "assistant_id": self.assistant_id,
            "cron_id": self.cron_id,
        }


async def ask_for_summary(
    client: httpx.AsyncClient, headers: dict[str, str], *, project_id: str, note_id: str
) -> ConsentEvent:
    """A new thread that discussed a question, then stopped to ask for consent to edit the
    note."""
    events = await after_a_question(
        client,
        {"message": ASK_FOR_SUMMARY, "project_id": project_id, "note_id": note_id},
        headers,
    )
    assert kinds(events) == TUTOR_ASKED
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def build_owned_objects(client: httpx.AsyncClient, headers: dict[str, str]) -> OwnedObjects:
    project = await client.post("/v1/projects", json={"name": "Alice's project"}, headers=headers)
    assert project.status_code == 201, project.text
    project_id = str(project.json()["project_id"])
    note = await client.post(
        f"/v1/projects/{project_id}/notes",
        json={"title": "RAG", "content": "Retrieval-augmented generation uses documents."},
        headers=headers,
    )
    assert note.status_code == 201, note.text
    note_id = str(note.json()["note_id"])
    first = await ask_for_summary(client, headers, project_id=project_id, note_id=note_id)
    inbox = await ask_for_summary(client, headers, project_id=project_id, note_id=note_id)
    assistant = await client.post(
        "/assistants", json={"graph_id": "tutor", "name": "Alice's tutor"}, headers=headers
    )
    assert assistant.status_code == 200, assistant.text
    cron = await client.post(
        f"/threads/{first.thread_id}/runs/crons",
        json={"assistant_id": "tutor", "schedule": "0 0 1 1 *", "input": {}},
        headers=headers,
    )
    assert cron.status_code == 200, cron.text
    stored = await client.get(f"/v1/threads/{first.thread_id}/stream", headers=headers)
    first_seq = parse_events(stored.text)[0].seq
    return OwnedObjects(
        project_id=project_id,
        note_id=note_id,
        thread_id=first.thread_id,
        approval_id=first.approval_id,
        first_seq=first_seq,
        inbox_thread_id=inbox.thread_id,
        inbox_approval_id=inbox.approval_id,
        assistant_id=str(assistant.json()["assistant_id"]),
        cron_id=str(cron.json()["cron_id"]),
    )


async def visible_state(
    client: httpx.AsyncClient, headers: dict[str, str], owned: OwnedObjects
) -> dict[str, Any]:
    """Everything the owner can read about its objects, by URL."""
    urls = [
        "/v1/projects",
        f"/v1/projects/{owned.project_id}/notes",
        f"/v1/projects/{owned.project_id}/search?q=retrieval",
        f"/v1/notes/{owned.note_id}",
        f"/v1/notes/{owned.note_id}/versions",
        "/v1/threads",
        "/v1/approvals",
        "/v1/approvals?status=pending",
    ]
    for thread_id in (owned.thread_id, owned.inbox_thread_id):
        urls += [f"/v1/threads/{thread_id}{part}" for part in ("", "/messages", "/audit")]
    for approval_id in (owned.approval_id, owned.inbox_approval_id):
        urls.append(f"/v1/approvals/{approval_id}")
    urls.append(f"/assistants/{owned.assistant_id}")
    state: dict[str, Any] = {}
    for url in urls:
        response = await client.get(url, headers=headers)
        state[url] = (response.status_code, response.json())
    for thread_id in (owned.thread_id, owned.inbox_thread_id):
        url = f"/v1/threads/{thread_id}/stream"
        response = await client.get(url, headers=headers)
        state[url] = (response.status_code, response.text)
    return state


async def row_counts(client: httpx.AsyncClient) -> dict[str, int]:
    """The number of rows of every table of the app's schema."""
    counts: dict[str, int] = {}
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        for table in metadata.sorted_tables:
            counts[table.name] = int(
                await conn.scalar(sa.select(sa.func.count()).select_from(table))
            )
    return counts


async def checkpoint_ids(client: httpx.AsyncClient, *thread_ids: str) -> dict[str, str | None]:
    """Each thread's latest checkpoint id, straight from the checkpointer."""
    graph = client.services.executor.graph("tutor")  # type: ignore[attr-defined]
    ids: dict[str, str | None] = {}
    for thread_id in thread_ids:
        state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        ids[thread_id] = state.config["configurable"].get("checkpoint_id")
    return ids
