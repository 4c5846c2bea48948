"""Display names: ``CONSENTRY_API_KEYS`` entries ``token=tenant:user:Display Name``.

``GET /v1/me`` says who the caller is; a decision keeps the decider's name as it was when they
decided (``decided.decided_by_name``, beside the stable ``decided_by``); a note's versions say
which decision wrote them and who made it. The identity stays ``tenant/user``: two keys of one
user with two names are one owner."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent
from tests.sse import ASK_FOR_SUMMARY, after_a_question, chat, kinds

KEYS = "k1=acme:ada:Ada Lovelace, k2=acme:ada:Countess Lovelace, k3=acme:bob"
ADA = {"Authorization": "Bearer k1"}
ADA_RENAMED = {"Authorization": "Bearer k2"}
BOB = {"Authorization": "Bearer k3"}


async def test_me_is_the_callers_principal_with_the_display_name_of_its_key(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS) as client:
        ada = await client.get("/v1/me", headers=ADA)
        renamed = await client.get("/v1/me", headers=ADA_RENAMED)
        bob = await client.get("/v1/me", headers=BOB)
        nobody = await client.get("/v1/me")

    assert ada.status_code == 200, ada.text
    assert ada.json() == {
        "principal": "acme/ada",
        "tenant": "acme",
        "user": "ada",
        "name": "Ada Lovelace",
    }
    assert renamed.json()["name"] == "Countess Lovelace"
    assert bob.json() == {"principal": "acme/bob", "tenant": "acme", "user": "bob", "name": None}
    assert (nobody.status_code, nobody.json()["error"]["code"]) == (401, "unauthorized")


async def test_me_in_keyless_mode_is_the_local_user_without_a_name(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/me")

    assert response.json() == {
        "principal": "local/local",
        "tenant": "local",
        "user": "local",
        "name": None,
    }


async def _note(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    project = (await client.get("/v1/projects", headers=headers)).json()["projects"][0]
    created = await client.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "RAG", "content": "RAG looks documents up first."},
        headers=headers,
    )
    assert created.status_code == 201, created.text
    note_id: str = created.json()["note_id"]
    return note_id


_QUESTIONS = itertools.count(1)


async def _ask(
    client: httpx.AsyncClient, note_id: str, headers: dict[str, str], **thread: Any
) -> ConsentEvent:
    """A new thread about the note: a question of its own (a summary of the same discussion as
    an earlier one would add nothing to the note), then a consent to add its summary."""
    body = {"message": ASK_FOR_SUMMARY, "note_id": note_id, **thread}
    question = f"What is retrieval, take {next(_QUESTIONS)}?"
    events = await after_a_question(client, body, headers, question=question)
    consents = [e for e in events if isinstance(e, ConsentEvent)]
    assert len(consents) == 1, [(e.type, getattr(e, "content", "")) for e in events]
    return consents[0]


def _decided(approval: dict[str, Any]) -> tuple[str, str, str | None]:
    decided = approval["decided"]
    return decided["decision"], decided["decided_by"], decided["decided_by_name"]


def _versions(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (v["version"], v["author"], v["decision"], v["decided_by"], v["decided_by_name"])
        for v in body["versions"]
    ]


async def test_a_decision_keeps_the_deciders_name_at_decision_time_and_versions_show_it(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS) as client:
        note_id = await _note(client, ADA)
        first = await _ask(client, note_id, ADA)
        approved = await chat(
            client,
            {
                "thread_id": first.thread_id,
                "resume": {"approval_id": first.approval_id, "decision": "approve"},
            },
            ADA,
        )
        assert kinds(approved)[-3:] == ["note", "message", "final"]
        second = await _ask(client, note_id, ADA_RENAMED)
        edited = await client.post(
            f"/v1/approvals/{second.approval_id}/decision",
            json={"decision": "edit", "edited": {"content": "RAG: retrieval, then an answer."}},
            headers=ADA_RENAMED,
        )
        assert edited.status_code == 202, edited.text
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        again = await client.post(
            f"/v1/approvals/{first.approval_id}/decision", json={"decision": "reject"}, headers=ADA
        )
        first_approval = (
            await client.get(f"/v1/approvals/{first.approval_id}", headers=ADA)
        ).json()
        second_approval = (
            await client.get(f"/v1/approvals/{second.approval_id}", headers=ADA)
        ).json()
        versions = (await client.get(f"/v1/notes/{note_id}/versions", headers=ADA)).json()

    assert _decided(first_approval) == ("approve", "acme/ada", "Ada Lovelace")
    assert _decided(second_approval) == ("edit", "acme/ada", "Countess Lovelace")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_decided")
    assert again.json()["error"]["details"]["decided"]["decided_by_name"] == "Ada Lovelace"
    assert _versions(versions) == [
        (1, "user", None, None, None),
        (2, "assistant", "approve", "acme/ada", "Ada Lovelace"),
        (3, "assistant", "edit", "acme/ada", "Countess Lovelace"),
    ]
    assert [v["approval_id"] for v in versions["versions"]] == [
        None,
        first.approval_id,
        second.approval_id,
    ]


async def test_a_policy_decision_and_a_key_without_a_name_have_no_name(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys=KEYS) as client:
        note_id = await _note(client, BOB)
        by_policy = await _ask(client, note_id, BOB, consent_policy="auto_approve")
        by_bob = await _ask(client, note_id, BOB)
        await chat(
            client,
            {
                "thread_id": by_bob.thread_id,
                "resume": {"approval_id": by_bob.approval_id, "decision": "approve"},
            },
            BOB,
        )
        policy_approval = (
            await client.get(f"/v1/approvals/{by_policy.approval_id}", headers=BOB)
        ).json()
        versions = (await client.get(f"/v1/notes/{note_id}/versions", headers=BOB)).json()

    assert _decided(policy_approval) == ("approve", "policy", None)
    assert _versions(versions) == [
        (1, "user", None, None, None),
        (2, "assistant", "approve", "policy", None),
        (3, "assistant", "approve", "acme/bob", None),
    ]
