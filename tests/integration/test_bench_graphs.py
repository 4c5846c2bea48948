"""``consentry bench --graph consent_flow`` drives the same five-node consent graph on both
servers: Consentry maps its consent as the tutor's (approval records of the kit's kind), the naive
baseline serves it beside the tutor on its own checkpointer, on SQLite and on PostgreSQL
(``AsyncPostgresSaver``), and the load generator checks every conversation's outcome.
``--graph memory_flow`` is the same conversation with a Store search and a Store put: on
Consentry's Store, and on LangGraph's (``AsyncSqliteStore`` in a file beside the saver's,
``AsyncPostgresStore`` in the baseline's database), each holding the one decision every
conversation of the person rewrote."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph_sdk import get_client

from consentry_tools.bench.baseline import create_baseline_app
from consentry_tools.bench.load import CONSENT_FLOW_GRAPH, MEMORY_FLOW_GRAPH, run_load
from tests.live_server import serve_app
from tests.postgres import PostgresCluster

GRAPHS = dict([CONSENT_FLOW_GRAPH.split("=", 1)])
"""``CONSENTRY_GRAPHS`` of the bench's Consentry servers: ``consent_flow`` beside the tutor."""
MEMORY_GRAPHS = dict([MEMORY_FLOW_GRAPH.split("=", 1)])
REMEMBERED = ("Record a message of 9 words", "memory_flow", "decisions")
"""The key and namespace (the person's id after it) of a bench conversation's decision."""


async def test_consentry_serves_consent_flow_with_the_kits_consent_records(
    open_live: Any,
) -> None:
    async with open_live(graphs=GRAPHS) as (client, _):
        result = await run_load(
            str(client.base_url),
            concurrency=2,
            conversations=6,
            approve_ratio=0.5,
            graph="consent_flow",
        )
        assert result.errors == []
        assert (len(result.message_seconds), len(result.decision_seconds)) == (6, 6)
        approvals = (await client.get("/v1/approvals")).json()["approvals"]
        graphs = {t["graph"] for t in (await client.get("/v1/threads")).json()["threads"]}
    assert (
        sorted((a["kind"], a["status"]) for a in approvals)
        == [
            ("change", "approved"),
        ]
        * 3
        + [("change", "rejected")] * 3
    )
    assert graphs == {"consent_flow"}


async def test_the_sdk_workload_runs_consent_flow_through_the_sdk_face(open_live: Any) -> None:
    async with open_live(graphs=GRAPHS) as (client, _):
        result = await run_load(
            str(client.base_url),
            concurrency=2,
            conversations=4,
            approve_ratio=0.5,
            workload="sdk",
            graph="consent_flow",
        )
        assert result.errors == []
        decided = (await client.get("/v1/approvals")).json()["approvals"]
    assert sorted(a["status"] for a in decided) == ["approved"] * 2 + ["rejected"] * 2
    assert {a["kind"] for a in decided} == {"change"}


async def test_a_server_that_serves_only_the_tutor_makes_every_consent_flow_an_error(
    open_live: Any,
) -> None:
    async with open_live() as (client, _):
        result = await run_load(
            str(client.base_url),
            concurrency=1,
            conversations=2,
            approve_ratio=0.5,
            graph="consent_flow",
        )
    assert len(result.errors) == 2
    assert all("HTTP 422" in e and "unknown_graph" in e for e in result.errors), result.errors


async def test_the_sqlite_baseline_serves_consent_flow_and_the_tutor_side_by_side(
    tmp_path: Path,
) -> None:
    app = create_baseline_app(tmp_path / "baseline.db")
    async with serve_app(app) as base_url:
        flows = await run_load(
            base_url, concurrency=2, conversations=6, approve_ratio=0.5, graph="consent_flow"
        )
        tutor = await run_load(base_url, concurrency=2, conversations=4, approve_ratio=0.5)
    assert (flows.errors, tutor.errors) == ([], [])
    assert (len(flows.decision_seconds), len(tutor.decision_seconds)) == (6, 4)


async def test_the_postgres_baseline_keeps_its_checkpoints_in_its_own_database(
    postgres: PostgresCluster,
) -> None:
    database = postgres.new_database()
    app = create_baseline_app(database)
    async with serve_app(app) as base_url:
        flows = await run_load(
            base_url, concurrency=3, conversations=6, approve_ratio=0.5, graph="consent_flow"
        )
        tutor = await run_load(base_url, concurrency=2, conversations=2, approve_ratio=0.5)
    assert (flows.errors, tutor.errors) == ([], [])
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
    assert row == (8,)  # LangGraph's own table: every conversation's thread, on PostgreSQL


async def test_consentry_serves_memory_flow_with_its_store(open_live: Any) -> None:
    async with open_live(graphs=MEMORY_GRAPHS, store_index_fields="none") as (client, _):
        result = await run_load(
            str(client.base_url),
            concurrency=2,
            conversations=4,
            approve_ratio=0.5,
            graph="memory_flow",
        )
        approvals = (await client.get("/v1/approvals")).json()["approvals"]
        sdk = get_client(url=str(client.base_url))
        items = await sdk.store.search_items(["memory_flow"], limit=10)
        await sdk.aclose()
    assert result.errors == []
    assert sorted(a["status"] for a in approvals) == ["approved"] * 2 + ["rejected"] * 2
    (item,) = items["items"]
    key, *namespace = REMEMBERED
    assert (item["namespace"], item["key"]) == ([*namespace, "local/local"], key)
    assert item["value"]["decision"] in ("approve", "reject")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_the_baseline_serves_memory_flow_on_langgraphs_store_in_its_database(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = tmp_path / "baseline.db"
    database = path if kind == "sqlite" else request.getfixturevalue("postgres").new_database()
    app = create_baseline_app(database)
    async with serve_app(app) as base_url:
        result = await run_load(
            base_url, concurrency=2, conversations=4, approve_ratio=0.5, graph="memory_flow"
        )
    assert result.errors == []
    query = "SELECT prefix, key FROM store"  # AsyncSqliteStore's or AsyncPostgresStore's table
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "baseline.store.db") as conn:  # beside the saver's
            rows = conn.execute(query).fetchall()
    else:
        with psycopg.connect(str(database)) as conn:
            rows = conn.execute(query).fetchall()
    key, *namespace = REMEMBERED
    assert rows == [(".".join([*namespace, "bench"]), key)]
