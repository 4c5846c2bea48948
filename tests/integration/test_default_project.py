"""The default project is created on first use, once, however many first requests race (real
HTTP, real concurrency, both databases)."""

from __future__ import annotations

import asyncio
from typing import Any


async def test_racing_first_requests_of_a_new_user_create_one_default_project(
    open_live: Any,
) -> None:
    async with open_live() as (client, _):
        listed = await asyncio.gather(*(client.get("/v1/projects") for _ in range(12)))
        chats = await asyncio.gather(
            *(client.post("/v1/chat", json={"message": "What is RAG?"}) for _ in range(4))
        )
        projects = (await client.get("/v1/projects")).json()["projects"]

    assert [r.status_code for r in listed] == [200] * 12
    assert [r.status_code for r in chats] == [200] * 4
    assert len(projects) == 1
    assert projects[0]["is_default"] is True
    ids = {p["project_id"] for r in listed for p in r.json()["projects"]}
    assert ids == {projects[0]["project_id"]}
