"""The approvals inbox: a reviewer lists, reads and decides consents without a chat stream."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent
from tests.sse import ASK_FOR_SUMMARY, after_a_question

ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}
KEYS = "ka=acme:alice,kb=acme:bob"


async def _ask(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> ConsentEvent:
    """A new thread: a question, then the tutor asks to save a summary as a new note."""
    events = await after_a_question(client, {"message": ASK_FOR_SUMMARY}, headers)
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def test_pending_consents_are_listed_newest_first_page_by_page(open_live: Any) -> None:
    async with open_live() as (client, _):
        asked = [await _ask(client) for _ in range(5)]

        first = (await client.get("/v1/approvals", params={"status": "pending", "limit": 2})).json()
        second = (
            await client.get(
                "/v1/approvals",
                params={"status": "pending", "limit": 2, "cursor": first["next_cursor"]},
            )
        ).json()
        third = (
            await client.get(
                "/v1/approvals",
                params={"status": "pending", "limit": 2, "cursor": second["next_cursor"]},
            )
        ).json()

        listed = [a["approval_id"] for page in (first, second, third) for a in page["approvals"]]
        assert listed == [c.approval_id for c in reversed(asked)]
        assert third["next_cursor"] is None
        one = first["approvals"][0]
        assert one["status"] == "pending"
        assert one["decided"] is None
        assert one["proposal"] == asked[-1].proposal
        assert one["proposal_hash"].startswith("sha256:")
        assert one["allowed_decisions"] == ["approve", "edit", "reject"]


async def test_a_decision_from_the_inbox_resumes_the_graph_in_the_background(
    open_live: Any,
) -> None:
    async with open_live() as (client, services):
        consent = await _ask(client)

        accepted = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision",
            json={"decision": "approve", "comment": "looks right"},
        )
        assert accepted.status_code == 202
        body = accepted.json()
        assert (body["approval_id"], body["thread_id"], body["status"]) == (
            consent.approval_id,
            consent.thread_id,
            "approved",
        )
        await services.executor.wait_for_runs()

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "approved"
        assert approval["decided"]["decided_by"] == "local/local"
        assert approval["decided"]["comment"] == "looks right"
        thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
        assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
        audit = (await client.get(f"/v1/threads/{consent.thread_id}/audit")).json()["records"]
        run = [r for r in audit if r["run_id"] == body["run_id"]]
        assert [r["action"] for r in run] == [
            "consent_decided",
            "run_started",
            "effect_applied",
            "run_ended",
        ]
        assert (await client.get("/v1/approvals", params={"status": "pending"})).json()[
            "approvals"
        ] == []


async def test_bad_decisions_leave_the_consent_pending(open_live: Any) -> None:
    async with open_live() as (client, _):
        consent = await _ask(client)
        url = f"/v1/approvals/{consent.approval_id}/decision"

        cases = [
            ({"decision": "maybe"}, 422, "unknown_decision"),
            ({"decision": "edit"}, 422, "request_invalid"),
            ({"decision": "edit", "edited": {"content": "  "}}, 422, "invalid_edit"),
            ({"decision": "edit", "edited": {"colour": "red"}}, 422, "invalid_edit"),
        ]
        for body, status, code in cases:
            response = await client.post(url, json=body)
            assert (response.status_code, response.json()["error"]["code"]) == (status, code)
        invalid = (await client.post(url, json=cases[2][0])).json()["error"]
        assert invalid["details"]["errors"][0]["loc"] == ["content"]

        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "pending"
        unknown = await client.post("/v1/approvals/0123456789abcdef0123456789abcdef/decision",
                                    json={"decision": "approve"})  # fmt: skip
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "approval_not_found")
        bad_cursor = await client.get("/v1/approvals", params={"cursor": "not-a-cursor"})
        assert (bad_cursor.status_code, bad_cursor.json()["error"]["code"]) == (
            422,
            "invalid_cursor",
        )


async def test_another_users_consent_is_not_found_in_the_inbox(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        consent = await _ask(client, ALICE)

        assert (await client.get("/v1/approvals", headers=BOB)).json()["approvals"] == []
        for response in (
            await client.get(f"/v1/approvals/{consent.approval_id}", headers=BOB),
            await client.post(
                f"/v1/approvals/{consent.approval_id}/decision",
                json={"decision": "approve"},
                headers=BOB,
            ),
        ):
            assert (response.status_code, response.json()["error"]["code"]) == (
                404,
                "approval_not_found",
            )
        mine = (await client.get(f"/v1/approvals/{consent.approval_id}", headers=ALICE)).json()
        assert mine["status"] == "pending"
