"""Integers a search takes are integers a database binds: a metadata filter's beyond 32 bits
finds what it names on both databases (PostgreSQL cast it to ``INTEGER``: a 500), one beyond
JSON's exact integers (±(2^53 - 1)) is a 422 (beyond 64 bits SQLite could not bind it: a 500),
and a cron search's ``offset`` is bounded as every other search's. The Store compares an
integer beyond 64 bits itself. Found by ``test_openapi_fuzz.py`` (``POST /runs/crons/search``:
``OverflowError``)."""

from __future__ import annotations

from typing import Any

import pytest

BIG = 2**40
"""Beyond PostgreSQL's ``INTEGER``, within 64 bits."""
HUGE = 2**64
"""Beyond 64 bits."""
UNSAFE = 2**53
"""Beyond the integers a JSON number holds exactly."""
SEARCHES = ["/threads/search", "/threads/count", "/assistants/search", "/runs/crons/search"]


def _refused(answer: Any, field: str) -> None:
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "request_invalid"
    assert field in str(error["details"])


async def test_a_metadata_integer_beyond_32_bits_finds_what_it_names(open_client: Any) -> None:
    async with open_client() as client:
        made = (await client.post("/threads", json={"metadata": {"n": BIG}})).json()
        await client.post("/threads", json={"metadata": {"n": BIG + 1}})
        found = await client.post("/threads/search", json={"metadata": {"n": BIG}})
        counted = await client.post("/threads/count", json={"metadata": {"n": BIG}})
        answers = [await client.post(path, json={"metadata": {"n": -BIG}}) for path in SEARCHES]

    assert [t["thread_id"] for t in found.json()] == [made["thread_id"]]
    assert counted.json() == 1
    assert [a.status_code for a in answers] == [200] * len(SEARCHES)
    assert [a.json() for a in answers] == [[], 0, [], []]


@pytest.mark.parametrize("path", SEARCHES)
async def test_a_metadata_integer_json_does_not_hold_exactly_is_refused(
    open_client: Any, path: str
) -> None:
    async with open_client() as client:
        answers = [
            await client.post(path, json={"metadata": {"n": n}})
            for n in (HUGE, -HUGE, UNSAFE, -UNSAFE, 1e19)
        ]
    for answer in answers:
        _refused(answer, "metadata")


async def test_a_cron_search_offset_is_bounded_as_every_searchs(open_client: Any) -> None:
    async with open_client() as client:
        huge = await client.post("/runs/crons/search", json={"offset": 2**63})
        largest = await client.post("/runs/crons/search", json={"offset": 1_000_000})
    _refused(huge, "offset")
    assert (largest.status_code, largest.json()) == (200, [])


async def test_the_store_compares_an_integer_beyond_64_bits_itself(open_client: Any) -> None:
    async with open_client() as client:
        for key, n in (("huge", HUGE), ("big", BIG)):
            put = {"namespace": ["counts"], "key": key, "value": {"n": n}}
            assert (await client.put("/store/items", json=put)).status_code == 204
        found = {
            n: await client.post(
                "/store/items/search", json={"namespace_prefix": ["counts"], "filter": {"n": n}}
            )
            for n in (HUGE, BIG)
        }
    assert [item["key"] for item in found[HUGE].json()["items"]] == ["huge"]
    assert [item["key"] for item in found[BIG].json()["items"]] == ["big"]
