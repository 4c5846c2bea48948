"""A consent kit's consent in LangChain's human-in-the-loop shape, through the real
``langgraph-sdk`` client over real HTTP: the tutor's ``note_edit`` interrupt carries one reviewed
action (``action_requests`` / ``review_configs``: its args the note's title and content after the
edit, its description the diff, its decisions the kind's) beside its own fields, and an answer of
``{"decisions": [...]}`` as Agent Chat UI sends it is the kind's decision: an edit checked by the
kind's edit model before the graph resumes, an approval and a rejection with its message, each
recorded once."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.langgraph_client import parts, sdk_client


def _human(text: str, note_id: str) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": text}], "note_id": note_id}


async def _asked(
    client: httpx.AsyncClient, sdk: LangGraphClient
) -> tuple[str, str, dict[str, Any]]:
    """A thread about a new note whose tutor asks to add a summary: its id, the note's, and the
    interrupt it waits for."""
    projects = (await client.get("/v1/projects")).json()["projects"]
    note = await client.post(
        f"/v1/projects/{projects[0]['project_id']}/notes",
        json={"title": "RAG", "content": "Retrieval augments generation."},
    )
    note_id = note.json()["note_id"]
    answered = await parts(
        sdk.runs.stream(None, "tutor", input=_human("What is retrieval?", note_id))
    )
    thread_id = answered[0].data["thread_id"]
    await parts(
        sdk.runs.stream(
            thread_id, "tutor", input=_human("Add a summary of our discussion to my note", note_id)
        )
    )
    (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
    return thread_id, note_id, dict(interrupt)


async def _decide(sdk: LangGraphClient, thread_id: str, decision: dict[str, Any]) -> Any:
    return await sdk.runs.wait(
        thread_id, "tutor", input={}, command={"resume": {"decisions": [decision]}}
    )


async def _note(client: httpx.AsyncClient, note_id: str) -> dict[str, Any]:
    note: dict[str, Any] = (await client.get(f"/v1/notes/{note_id}")).json()
    return note


async def test_a_kit_consent_is_one_reviewed_action_beside_its_own_fields(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        _, note_id, interrupt = await _asked(client, sdk)

    value = interrupt["value"]
    assert value["kind"] == "note_edit"
    (action,) = value["action_requests"]
    (review,) = value["review_configs"]
    assert action["name"] == review["action_name"] == "note_edit"
    assert action["args"] == {
        "title": "RAG",
        "content": value["proposal"]["proposed_content"],
    }
    assert action["description"].startswith(value["title"])
    assert "```diff\n" in action["description"]
    assert value["proposal"]["diff"].rstrip() in action["description"]
    assert review["allowed_decisions"] == ["approve", "edit", "reject"]
    assert set(review["args_schema"]["properties"]) == {"content", "title"}
    assert value["proposal"]["note_id"] == note_id


async def test_an_edited_action_is_the_kinds_edit_checked_before_the_graph_resumes(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        thread_id, note_id, interrupt = await _asked(client, sdk)
        with pytest.raises(httpx.HTTPStatusError) as blank:
            await _decide(
                sdk,
                thread_id,
                {"type": "edit", "edited_action": {"name": "note_edit", "args": {"content": " "}}},
            )
        with pytest.raises(httpx.HTTPStatusError) as two:
            await sdk.runs.wait(
                thread_id,
                "tutor",
                input={},
                command={"resume": {"decisions": [{"type": "approve"}, {"type": "approve"}]}},
            )
        still = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        args = {"title": "RAG, my way", "content": "Retrieval, in my own words."}
        done = await _decide(
            sdk, thread_id, {"type": "edit", "edited_action": {"name": "note_edit", "args": args}}
        )
        note = await _note(client, note_id)
        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()

    assert (blank.value.response.status_code, blank.value.response.json()["error"]["code"]) == (
        422,
        "invalid_edit",
    )
    assert two.value.response.json()["error"]["code"] == "invalid_resume"
    assert [a["approval_id"] for a in still["approvals"]] == [interrupt["id"]]
    assert (note["title"], note["content"], note["version"]) == (
        "RAG, my way",
        "Retrieval, in my own words.",
        2,
    )
    assert approval["status"] == "edited"
    assert "saved your edit" in done["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("decision", "status", "version"),
    [
        ({"type": "approve"}, "approved", 2),
        ({"type": "reject", "message": "Not now, thanks."}, "rejected", 1),
    ],
)
async def test_an_approved_or_rejected_action_is_the_kinds_decision(
    open_live: Any, decision: dict[str, Any], status: str, version: int
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        thread_id, note_id, interrupt = await _asked(client, sdk)
        await _decide(sdk, thread_id, decision)
        note = await _note(client, note_id)
        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()
        again = await client.post(
            f"/v1/approvals/{interrupt['id']}/decision", json={"decision": "approve"}
        )

    assert approval["status"] == status
    assert note["version"] == version
    assert approval.get("decided", {}).get("comment") == decision.get("message")
    assert again.status_code == 409  # decided once
