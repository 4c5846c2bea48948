"""What a LangGraph app's own frontend sends, served as the Agent Server serves it, through the
real ``langgraph-sdk`` client over real HTTP: ``GET /info`` (Agent Chat UI's connection check)
and ``/ok``; a run that names the thread's newest checkpoint (``useStream`` sends it); an empty
``input`` beside a ``command`` (Agent Chat UI's answer to an interrupt); message content as
LangChain content blocks, which the tutor and the offline model read as text; the state at any
checkpoint the server keeps; ``threads.count`` and ``assistants.count``; a cancel that waits for
the run's end."""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.langgraph_client import parts, sdk_client
from tests.openai_stub import OpenAIStub

QUESTION = [{"type": "text", "text": "What is retrieval?"}]
ASK_FOR_SUMMARY = [{"type": "text", "text": "Add a summary of our discussion to my note"}]


def _human(content: Any) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": content}]}


async def test_info_and_ok_answer_without_a_key_and_name_the_server(open_live: Any) -> None:
    async with open_live(api_keys="k1=acme:alice") as (client, _):
        info = await client.get("/info")
        ok = await client.get("/ok")
        threads = await client.post("/threads/search", json={})

    assert info.status_code == 200
    assert info.json() == {
        "server": "consentry",
        "version": version("consentry"),
        "langgraph_py_version": version("langgraph"),
        "flags": {"assistants": True, "crons": True, "langsmith": False},
        "host": {"kind": "self-hosted"},
    }
    assert (ok.status_code, ok.json()) == (200, {"ok": True})
    assert threads.status_code == 401  # the data still needs a key


async def test_content_blocks_are_read_as_text_and_the_tutor_asks_its_consent(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        as_blocks = await parts(sdk.runs.stream(None, "tutor", input=_human(QUESTION)))
        as_text = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = as_blocks[0].data["thread_id"]
        asked = await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        pending = (await client.get("/v1/approvals", params={"status": "pending"})).json()

    def reply(run: list[Any]) -> str:
        return str(run[-2].data["messages"][-1]["content"])

    # The offline model answers the blocks as it answers the same words sent as a string.
    assert reply(as_blocks) == reply(as_text)
    assert asked[-1].data["status"] == "interrupted"
    assert [a["kind"] for a in pending["approvals"]] == ["note_create"]


async def test_a_run_that_names_the_newest_checkpoint_continues_and_a_command_only_that(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        head = (await sdk.threads.get_state(thread_id))["checkpoint"]
        # As useStream sends it: the checkpoint without its thread id, and a null map.
        checkpoint = {"checkpoint_ns": "", "checkpoint_id": head["checkpoint_id"]}
        checkpoint["checkpoint_map"] = None  # type: ignore[assignment]
        again = await parts(
            sdk.runs.stream(
                thread_id, "tutor", input=_human("What is chunking?"), checkpoint=checkpoint
            )
        )
        by_id = await parts(
            sdk.runs.stream(
                thread_id,
                "tutor",
                input=_human("Why does spacing help memory?"),
                checkpoint_id=(await sdk.threads.get_state(thread_id))["checkpoint"][
                    "checkpoint_id"
                ],
            )
        )
        stale = head["checkpoint_id"]
        with pytest.raises(ConflictError) as older:  # a decision answers the newest's consents
            await parts(
                sdk.runs.stream(
                    thread_id, "tutor", input={}, command={"resume": "yes"}, checkpoint_id=stale
                )
            )
        with pytest.raises(ConflictError) as going_on:  # a run with no input goes on from it
            await parts(sdk.runs.stream(thread_id, "tutor", input=None, checkpoint_id=stale))
        with pytest.raises(ConflictError) as queued:  # a fork is not queued (`interrupt` is)
            await sdk.runs.create(
                thread_id,
                "tutor",
                input=_human("And then?"),
                multitask_strategy="interrupt",
                checkpoint_id=stale,
            )
        with pytest.raises(NotFoundError) as on_a_new_thread:
            await parts(
                sdk.runs.stream(
                    None, "tutor", input=_human("Hi"), checkpoint_id=head["checkpoint_id"]
                )
            )
        transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()

    assert again[-1].data["status"] == "success"
    assert by_id[-1].data["status"] == "success"
    refused = older.value.response.json()["error"]
    assert refused["code"] == "checkpoint_not_head"
    assert refused["details"]["checkpoint_id"] == head["checkpoint_id"]
    assert refused["details"]["head_checkpoint_id"] not in (None, head["checkpoint_id"])
    assert going_on.value.response.json()["error"]["code"] == "checkpoint_not_head"
    assert queued.value.response.json()["error"]["code"] == "fork_not_queued"
    assert on_a_new_thread.value.response.json()["error"]["code"] == "checkpoint_not_found"
    said = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
    assert said == ["What is retrieval?", "What is chunking?", "Why does spacing help memory?"]


async def test_an_empty_input_beside_a_command_resumes_and_a_filled_one_is_refused(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human(QUESTION)))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human(ASK_FOR_SUMMARY)))
        approve = {"resume": {"decision": "approve"}}
        with pytest.raises(UnprocessableEntityError) as both:
            await parts(sdk.runs.stream(thread_id, "tutor", input=_human("Hi"), command=approve))
        approved = await parts(sdk.runs.stream(thread_id, "tutor", input={}, command=approve))
        approvals = (await client.get("/v1/approvals")).json()["approvals"]

    assert both.value.response.json()["error"]["code"] == "invalid_input"
    assert approved[-1].data["status"] == "success"
    assert [(a["kind"], a["status"]) for a in approvals] == [("note_create", "approved")]


async def test_the_state_at_any_kept_checkpoint_is_read_and_one_not_kept_is_404(
    open_live: Any,
) -> None:
    async with open_live(checkpoint_retention="all") as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
        history = await sdk.threads.get_history(thread_id, limit=100)
        after_first = next(h for h in history if len(h["values"]["messages"]) == 2)
        kept = after_first["checkpoint"]
        by_id = await sdk.threads.get_state(thread_id, checkpoint_id=kept["checkpoint_id"])
        by_checkpoint = await sdk.threads.get_state(thread_id, checkpoint=kept)
        newest = await sdk.threads.get_state(thread_id)
        with pytest.raises(NotFoundError) as unknown:
            await sdk.threads.get_state(thread_id, checkpoint_id="1f0-not-kept")

    assert by_id == by_checkpoint == after_first
    assert [m["content"] for m in by_id["values"]["messages"]][:1] == ["What is retrieval?"]
    assert len(newest["values"]["messages"]) == 4
    assert unknown.value.response.json()["error"]["code"] == "checkpoint_not_found"


async def test_with_retention_latest_only_the_newest_checkpoint_is_kept(
    open_live: Any,
) -> None:
    async with open_live(checkpoint_retention="latest") as (client, _), sdk_client(client) as sdk:
        first = await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        thread_id = first[0].data["thread_id"]
        before = (await sdk.threads.get_state(thread_id))["checkpoint"]
        await parts(sdk.runs.stream(thread_id, "tutor", input=_human("What is chunking?")))
        newest = await sdk.threads.get_state(thread_id)
        by_id = await sdk.threads.get_state(
            thread_id, checkpoint_id=newest["checkpoint"]["checkpoint_id"]
        )
        with pytest.raises(NotFoundError) as replaced:
            await sdk.threads.get_state(thread_id, checkpoint_id=before["checkpoint_id"])

    assert by_id == newest
    assert replaced.value.response.json()["error"]["code"] == "checkpoint_not_found"


async def test_threads_and_assistants_are_counted_with_the_filters_of_search(
    open_live: Any,
) -> None:
    graphs = "city=consentry_graphs.examples.ask_city:graph"
    async with open_live(graphs=graphs, api_keys="ka=acme:alice,kb=acme:bob") as (client, _):
        sdk = get_client(url=str(client.base_url), api_key="ka")
        await parts(sdk.runs.stream(None, "tutor", input=_human("What is retrieval?")))
        city = await parts(sdk.runs.stream(None, "city", input=_human("Plan a trip")))
        await sdk.threads.update(city[0].data["thread_id"], metadata={"trip": True})
        counts = {
            "all": await sdk.threads.count(),
            "waiting": await sdk.threads.count(status="interrupted"),
            "city": await sdk.threads.count(metadata={"graph_id": "city"}),
            "trip": await sdk.threads.count(metadata={"trip": True}),
            "no graph": await sdk.threads.count(metadata={"graph_id": "nope"}),
            "idle": await sdk.threads.count(status="idle"),
        }
        assistants = (await sdk.assistants.count(), await sdk.assistants.count(graph_id="city"))
        with pytest.raises(UnprocessableEntityError):
            await sdk.threads.count(values={"city": "Lisbon"})
        await sdk.aclose()
        bob = await client.post("/threads/count", json={}, headers={"x-api-key": "kb"})

    assert counts == {"all": 2, "waiting": 1, "city": 1, "trip": 1, "no graph": 0, "idle": 1}
    assert assistants == (2, 1)
    assert (bob.status_code, bob.json()) == (200, 0)


async def test_a_cancel_that_waits_cuts_a_slow_node_and_answers_once_the_run_has_ended(
    open_live: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("An answer nobody waits for.")
    async with open_live(**stub.app_settings()) as (client, _), sdk_client(client) as sdk:
        run = await sdk.runs.create(None, "tutor", input=_human("What is x?"))
        thread_id, run_id = run["thread_id"], run["run_id"]
        await asyncio.wait_for(stub.holding.wait(), 10)
        # The model call is held, and stays held: the cancel cuts the node's step short
        # (CANCEL_GRACE_SECONDS), and its answer comes once the run has ended.
        await asyncio.wait_for(sdk.runs.cancel(thread_id, run_id, wait=True), 10)
        ended = await sdk.runs.get(thread_id, run_id)
        state = await sdk.threads.get_state(thread_id)
        stub.release()

    assert (ended["status"], ended["reason"]) == ("interrupted", "cancelled")
    said = [m["content"] for m in state["values"]["messages"]]  # type: ignore[call-overload,index]
    assert "An answer nobody waits for." not in said


async def test_the_note_a_thread_is_about_is_named_in_the_input_checked_and_remembered(
    open_live: Any,
) -> None:
    async with open_live(api_keys="ka=acme:alice,kb=acme:bob") as (client, _):
        alice = {"x-api-key": "ka"}
        projects = (await client.get("/v1/projects", headers=alice)).json()["projects"]
        note = await client.post(
            f"/v1/projects/{projects[0]['project_id']}/notes",
            json={"title": "RAG", "content": "Retrieval augments generation."},
            headers=alice,
        )
        note_id = note.json()["note_id"]
        sdk = get_client(url=str(client.base_url), api_key="ka")
        question = _human("What is retrieval?") | {"note_id": note_id}
        answered = await parts(sdk.runs.stream(None, "tutor", input=question))
        thread_id = answered[0].data["thread_id"]
        ask = _human("Add a summary of our discussion to my note") | {"note_id": note_id}
        asked = await parts(sdk.runs.stream(thread_id, "tutor", input=ask))
        pending = (await client.get("/v1/approvals", headers=alice)).json()["approvals"]
        thread = (await client.get(f"/v1/threads/{thread_id}", headers=alice)).json()
        with pytest.raises(NotFoundError) as unknown:
            await parts(sdk.runs.stream(None, "tutor", input=_human("Hi") | {"note_id": "nope"}))
        await sdk.aclose()
        bob = get_client(url=str(client.base_url), api_key="kb")
        with pytest.raises(NotFoundError) as theirs:
            await parts(bob.runs.stream(None, "tutor", input=_human("Hi") | {"note_id": note_id}))
        await bob.aclose()

    assert asked[-1].data["status"] == "interrupted"
    assert [(a["kind"], a["proposal"]["note_id"]) for a in pending] == [("note_edit", note_id)]
    assert (thread["note_id"], thread["project_id"]) == (note_id, projects[0]["project_id"])
    assert unknown.value.response.json()["error"]["code"] == "note_not_found"
    assert theirs.value.response.json()["error"]["code"] == "note_not_found"
