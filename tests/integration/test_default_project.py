"""The default project is created on first use, once, however many first requests race (real
HTTP, real concurrency, both databases)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.statements_sent import every_statement_sent


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


async def test_new_threads_of_an_owner_find_the_default_project_without_reading_it_again(
    open_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default project is never deleted nor replaced, so a process reads it once per owner;
    each owner still gets their own."""
    async with open_client(api_keys="ka=acme:alice,kb=acme:bob") as client:
        alice = {"Authorization": "Bearer ka"}
        bob = {"Authorization": "Bearer kb"}
        first = await client.post("/v1/chat", json={"message": "What is RAG?"}, headers=alice)
        with every_statement_sent(monkeypatch) as statements:
            second = await client.post("/v1/chat", json={"message": "Why?"}, headers=alice)
            read_for_alice = [s for s in statements if "FROM projects" in s]
            statements.clear()
            bobs = await client.post("/v1/chat", json={"message": "What is RAG?"}, headers=bob)
            read_for_bob = [s for s in statements if "FROM projects" in s]
        threads = [
            (await client.get(f"/v1/threads/{r.headers['X-Thread-Id']}", headers=h)).json()
            for r, h in ((first, alice), (second, alice), (bobs, bob))
        ]
        alices_projects = (await client.get("/v1/projects", headers=alice)).json()["projects"]
        bobs_projects = (await client.get("/v1/projects", headers=bob)).json()["projects"]

    assert read_for_alice == []
    assert read_for_bob != []  # bob's own is looked up (and created), not alice's reused
    assert [t["project_id"] for t in threads] == [
        alices_projects[0]["project_id"],
        alices_projects[0]["project_id"],
        bobs_projects[0]["project_id"],
    ]
    assert alices_projects[0]["project_id"] != bobs_projects[0]["project_id"]
