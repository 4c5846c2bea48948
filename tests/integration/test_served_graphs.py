"""Any LangGraph graph, served over HTTP: every form CONSENTRY_GRAPHS accepts runs; ``GET
/v1/graphs`` lists the graphs with their schemas and consent kinds; ``POST /v1/chat`` takes the
graph's own ``input``, checked against its input fields before anything is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from consentry.schemas.events import MessageEvent, StepEvent
from consentry_graphs.examples import word_count
from consentry_graphs.registry import GraphLoadError
from tests.sse import chat, kinds

FORMS = {
    "compiled": "consentry_graphs.examples.word_count:graph",
    "builder": "consentry_graphs.examples.word_count:builder",
    "factory": "tests.graph_forms:compiled_graph",
    "factory_builder": "tests.graph_forms:state_graph",
    "with_model": "tests.graph_forms:build_with_model",
    "spec": "tests.graph_forms:graph_spec",
}
WORDS = "words=consentry_graphs.examples.word_count:graph"
CONTEXT = "context=tests.graph_forms:context_graph"
PARALLEL = "parallel=consentry_graphs.examples.parallel_consents:graph_spec"


async def _refused(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/v1/chat", json=body)
    assert response.status_code == 422, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


async def _nothing_stored(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/threads")).json()["threads"] == []


# every form of graph


async def test_every_form_of_graph_runs_from_its_input_over_http(
    open_client: Callable[..., Any],
) -> None:
    served = ",".join(f"{name}={path}" for name, path in FORMS.items())
    async with open_client(graphs=served) as client:
        listed = (await client.get("/v1/graphs")).json()["graphs"]
        runs = {
            name: await chat(client, {"graph": name, "input": {"text": "one two three"}})
            for name in FORMS
        }

    assert [g["name"] for g in listed] == sorted([*FORMS, "tutor"])
    for name, events in runs.items():
        assert kinds(events) == ["run_started", "step", "message", "final"], name
        step, message = events[1], events[2]
        assert isinstance(step, StepEvent)
        assert isinstance(message, MessageEvent)
        label = "Counting your words" if name == "spec" else "Count words"
        assert (step.node, step.label, message.content) == ("count_words", label, "3 words."), name
        assert events[-1].reason == "completed", name  # type: ignore[union-attr]


async def test_a_graph_keeps_its_state_across_turns_in_the_servers_checkpointer(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=WORDS) as client:
        first = await chat(client, {"graph": "words", "input": {"text": "one two three"}})
        thread_id = first[0].thread_id
        # min_length alone: the text is the state's, from the first turn.
        second = await chat(client, {"thread_id": thread_id, "input": {"min_length": 4}})
    async with open_client(graphs=WORDS) as client:  # a new server on the same database
        third = await chat(client, {"thread_id": thread_id, "input": {"min_length": 5}})

    said = [
        [e.content for e in run if isinstance(e, MessageEvent)] for run in (first, second, third)
    ]
    assert said == [["3 words."], ["1 word."], ["1 word."]]


async def test_a_factory_that_cannot_build_its_graph_stops_start_up_naming_it(
    open_client: Callable[..., Any],
) -> None:
    with pytest.raises(GraphLoadError, match=r"graph 'bad' \(tests.graph_forms:build_fails\)"):
        async with open_client(graphs="bad=tests.graph_forms:build_fails"):
            pass


# GET /v1/graphs


async def test_the_graphs_are_listed_with_their_schemas_and_consent_kinds(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=f"{WORDS},{PARALLEL}") as client:
        response = await client.get("/v1/graphs")

    assert response.status_code == 200
    graphs = {g["name"]: g for g in response.json()["graphs"]}
    assert list(graphs) == ["parallel", "tutor", "words"]
    words = graphs["words"]
    assert words == {
        "name": "words",
        "accepts_message": False,
        "input_schema": word_count.graph.get_input_jsonschema(),
        "state_schema": words["state_schema"],
        "output_schema": word_count.graph.get_output_jsonschema(),
        "context_schema": None,
        "consent_kinds": [],
    }
    assert set(words["state_schema"]["properties"]) == {"text", "min_length", "words", "messages"}
    tutor = graphs["tutor"]
    assert (tutor["accepts_message"], tutor["consent_kinds"]) == (
        True,
        ["note_create", "note_delete", "note_edit"],
    )
    assert tutor["input_schema"]["title"] == "TutorInput"
    assert set(tutor["input_schema"]["properties"]) == {"messages", "project_id", "note_id"}
    assert graphs["parallel"]["consent_kinds"] == ["notify_team", "publish_post"]


async def test_a_graph_pydantic_cannot_describe_is_listed_without_schemas(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs="opaque=tests.graph_forms:opaque_field") as client:
        graphs = (await client.get("/v1/graphs")).json()["graphs"]

    opaque = next(g for g in graphs if g["name"] == "opaque")
    assert (opaque["input_schema"], opaque["state_schema"], opaque["output_schema"]) == (
        None,
        None,
        None,
    )


async def test_the_graphs_list_needs_an_api_key_when_keys_are_configured(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys="ka=acme:alice") as client:
        anonymous = await client.get("/v1/graphs")
        keyed = await client.get("/v1/graphs", headers={"authorization": "Bearer ka"})

    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"
    assert [g["name"] for g in keyed.json()["graphs"]] == ["tutor"]


# input on POST /v1/chat


async def test_an_input_that_does_not_fit_is_refused_naming_each_field_and_nothing_is_stored(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=WORDS) as client:
        error = await _refused(
            client, {"graph": "words", "input": {"text": 3, "min_length": 2, "colour": "red"}}
        )
        await _nothing_stored(client)

    assert error["code"] == "invalid_input"
    assert error["message"] == (
        "The input does not fit graph 'words' (its input schema: GET /v1/graphs)."
    )
    assert error["details"] == {
        "graph": "words",
        "errors": [
            {
                "loc": ["input", "text"],
                "msg": "Input should be a valid string",
                "type": "string_type",
            },
            {
                "loc": ["input", "colour"],
                "msg": "not an input field of this graph (it takes: min_length, text)",
                "type": "unknown_field",
            },
        ],
    }


async def test_an_input_that_does_not_fit_an_existing_thread_starts_no_run(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=WORDS) as client:
        first = await chat(client, {"graph": "words", "input": {"text": "a b"}})
        thread_id = first[0].thread_id
        before = (await client.get(f"/v1/threads/{thread_id}")).json()
        error = await _refused(client, {"thread_id": thread_id, "input": {"min_length": "2"}})
        after = (await client.get(f"/v1/threads/{thread_id}")).json()

    assert (error["code"], error["details"]["errors"][0]["loc"]) == (
        "invalid_input",
        ["input", "min_length"],
    )
    assert after == before


async def test_a_message_to_a_graph_whose_input_has_no_messages_is_refused(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=WORDS) as client:
        error = await _refused(client, {"graph": "words", "message": "count these words"})
        await _nothing_stored(client)

    assert error["code"] == "invalid_input"
    assert error["details"]["errors"] == [
        {
            "loc": ["message"],
            "msg": "this graph's input has no `messages`: send its `input` instead",
            "type": "no_messages_field",
        }
    ]


async def test_a_thread_started_by_an_input_is_titled_by_it(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=WORDS) as client:
        events = await chat(
            client, {"graph": "words", "input": {"text": "one  two\nthree", "min_length": 3}}
        )
        thread = (await client.get(f"/v1/threads/{events[0].thread_id}")).json()

    assert thread["title"] == "text: one two three, min_length: 3"


async def test_an_input_with_messages_reaches_the_tutor_as_a_message_would(
    client: httpx.AsyncClient,
) -> None:
    events = await chat(
        client,
        {"input": {"messages": [{"role": "user", "content": "What is  retrieval?"}]}},
    )
    thread_id = events[0].thread_id
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]

    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    assert thread["title"] == "What is retrieval?"
    assert next((m["role"], m["content"]) for m in transcript) == ("user", "What is  retrieval?")
    assert transcript[0]["message_id"].startswith("msg-")
    assert [m["role"] for m in transcript] == ["user", "assistant"]


async def test_an_over_long_message_inside_an_input_is_refused_like_a_message(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_message_chars=10) as client:
        error = await _refused(
            client, {"input": {"messages": [{"role": "user", "content": "x" * 11}]}}
        )
        await _nothing_stored(client)

    assert (error["code"], error["details"]) == (
        "message_too_long",
        {"limit": "max_message_chars", "max": 10},
    )


async def test_the_threads_project_and_note_are_added_to_an_input_that_has_those_fields(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=CONTEXT) as client:
        given = await chat(client, {"graph": "context", "input": {"topic": "RAG"}})
        project_id = (await client.get(f"/v1/threads/{given[0].thread_id}")).json()["project_id"]
        own = await chat(
            client, {"graph": "context", "input": {"topic": "RAG", "project_id": "elsewhere"}}
        )

    told = [e.content for run in (given, own) for e in run if isinstance(e, MessageEvent)]
    assert told == [f"RAG in {project_id} about None", "RAG in elsewhere about None"]
