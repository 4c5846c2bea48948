"""Time travel on the LangGraph SDK face, through the real ``langgraph-sdk`` client over real
HTTP: a run from an older checkpoint forks the thread (Agent Chat UI's "edit and resend"), the
history keeps a turn per run so that every past message can be forked from, and a consent
pending on the branch the thread's head leaves ends ``superseded`` — in the inbox and the audit
trail, never decided afterwards — while an effect applied on the old branch is not applied
again."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.langgraph_client import parts, sdk_client

ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"


def _human(content: str) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": content}]}


def _asked(state: dict[str, Any]) -> list[str]:
    return [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]


async def _audit(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str, str | None]]:
    entries = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    return [(e["action"], e.get("approval_id")) for e in entries]


async def test_a_run_from_an_older_checkpoint_branches_the_thread_from_there(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
        before = await sdk.threads.get_history(thread_id)
        # Agent Chat UI's edit of the second question: a run from the state it was asked in
        # (the parent of the first state that holds it).
        asked_in = before[0]["parent_checkpoint"]
        edited = await parts(
            sdk.runs.stream(
                thread_id,
                "tutor",
                input=_human("What is spaced repetition?"),
                checkpoint=asked_in,
            )
        )
        head = await sdk.threads.get_state(thread_id)
        after = await sdk.threads.get_history(thread_id)
        transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()
        # The edit of the thread's first question: from the state its first run started in.
        await parts(
            sdk.runs.stream(
                thread_id,
                "tutor",
                input=_human("What is augmentation?"),
                checkpoint=after[-2]["parent_checkpoint"],
            )
        )
        first_edited = await sdk.threads.get_state(thread_id)

    assert edited[-1].data["status"] == "success"
    assert _asked(head) == ["What is retrieval?", "What is spaced repetition?"]
    # One turn a run: the first question's, the second's, and the edit's; and the thread's
    # start (its first run's input).
    assert [_asked(state) for state in before] == [
        ["What is retrieval?", "What is chunking?"],
        ["What is retrieval?"],
        [],
    ]
    assert [_asked(state) for state in after] == [
        ["What is retrieval?", "What is spaced repetition?"],
        ["What is retrieval?", "What is chunking?"],
        ["What is retrieval?"],
        [],
    ]
    # Both branches hang from the state the edited question was asked in.
    parents = [(s["parent_checkpoint"] or {}).get("checkpoint_id") for s in after]
    forked = asked_in["checkpoint_id"]
    assert parents == [forked, forked, after[3]["checkpoint"]["checkpoint_id"], None]
    assert _asked(first_edited) == ["What is augmentation?"]  # a branch of its own
    assert after[2]["checkpoint"]["checkpoint_id"] == forked
    assert head["checkpoint"] == after[0]["checkpoint"]
    # The transcript keeps everything anybody said, in the order it was said.
    said = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
    assert said == ["What is retrieval?", "What is chunking?", "What is spaced repetition?"]


async def test_a_fork_from_before_a_pending_consent_supersedes_it(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        answered = (await sdk.threads.get_state(thread_id))["checkpoint"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
        approval_id = interrupt["id"]

        forked = await parts(
            sdk.runs.stream(
                thread_id, "tutor", input=_human("What is chunking?"), checkpoint=answered
            )
        )
        approval = (await client.get(f"/v1/approvals/{approval_id}")).json()
        inbox = (await client.get("/v1/approvals", params={"status": "superseded"})).json()
        pending = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        late = await client.post(
            f"/v1/approvals/{approval_id}/decision", json={"decision": "approve"}
        )
        with pytest.raises(ConflictError) as resumed:  # nothing waits on the new head
            await parts(
                sdk.runs.stream(
                    thread_id, "tutor", input={}, command={"resume": {"decision": "approve"}}
                )
            )
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        state = await sdk.threads.get_state(thread_id)
        audit = await _audit(client, thread_id)

    assert forked[-1].data["status"] == "success"
    assert approval["status"] == "superseded"
    assert [a["approval_id"] for a in inbox["approvals"]] == [approval_id]
    assert pending["approvals"] == []
    assert late.status_code == 409
    assert late.json()["error"]["code"] == "consent_superseded"
    assert resumed.value.response.json()["error"]["code"] == "no_pending_consent"
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])
    assert state["interrupts"] == []
    assert state["next"] == []
    assert _asked(state) == ["What is retrieval?", "What is chunking?"]
    consent_records = [entry for entry in audit if entry[1] == approval_id]
    assert consent_records == [
        ("consent_requested", approval_id),
        ("consent_superseded", approval_id),
    ]


async def test_a_fork_from_a_decided_consents_turn_does_not_apply_its_effect_again(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
        approval_id = interrupt["id"]
        waiting = (await sdk.threads.get_state(thread_id))["checkpoint"]
        await parts(
            sdk.runs.stream(
                thread_id, "tutor", input={}, command={"resume": {"decision": "approve"}}
            )
        )
        approval = (await client.get(f"/v1/approvals/{approval_id}")).json()
        project_id = approval["proposal"]["project_id"]
        notes_before = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
        # From the turn that waited for the consent, with a new message: its question is not
        # asked again, and the note it approved is not written again.
        forked = await parts(
            sdk.runs.stream(
                thread_id, "tutor", input=_human("What is chunking?"), checkpoint=waiting
            )
        )
        notes_after = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
        after = (await client.get(f"/v1/approvals/{approval_id}")).json()
        state = await sdk.threads.get_state(thread_id)

    assert forked[-1].data["status"] == "success"
    assert len(notes_before) == 1
    assert notes_after == notes_before
    assert after["status"] == "approved"
    assert state["interrupts"] == []
    assert _asked(state) == ["What is retrieval?", ASK_FOR_SUMMARY, "What is chunking?"]


async def test_a_checkpoint_the_thread_does_not_keep_cannot_be_forked(open_live: Any) -> None:
    async with (
        open_live(checkpoint_retention="latest") as (client, _),
        sdk_client(client) as sdk,
    ):
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        replaced = (await sdk.threads.get_state(thread_id))["checkpoint"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
        with pytest.raises(NotFoundError) as gone:
            await parts(
                sdk.runs.stream(thread_id, "tutor", input=_human("And?"), checkpoint=replaced)
            )
        state = await sdk.threads.get_state(thread_id)

    error = gone.value.response.json()["error"]
    assert error["code"] == "checkpoint_not_found"
    assert error["details"]["checkpoint_id"] == replaced["checkpoint_id"]
    assert _asked(state) == ["What is retrieval?", "What is chunking?"]


CITY = "city=consentry_graphs.examples.ask_city:graph"


async def test_a_state_update_supersedes_the_consent_it_passes_and_the_graph_goes_on(
    open_live: Any,
) -> None:
    """``update_state`` as the node that asks (what Studio's "edit state" does): the question
    it leaves unanswered ends ``superseded`` (audited with the update), and a run with no
    input goes on from the update."""
    async with open_live(graphs=CITY) as (client, _), sdk_client(client) as sdk:
        thread = await sdk.threads.create(metadata={"graph_id": "city"})
        thread_id = thread["thread_id"]
        await sdk.runs.wait(thread_id, "city", input={"messages": []})
        (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
        with pytest.raises(UnprocessableEntityError) as unknown_node:
            await sdk.threads.update_state(thread_id, {"city": "Porto"}, as_node="fly")
        updated = await sdk.threads.update_state(thread_id, {"city": "Porto"}, as_node="ask_city")
        state = await sdk.threads.get_state(thread_id)
        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()
        done = await sdk.runs.wait(thread_id, "city", input=None)
        with pytest.raises(httpx.HTTPStatusError) as nothing_left:  # `wait` raises it as httpx's
            await sdk.runs.wait(thread_id, "city", input=None)
        audit = await _audit(client, thread_id)

    assert unknown_node.value.response.json()["error"]["code"] == "invalid_update"
    assert updated["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    assert (state["values"]["city"], state["next"], state["interrupts"]) == (
        "Porto",
        ["book_trip"],
        [],
    )
    assert approval["status"] == "superseded"
    assert done["messages"][-1]["content"] == "Booked a trip to Porto."
    assert nothing_left.value.response.json()["error"]["code"] == "nothing_to_continue"
    actions = [action for action, _ in audit]
    assert actions.index("consent_superseded") < actions.index("state_updated")
    assert actions[-2:] == ["run_started", "run_ended"]


async def test_a_copy_keeps_the_thread_its_history_and_transcript_under_a_new_id(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await sdk.threads.update(thread_id, metadata={"topic": "search"})
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        with pytest.raises(ConflictError) as waiting:
            await sdk.threads.copy(thread_id)
        await parts(
            sdk.runs.stream(
                thread_id, "tutor", input={}, command={"resume": {"decision": "reject"}}
            )
        )
        copy = await client.post(f"/threads/{thread_id}/copy")
        copy_id = copy.json()["thread_id"]
        source_history = await sdk.threads.get_history(thread_id)
        copy_history = await sdk.threads.get_history(copy_id)
        said = (await client.get(f"/v1/threads/{copy_id}/messages")).json()["messages"]
        source_said = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
        await parts(sdk.runs.stream(copy_id, "tutor", input=_human("What is chunking?")))
        source_after = await sdk.threads.get_state(thread_id)
        copy_after = await sdk.threads.get_state(copy_id)
        copy_audit = (await client.get(f"/v1/threads/{copy_id}/audit")).json()["records"]

    assert waiting.value.response.json()["error"]["code"] == "consent_pending"
    assert copy.status_code == 200
    assert copy_id != thread_id
    assert copy.json()["metadata"]["topic"] == "search"
    assert copy.json()["status"] == "idle"
    assert [s["values"] for s in copy_history] == [s["values"] for s in source_history]
    assert [(m["role"], m["content"]) for m in said] == [
        (m["role"], m["content"]) for m in source_said
    ]
    assert _asked(source_after) == ["What is retrieval?", ASK_FOR_SUMMARY]
    assert _asked(copy_after) == ["What is retrieval?", ASK_FOR_SUMMARY, "What is chunking?"]
    assert (copy_audit[0]["action"], copy_audit[0]["data"]) == (
        "thread_copied",
        {"from_thread": thread_id},
    )


async def test_prune_deletes_threads_or_keeps_only_their_newest_checkpoint(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        ids = []
        for _ in range(3):
            run = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
            thread_id = run[0].data["thread_id"]
            await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
            ids.append(thread_id)
        with pytest.raises(NotFoundError):  # an id that is no thread: nothing is pruned
            await sdk.threads.prune([ids[1], "no-such-thread"])
        kept = await sdk.threads.prune([ids[0]], strategy="keep_latest")
        deleted = await sdk.threads.prune([ids[1], ids[1]])
        history = await sdk.threads.get_history(ids[0])
        state = await sdk.threads.get_state(ids[0])
        with pytest.raises(NotFoundError):
            await sdk.threads.get(ids[1])
        untouched = await sdk.threads.get_history(ids[2])

    assert kept == {"pruned_count": 1}
    assert deleted == {"pruned_count": 1}
    assert len(history) == 1
    assert _asked(state) == ["What is retrieval?", "What is chunking?"]
    assert len(untouched) == 3  # (its start, its two turns)


async def test_a_decision_written_into_the_state_by_hand_applies_nothing(open_live: Any) -> None:
    """An effect runs only behind a decision on record: a state update that writes an
    "approve" where the graph keeps its decision supersedes the consent, and the effect node
    that then runs finds no approval and applies nothing (``consent_not_granted``)."""
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        (interrupt,) = (await sdk.threads.get_state(thread_id))["interrupts"]
        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()
        forged = {"approval_id": interrupt["id"], "decision": "approve", "decided_by": "me"}
        await sdk.threads.update_state(
            thread_id, {"decision": forged}, as_node="request_note_create_consent"
        )
        ran = await sdk.runs.wait(thread_id, "tutor", input=None, raise_error=False)
        project_id = approval["proposal"]["project_id"]
        notes = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
        after = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()

    assert ran["__error__"]["error"] == "consent_not_granted"
    assert notes == []
    assert after["status"] == "superseded"


async def test_with_every_checkpoint_kept_a_fork_hangs_from_the_step_it_names(
    open_live: Any,
) -> None:
    async with (
        open_live(checkpoint_retention="all") as (client, _),
        sdk_client(client) as sdk,
    ):
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
        before = await sdk.threads.get_history(thread_id, limit=100)
        # The step that first held the first answer (an intermediate one: `all` keeps it).
        step = next(s for s in reversed(before) if len(s["values"]["messages"]) == 2)
        await parts(
            sdk.runs.stream(
                thread_id, "tutor", input=_human("What is recall?"), checkpoint=step["checkpoint"]
            )
        )
        after = await sdk.threads.get_history(thread_id, limit=100)
        head = await sdk.threads.get_state(thread_id)

    assert _asked(head) == ["What is retrieval?", "What is recall?"]
    new = after[: len(after) - len(before)]  # what the fork wrote, newest first
    assert {s["checkpoint"]["checkpoint_id"] for s in after[len(new) :]} == {
        s["checkpoint"]["checkpoint_id"] for s in before
    }
    # A copy of the step beside it (as LangGraph's own copy), the new branch hanging from it.
    anchor = new[-1]
    assert anchor["metadata"]["source"] == "fork"
    assert anchor["parent_checkpoint"] == step["parent_checkpoint"]
    assert anchor["values"] == step["values"]
    assert new[-2]["parent_checkpoint"]["checkpoint_id"] == anchor["checkpoint"]["checkpoint_id"]


async def test_a_state_update_that_lost_a_race_writes_nothing(
    open_live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two updates made from the same state: the one written first stands, the other is
    refused (``thread_changed``) rather than hung beside it as a branch nobody asked for."""
    async with open_live(graphs=CITY) as (client, services), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create(metadata={"graph_id": "city"}))["thread_id"]
        await sdk.runs.wait(thread_id, "city", input={"messages": []})
        # Its question passed by an update: the thread is idle, as both updates find it.
        await sdk.threads.update_state(thread_id, {"city": "Rome"}, as_node="ask_city")
        graph = services.executor.graph("city")
        update = graph.aupdate_state
        first: list[dict[str, Any]] = []
        overtaken: list[bool] = []

        async def made_then_overtaken(config: Any, values: Any, as_node: Any = None) -> Any:
            made = await update(config, values, as_node=as_node)
            if not overtaken:  # another update comes in and is written before this one
                overtaken.append(True)
                other = {"values": {"city": "Lisbon"}, "as_node": "ask_city"}
                written = await client.post(f"/threads/{thread_id}/state", json=other)
                first.append(written.json())
            return made

        monkeypatch.setattr(graph, "aupdate_state", made_then_overtaken)
        with pytest.raises(ConflictError) as lost:
            await sdk.threads.update_state(thread_id, {"city": "Porto"}, as_node="ask_city")
        state = await sdk.threads.get_state(thread_id)
        history = await sdk.threads.get_history(thread_id)

    assert lost.value.response.json()["error"]["code"] == "thread_changed"
    assert state["checkpoint"]["checkpoint_id"] == first[0]["checkpoint"]["checkpoint_id"]
    assert state["values"]["city"] == "Lisbon"
    assert [h["values"].get("city") for h in history].count("Porto") == 0


async def test_a_fork_of_a_graph_kept_as_deltas_starts_from_the_state_it_names(
    open_live: Any,
) -> None:
    """A ``DeltaChannel``'s value is rebuilt from the writes of a checkpoint's ancestors: the
    fork's copy hangs beside the checkpoint it copies, so the old branch's next step is not
    replayed into the new one."""
    delta = "delta=tests.graph_forms:delta_items"
    async with open_live(graphs=delta) as (client, _), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create(metadata={"graph_id": "delta"}))["thread_id"]
        done = await sdk.runs.wait(thread_id, "delta", input={"items": ["in"]})
        history = await sdk.threads.get_history(thread_id, limit=100)
        after_a = next(s for s in history if s["values"].get("items") == ["in", "a"])

        forked = await sdk.runs.wait(
            thread_id, "delta", input={"items": ["x"]}, checkpoint=after_a["checkpoint"]
        )

    assert done["items"] == ["in", "a", "b"]
    assert forked["items"] == ["in", "a", "x", "a", "b"]


async def test_a_copy_and_an_update_in_one_call_keep_the_state_they_copy(open_live: Any) -> None:
    """LangGraph's ``as_node="__copy__"`` with updates: the copy, then each update on it (the
    server holds both until their one transaction, and reads the copy it holds)."""
    async with open_live(graphs=CITY) as (client, _), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create(metadata={"graph_id": "city"}))["thread_id"]
        trip = {"messages": [{"type": "human", "content": "Plan a trip"}]}
        await sdk.runs.wait(thread_id, "city", input=trip)

        await sdk.threads.update_state(
            thread_id, [[{"city": "Oslo"}, "ask_city"]], as_node="__copy__"
        )
        state = await sdk.threads.get_state(thread_id)

    assert [m["content"] for m in state["values"]["messages"]] == ["Plan a trip"]
    assert (state["values"]["city"], state["next"], state["interrupts"]) == (
        "Oslo",
        ["book_trip"],
        [],
    )
