"""The tutor remembers what a person asks it to, across their threads, through the Store: the
words kept under the person's namespace, said back by every later answer (the offline model),
and nobody else's answers (another user of the tenant)."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import MessageEvent
from tests.sse import chat, kinds

KEYS = "ka=acme:alice,kb=acme:bob.smith"
ALICE = {"x-api-key": "ka"}
BOB = {"x-api-key": "kb"}


async def _said(client: httpx.AsyncClient, text: str, headers: dict[str, str]) -> list[str]:
    events = await chat(client, {"message": text}, headers)
    assert kinds(events)[-1] == "final"
    return [event.content for event in events if isinstance(event, MessageEvent)]


async def test_a_preference_kept_in_one_thread_is_minded_in_the_next(open_live: Any) -> None:
    async with open_live(api_keys=KEYS) as (client, _):
        kept = await _said(client, "Remember that I prefer short answers.", ALICE)
        later = await _said(client, "What is retrieval?", ALICE)  # a new thread
        others = await _said(client, "What is retrieval?", BOB)
        bobs = await _said(client, "Remember that I am a nurse", BOB)
        bob_later = await _said(client, "What is retrieval?", BOB)
        stored = await client.post(
            "/store/items/search", json={"namespace_prefix": ["tutor"]}, headers=ALICE
        )

    assert kept == ["I'll remember: \u201cI prefer short answers\u201d."]
    assert later[-1].endswith("\n\n(You asked me to remember: I prefer short answers.)")
    assert "remember" not in others[-1]  # alice's memory is hers
    assert bobs == ["I'll remember: \u201cI am a nurse\u201d."]
    assert bob_later[-1].endswith("(You asked me to remember: I am a nurse.)")
    stored_items = {tuple(i["namespace"]): i["value"] for i in stored.json()["items"]}
    assert stored_items == {
        ("tutor", "memories", "acme/alice"): {"text": "I prefer short answers"},
        ("tutor", "memories", "acme/bob%2Esmith"): {"text": "I am a nurse"},
    }
