"""GET /v1/consent-kinds: every kind of every served graph, with the JSON Schemas of its proposal
and of a person's edit (graphs added with CONSENTRY_GRAPHS included)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from consentry.schemas.events import ErrorEvent
from consentry_graphs.examples.parallel_consents import NotifyTeamProposal, PublishPostProposal
from consentry_graphs.tutor.consents import (
    NoteCreateProposal,
    NoteCreateRevision,
    NoteDeleteProposal,
    NoteEditProposal,
    NoteEditRevision,
)
from tests.sse import chat, kinds

PARALLEL = "parallel=consentry_graphs.examples.parallel_consents:graph_spec"
HIDDEN = "hidden=tests.integration.undeclared_kind_graphs:hidden"


async def test_the_tutors_three_kinds_are_published_with_their_schemas(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/consent-kinds")

    assert response.status_code == 200
    assert response.json() == {
        "consent_kinds": [
            {
                "graph": "tutor",
                "kind": "note_create",
                "description": (
                    "Create a new note in the project (the tutor saves a summary, or a review)."
                ),
                "allowed_decisions": ["approve", "edit", "reject"],
                "ttl_seconds": None,
                "always_ask": False,
                "proposal_schema": NoteCreateProposal.model_json_schema(),
                "edit_schema": NoteCreateRevision.model_json_schema(),
            },
            {
                "graph": "tutor",
                "kind": "note_delete",
                "description": "Delete the open note and its history, if it is unchanged "
                "since the request.",
                "allowed_decisions": ["approve", "reject"],
                "ttl_seconds": None,
                "always_ask": True,
                "proposal_schema": NoteDeleteProposal.model_json_schema(),
                "edit_schema": None,
            },
            {
                "graph": "tutor",
                "kind": "note_edit",
                "description": "Write a new version of the open note (the tutor adds or updates "
                "its summary).",
                "allowed_decisions": ["approve", "edit", "reject"],
                "ttl_seconds": None,
                "always_ask": False,
                "proposal_schema": NoteEditProposal.model_json_schema(),
                "edit_schema": NoteEditRevision.model_json_schema(),
            },
        ]
    }


async def test_the_published_edit_schema_is_the_one_decisions_are_checked_against(
    client: httpx.AsyncClient,
) -> None:
    kinds = (await client.get("/v1/consent-kinds")).json()["consent_kinds"]
    note_edit = next(k for k in kinds if k["kind"] == "note_edit")

    assert note_edit["edit_schema"]["additionalProperties"] is False
    assert set(note_edit["edit_schema"]["properties"]) == {"content", "title"}
    assert note_edit["proposal_schema"]["required"] == [
        "project_id",
        "note_id",
        "title",
        "base_version",
        "base_content",
        "proposed_content",
        "diff",
    ]


async def test_graphs_added_by_configuration_publish_their_kinds_too(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=PARALLEL) as client:
        kinds = (await client.get("/v1/consent-kinds")).json()["consent_kinds"]

    assert [(k["graph"], k["kind"]) for k in kinds] == [
        ("parallel", "notify_team"),
        ("parallel", "publish_post"),
        ("tutor", "note_create"),
        ("tutor", "note_delete"),
        ("tutor", "note_edit"),
    ]
    notify, publish = kinds[0], kinds[1]
    assert (notify["allowed_decisions"], notify["ttl_seconds"], notify["edit_schema"]) == (
        ["approve", "reject"],
        3600,
        None,
    )
    assert notify["proposal_schema"] == NotifyTeamProposal.model_json_schema()
    assert publish["proposal_schema"] == PublishPostProposal.model_json_schema()
    assert publish["edit_schema"]["required"] == ["text"]


async def test_the_list_needs_an_api_key_when_keys_are_configured(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys="ka=acme:alice") as client:
        anonymous = await client.get("/v1/consent-kinds")
        keyed = await client.get("/v1/consent-kinds", headers={"authorization": "Bearer ka"})

    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"
    assert keyed.status_code == 200
    assert len(keyed.json()["consent_kinds"]) == 3


async def test_a_kind_the_graph_did_not_declare_fails_the_run_naming_it(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(graphs=HIDDEN) as client:
        events = await chat(client, {"graph": "hidden", "message": "Refund my order"})
        thread = (await client.get(f"/v1/threads/{events[0].thread_id}")).json()

    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.retryable) == ("consent_kind_not_declared", False)
    assert error.message == (
        "The graph 'hidden' asked for a consent of kind 'refund', which it does not declare: "
        "add it to its GraphSpec's consent_kinds ({'refund': <its ConsentKind>})."
    )
    assert kinds(events)[-2:] == ["error", "final"]
    assert events[-1].reason == "failed"
    assert thread["pending_consents"] == []
