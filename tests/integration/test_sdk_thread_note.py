"""The note an SDK thread is about, named in its metadata (``threads.create`` /
``threads.update``), so that a client sending only ``{"messages": [...]}`` (Agent Chat UI,
``useStream``) gets the tutor's edits of that note: checked as the owner's, shown as the
thread's ``metadata.note_id``, searchable, cleared with ``null``; a note of another project
moves only a thread that has never run."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.langgraph_client import parts

SUMMARY = [{"type": "text", "text": "Add a summary of our discussion to my note"}]
ASK = {"messages": [{"type": "human", "content": SUMMARY}]}  # as Agent Chat UI sends it
QUESTION = {"messages": [{"type": "human", "content": "What is retrieval?"}]}
ALICE = {"x-api-key": "ka"}
REJECT = {"resume": {"decisions": [{"type": "reject"}]}}


async def _v1(client: httpx.AsyncClient, path: str, **params: str) -> dict[str, Any]:
    answer: dict[str, Any] = (await client.get(path, params=params, headers=ALICE)).json()
    return answer


async def _note(
    client: httpx.AsyncClient, title: str, *, project: str | None = None, key: str = "ka"
) -> str:
    """A new note titled ``title`` in ``project`` (an id), else in a new project."""
    if project is None:
        made = await client.post("/v1/projects", json={"name": title}, headers={"x-api-key": key})
        project = str(made.json()["project_id"])
    note = await client.post(
        f"/v1/projects/{project}/notes",
        json={"title": title, "content": f"{title}: what I know."},
        headers={"x-api-key": key},
    )
    return str(note.json()["note_id"])


async def _asked(sdk: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """What the tutor asks when told to save the discussion: the consent's kind and note."""
    await parts(sdk.runs.stream(thread_id, "tutor", input=ASK))
    (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
    value: dict[str, Any] = interrupt["value"]  # type: ignore[typeddict-item]
    return value


async def test_a_note_named_in_the_metadata_is_what_the_next_runs_are_about(
    open_live: Any,
) -> None:
    async with open_live(api_keys="ka=acme:alice") as (client, _):
        rag = await _note(client, "RAG")
        sdk = get_client(url=str(client.base_url), api_key="ka")
        first = await parts(sdk.runs.stream(None, "tutor", input=QUESTION))
        thread_id = first[0].data["thread_id"]
        project_id = (await _v1(client, f"/v1/threads/{thread_id}"))["project_id"]
        chunking = await _note(client, "Chunking", project=project_id)
        with pytest.raises(UnprocessableEntityError) as elsewhere:
            await sdk.threads.update(thread_id, metadata={"note_id": rag, "team": "a"})
        named = await sdk.threads.update(thread_id, metadata={"note_id": chunking})
        edit = await _asked(sdk, thread_id)
        await parts(sdk.runs.stream(thread_id, "tutor", input={}, command=REJECT))
        await parts(sdk.runs.stream(None, "tutor", input=QUESTION))  # a thread about no note
        found = await sdk.threads.search(metadata={"note_id": chunking})
        counted = await sdk.threads.count(metadata={"note_id": chunking})
        about_rag = await sdk.threads.search(metadata={"note_id": rag})
        listed = await _v1(client, "/v1/threads", note_id=chunking)
        cleared = await sdk.threads.update(thread_id, metadata={"note_id": None})
        create = await _asked(sdk, thread_id)
        await sdk.aclose()

    # A note of another project is refused, and nothing of that request is kept.
    assert elsewhere.value.response.json()["error"]["code"] == "project_mismatch"
    assert "team" not in named["metadata"]
    assert named["metadata"]["note_id"] == chunking
    # The run sent only its messages; the tutor drafted an edit of the thread's note.
    assert (edit["kind"], edit["proposal"]["note_id"]) == ("note_edit", chunking)
    assert edit["action_requests"][0]["args"]["title"] == "Chunking"
    assert [t["thread_id"] for t in found] == [thread_id]
    assert (counted, about_rag) == (1, [])
    assert [t["thread_id"] for t in listed["threads"]] == [thread_id]
    # Without a note, the same words ask to create one.
    assert "note_id" not in cleared["metadata"]
    assert create["kind"] == "note_create"


async def test_a_thread_created_with_a_note_is_in_its_project_and_keeps_it(
    open_live: Any,
) -> None:
    async with open_live(api_keys="ka=acme:alice") as (client, _):
        rag = await _note(client, "RAG")
        sdk = get_client(url=str(client.base_url), api_key="ka")
        created = await sdk.threads.create(metadata={"note_id": rag, "topic": "rag"})
        thread_id = created["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=QUESTION))
        edit = await _asked(sdk, thread_id)
        other = await _note(client, "Spacing")
        refused = []
        for target in (thread_id, (await sdk.threads.create())["thread_id"]):  # ran, or not
            with pytest.raises(UnprocessableEntityError) as elsewhere:
                await sdk.threads.update(target, metadata={"note_id": other})
            refused.append(elsewhere.value.response.json()["error"])
        detail = await _v1(client, f"/v1/threads/{thread_id}")
        rag_note = await _v1(client, f"/v1/notes/{rag}")
        await sdk.aclose()

    assert created["metadata"]["note_id"] == rag
    assert created["metadata"]["topic"] == "rag"
    assert (edit["kind"], edit["proposal"]["note_id"]) == ("note_edit", rag)
    assert (detail["note_id"], detail["project_id"]) == (rag, rag_note["project_id"])
    assert [e["code"] for e in refused] == ["project_mismatch"] * 2
    assert refused[0]["details"]["project_id"] == rag_note["project_id"]


async def test_a_deleted_note_leaves_the_thread_about_none_and_other_faces_name_their_own(
    open_live: Any,
) -> None:
    async with open_live(api_keys="ka=acme:alice") as (client, _):
        rag = await _note(client, "RAG")
        sdk = get_client(url=str(client.base_url), api_key="ka")
        thread_id = (await sdk.threads.create(metadata={"note_id": rag}))["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=QUESTION))
        # `/v1/chat` names the note with each message: one naming none is about none.
        on_v1 = await client.post(
            "/v1/chat",
            json={"thread_id": thread_id, "message": SUMMARY[0]["text"]},
            headers=ALICE,
        )
        v1_asked = (await _v1(client, "/v1/approvals"))["approvals"]
        rejected = await client.post(
            "/v1/chat",
            json={
                "thread_id": thread_id,
                "resume": {"approval_id": v1_asked[0]["approval_id"], "decision": "reject"},
            },
            headers=ALICE,
        )
        deleted = await client.delete(f"/v1/notes/{rag}", headers=ALICE)
        after_deletion = await _asked(sdk, thread_id)
        await sdk.aclose()

    assert (on_v1.status_code, rejected.status_code, deleted.status_code) == (200, 200, 204)
    assert [a["kind"] for a in v1_asked] == ["note_create"]
    # The thread still names its note, but a run about it finds none: it offers a new one.
    assert after_deletion["kind"] == "note_create"


async def test_a_note_that_is_not_the_callers_or_not_an_id_is_refused_and_nothing_changes(
    open_live: Any,
) -> None:
    async with open_live(api_keys="ka=acme:alice,kb=acme:bob") as (client, _):
        bobs = await _note(client, "Secret", key="kb")
        sdk = get_client(url=str(client.base_url), api_key="ka")
        thread = await sdk.threads.create(metadata={"topic": "x"})
        refused: list[tuple[int, str]] = []
        for metadata in ({"note_id": bobs}, {"note_id": "nope"}, {"note_id": 7, "topic": "y"}):
            for call in (
                sdk.threads.update(thread["thread_id"], metadata=metadata),
                sdk.threads.create(metadata=metadata),
            ):
                with pytest.raises((NotFoundError, UnprocessableEntityError)) as caught:
                    await call
                error = caught.value.response  # type: ignore[attr-defined]
                refused.append((error.status_code, error.json()["error"]["code"]))
        after = await sdk.threads.get(thread["thread_id"])
        count = await sdk.threads.count()
        await sdk.aclose()

    assert refused == [(404, "note_not_found")] * 4 + [(422, "request_invalid")] * 2
    assert after["metadata"]["topic"] == "x"
    assert "note_id" not in after["metadata"]
    assert count == 1
