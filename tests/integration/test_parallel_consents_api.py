"""Two consents at once, from parallel branches of a graph added with CONSENTRY_GRAPHS: decided
by id, in either order, or together in one request; each effect happens once."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent, MessageEvent
from consentry_graphs.examples.parallel_consents import OUTBOX
from tests.sse import chat, kinds

GRAPHS = "parallel=consentry_graphs.examples.parallel_consents:graph_spec"


async def _ask(client: httpx.AsyncClient, text: str) -> dict[str, ConsentEvent]:
    events = await chat(client, {"graph": "parallel", "message": text})
    consents = [e for e in events if isinstance(e, ConsentEvent)]
    assert kinds(events)[-3:] == ["consent", "consent", "final"]
    assert events[-1].reason == "interrupted"  # type: ignore[union-attr]
    assert len({c.approval_id for c in consents}) == 2
    return {c.kind: c for c in consents}


def _resume(consent: ConsentEvent, decision: str, **extra: Any) -> dict[str, Any]:
    return {"approval_id": consent.approval_id, "decision": decision, **extra}


async def test_each_consent_is_decided_by_id_in_either_order(open_client: Any) -> None:
    posts, notices = len(OUTBOX.posts), len(OUTBOX.notifications)
    async with open_client(graphs=GRAPHS) as client:
        asked = await _ask(client, "Consentry 1.0 is out")
        thread_id = asked["notify_team"].thread_id

        first = await chat(
            client, {"thread_id": thread_id, "resume": _resume(asked["notify_team"], "approve")}
        )
        assert "consent" not in kinds(first)  # the other one is still pending, not asked again
        assert first[-1].reason == "interrupted"  # type: ignore[union-attr]
        detail = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert [c["approval_id"] for c in detail["pending_consents"]] == [
            asked["publish_post"].approval_id
        ]

        second = await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": _resume(asked["publish_post"], "edit", edited={"text": "1.0 is out!"}),
            },
        )

        assert second[-1].reason == "completed"  # type: ignore[union-attr]
        said = [e.content for e in (*first, *second) if isinstance(e, MessageEvent)]
        assert "Told the editors." in said
        assert any(text.startswith("Published post-") for text in said)
    assert [p.text for p in OUTBOX.posts[posts:]] == ["1.0 is out!"]
    assert len(OUTBOX.notifications) == notices + 1


async def test_both_consents_are_decided_together_in_one_request(open_client: Any) -> None:
    posts, notices = len(OUTBOX.posts), len(OUTBOX.notifications)
    async with open_client(graphs=GRAPHS) as client:
        asked = await _ask(client, "Consentry 1.1 is out")
        thread_id = asked["publish_post"].thread_id

        done = await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": [
                    _resume(asked["publish_post"], "approve"),
                    _resume(asked["notify_team"], "reject"),
                ],
            },
        )

        assert done[-1].reason == "completed"  # type: ignore[union-attr]
        for kind, status in (("publish_post", "approved"), ("notify_team", "rejected")):
            approval = (await client.get(f"/v1/approvals/{asked[kind].approval_id}")).json()
            assert approval["status"] == status
        again = await client.post(
            "/v1/chat",
            json={"thread_id": thread_id, "resume": _resume(asked["publish_post"], "approve")},
        )
        assert again.json()["error"]["code"] == "already_decided"
    assert [p.text for p in OUTBOX.posts[posts:]] == ["Consentry 1.1 is out"]
    assert len(OUTBOX.notifications) == notices


async def test_a_kind_that_takes_no_edit_refuses_one(open_client: Any) -> None:
    async with open_client(graphs=GRAPHS) as client:
        asked = await _ask(client, "Consentry 1.2 is out")
        response = await client.post(
            "/v1/chat",
            json={
                "thread_id": asked["notify_team"].thread_id,
                "resume": _resume(asked["notify_team"], "edit", edited={"message": "hi"}),
            },
        )
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "decision_not_allowed"
