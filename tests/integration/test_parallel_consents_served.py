"""The parallel-consents example served by the app (CONSENTRY_GRAPHS): one run asks two consents
at once; each is decided by its own approval id, in either order, and each effect runs once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from consentry.schemas.events import ConsentEvent, FinalEvent
from consentry_graphs.examples import parallel_consents
from consentry_graphs.examples.parallel_consents import Outbox
from tests.sse import chat, kinds

SERVED = "parallel=consentry_graphs.examples.parallel_consents:graph_spec"
POST = "We shipped consent that holds."


@pytest.fixture
def outbox(monkeypatch: pytest.MonkeyPatch) -> Outbox:
    """The outbox the served graph is built with (it reads the module's OUTBOX when built)."""
    fresh = Outbox()
    monkeypatch.setattr(parallel_consents, "OUTBOX", fresh)
    return fresh


@pytest.mark.parametrize("first", ["publish_post", "notify_team"])
async def test_two_consents_at_once_are_decided_by_id_in_either_order(
    open_client: Callable[..., Any], outbox: Outbox, first: str
) -> None:
    async with open_client(graphs=SERVED) as client:
        asked = await chat(client, {"graph": "parallel", "message": POST})

        assert kinds(asked) == ["run_started", "step", "step", "consent", "consent", "final"]
        consents = {e.kind: e for e in asked if isinstance(e, ConsentEvent)}
        assert set(consents) == {"publish_post", "notify_team"}
        assert consents["publish_post"].approval_id != consents["notify_team"].approval_id
        (second,) = set(consents) - {first}
        thread_id = asked[0].thread_id

        one = await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consents[first].approval_id, "decision": "approve"},
            },
        )

        assert kinds(one) == ["run_started", "step", "step", "final"]
        final = one[-1]
        assert isinstance(final, FinalEvent)
        assert final.reason == "interrupted"
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()
        assert [c["approval_id"] for c in thread["pending_consents"]] == [
            consents[second].approval_id
        ]
        assert (outbox.posts, outbox.notifications) == ([], [])

        both = await chat(
            client,
            {
                "thread_id": thread_id,
                "resume": {"approval_id": consents[second].approval_id, "decision": "approve"},
            },
        )

    assert kinds(both) == [
        "run_started",
        "step",
        "step",
        "step",
        "step",
        "message",
        "message",
        "final",
    ]
    assert {e.content for e in both if e.type == "message"} == {  # type: ignore[union-attr]
        "Published post-1 on blog.",
        "Told the editors.",
    }
    assert both[-1].reason == "completed"  # type: ignore[union-attr]
    assert [p.text for p in outbox.posts] == [POST]
    assert [n.message for n in outbox.notifications] == [f"New post: {POST}"]
