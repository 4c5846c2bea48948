"""The notes store's create and delete effects, on the real database: once per approval id. A
second call for the same approval (a re-run of the effect node after a crash) returns the first
call's outcome and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import pytest_asyncio

from consentry.app import create_app
from consentry.principal import LOCAL_PRINCIPAL
from consentry.runtime.notes import OwnerNotesStore
from consentry.services import Services
from consentry.settings import Settings
from consentry_graphs.consent import ConsentNotGrantedError
from consentry_graphs.services import AppliedDeletion
from tests.conftest import ManualClock
from tests.lifespan import running
from tests.sse import after_a_question, chat


@dataclass
class App:
    client: httpx.AsyncClient
    services: Services

    def notes(self, thread_id: str) -> OwnerNotesStore:
        """The store the tutor's effect nodes get for the local user's run on ``thread_id``."""
        return OwnerNotesStore(
            self.services.db, LOCAL_PRINCIPAL, self.services.clock, thread_id=thread_id
        )


@pytest_asyncio.fixture
async def app(db_url: str, clock: ManualClock) -> AsyncIterator[App]:
    fastapi_app = create_app(Settings(database_url=db_url, sample_notes=False), clock=clock)
    async with running(fastapi_app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield App(client, fastapi_app.state.services)


async def _approve(client: httpx.AsyncClient, body: dict[str, str]) -> tuple[str, str]:
    """Ask the tutor (in a thread that discussed a question first), approve its consent; return
    the approval id and the thread's."""
    asked = await after_a_question(client, body)
    consent = asked[-2]
    assert consent.type == "consent"
    await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    return consent.approval_id, consent.thread_id


async def test_a_deletion_applied_again_returns_its_outcome_and_deletes_nothing(app: App) -> None:
    project = (await app.client.get("/v1/projects")).json()["projects"][0]
    note = (
        await app.client.post(
            f"/v1/projects/{project['project_id']}/notes", json={"title": "RAG", "content": "x"}
        )
    ).json()
    approval_id, thread_id = await _approve(
        app.client, {"message": "delete this note", "note_id": note["note_id"]}
    )
    assert (await app.client.get(f"/v1/notes/{note['note_id']}")).status_code == 404

    again = await app.notes(thread_id).apply_note_deletion(
        approval_id=approval_id, note_id=note["note_id"], version=1
    )

    assert again == AppliedDeletion(outcome="deleted", note_id=note["note_id"])


async def test_a_creation_applied_again_returns_the_same_note_and_creates_nothing(
    app: App,
) -> None:
    approval_id, thread_id = await _approve(
        app.client, {"message": "Please save our discussion to a note"}
    )
    project_id = (await app.client.get("/v1/projects")).json()["projects"][0]["project_id"]
    (created,) = (await app.client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]

    again = await app.notes(thread_id).apply_note_creation(
        approval_id=approval_id, project_id=project_id, title="Other", content="Other."
    )

    assert again.outcome == "applied"
    assert again.note is not None
    assert (again.note.note_id, again.note.title) == (created["note_id"], created["title"])
    notes = (await app.client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    assert [n["note_id"] for n in notes] == [created["note_id"]]


async def test_an_effect_needs_an_approved_consent_of_its_own_thread(app: App) -> None:
    """The ledger's guard: a run applies an effect only behind an approval of its own thread
    that a person or a policy approved; another thread's (a copy's) or a pending one applies
    nothing."""
    project_id = (await app.client.get("/v1/projects")).json()["projects"][0]["project_id"]
    approved, thread_id = await _approve(
        app.client, {"message": "Please save our discussion to a note"}
    )
    asked = await after_a_question(app.client, {"message": "Please save our discussion to a note"})
    pending = asked[-2]
    assert pending.type == "consent"
    notes_before = (await app.client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    create = {"project_id": project_id, "title": "Other", "content": "Other."}

    with pytest.raises(ConsentNotGrantedError):  # approved, but in another thread
        await app.notes(pending.thread_id).apply_note_creation(approval_id=approved, **create)
    with pytest.raises(ConsentNotGrantedError):  # its own thread's, but not decided
        await app.notes(pending.thread_id).apply_note_creation(
            approval_id=pending.approval_id, **create
        )
    with pytest.raises(ConsentNotGrantedError):  # no such approval at all
        await app.notes(thread_id).apply_note_creation(approval_id="made-up", **create)

    notes_after = (await app.client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    assert notes_after == notes_before
