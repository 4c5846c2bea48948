"""The benchmark's load generator checks every conversation: against Consentry (both databases)
each one is a consent then a decision, approved in the configured share; against a server that
does not follow the protocol every conversation is an error, never a fast success."""

from __future__ import annotations

from typing import Any

import httpx

from consentry_tools.bench.baseline import create_baseline_app
from consentry_tools.bench.load import run_load
from consentry_tools.bench.run import Target, run_bench
from tests.live_server import serve_app
from tests.openai_stub import OpenAIStub


async def test_every_conversation_reaches_its_consent_and_its_final(open_live: Any) -> None:
    async with open_live() as (client, _):
        result = await run_load(
            str(client.base_url), concurrency=3, conversations=10, approve_ratio=0.3
        )
        assert result.errors == []
        assert (len(result.message_seconds), len(result.decision_seconds)) == (10, 10)
        assert all(seconds > 0 for seconds in result.message_seconds + result.decision_seconds)
        threads = (await client.get("/v1/threads")).json()["threads"]
        assert len(threads) == 10
        approvals = (await client.get("/v1/approvals", params={"status": "approved"})).json()
        rejections = (await client.get("/v1/approvals", params={"status": "rejected"})).json()
        assert (len(approvals["approvals"]), len(rejections["approvals"])) == (3, 7)


async def test_the_sdk_workload_is_the_tutors_conversation_through_the_sdk_face(
    open_live: Any,
) -> None:
    async with open_live() as (client, _):
        result = await run_load(
            str(client.base_url), concurrency=2, conversations=4, approve_ratio=0.5, workload="sdk"
        )
        assert result.errors == []
        assert (len(result.message_seconds), len(result.decision_seconds)) == (4, 4)
        decided = (await client.get("/v1/approvals")).json()["approvals"]
    assert sorted(a["status"] for a in decided) == ["approved"] * 2 + ["rejected"] * 2


async def test_a_running_server_is_measured_without_figures_only_a_local_one_has(
    open_live: Any,
) -> None:
    async with open_live() as (client, _):
        (row,) = await run_bench(
            [Target("server", str(client.base_url))],
            levels=[2],
            conversations=4,
            approve_ratio=0.5,
            progress=None,
        )
    assert (row.server, row.concurrency, row.conversations, row.errors) == ("server", 2, 4, 0)
    assert 0 < row.message_p50_ms <= row.message_p99_ms
    assert 0 < row.decision_p50_ms <= row.decision_p99_ms
    assert (row.cpu_ms_per_conversation, row.peak_rss_mb, row.cpu_vs_baseline) == (None, None, None)
    assert row.database_bytes_per_conversation is None


async def test_a_server_that_does_not_speak_the_protocol_makes_every_conversation_an_error(
    stub: OpenAIStub,
) -> None:
    result = await run_load(
        stub.base_url.removesuffix("/v1"), concurrency=2, conversations=4, approve_ratio=0.5
    )
    assert len(result.errors) == 4
    assert all("HTTP 404" in error for error in result.errors)
    assert result.message_seconds == []


async def test_the_baseline_serves_the_same_conversation_naively(tmp_path: Any) -> None:
    app = create_baseline_app(tmp_path / "baseline.db")
    async with serve_app(app) as base_url:
        result = await run_load(base_url, concurrency=2, conversations=6, approve_ratio=0.5)
        async with httpx.AsyncClient(base_url=base_url) as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert result.errors == []
    assert len(result.decision_seconds) == 6
