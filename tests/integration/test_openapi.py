"""OpenAPI at /docs describes every route and the SSE event union."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """What this file tests does not depend on the database: SQLite only (the suite's time)."""
    return f"sqlite:///{tmp_path / 'consentry.db'}"


async def test_openapi_describes_every_route_and_the_event_union(
    client: httpx.AsyncClient,
) -> None:
    spec = (await client.get("/openapi.json")).json()

    routes = {(path, method) for path, item in spec["paths"].items() for method in item}
    assert routes == {
        ("/v1/chat", "post"),
        ("/v1/threads", "get"),
        ("/v1/threads/{thread_id}", "get"),
        ("/v1/threads/{thread_id}/messages", "get"),
        ("/v1/threads/{thread_id}/tool-calls", "get"),
        ("/v1/projects", "get"),
        ("/v1/projects", "post"),
        ("/v1/projects/{project_id}/notes", "get"),
        ("/v1/projects/{project_id}/notes", "post"),
        ("/v1/projects/{project_id}/search", "get"),
        ("/v1/notes/{note_id}", "get"),
        ("/v1/notes/{note_id}", "put"),
        ("/v1/notes/{note_id}", "delete"),
        ("/v1/notes/{note_id}/versions", "get"),
        ("/v1/consent-kinds", "get"),
        ("/v1/graphs", "get"),
        ("/v1/me", "get"),
        ("/v1/approvals", "get"),
        ("/v1/approvals/{approval_id}", "get"),
        ("/v1/approvals/{approval_id}/decision", "post"),
        ("/v1/approvals/stream", "get"),
        ("/v1/threads/{thread_id}/audit", "get"),
        ("/v1/threads/{thread_id}/cancel", "post"),
        ("/v1/threads/{thread_id}/retry", "post"),
        ("/v1/threads/{thread_id}/stream", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
        # The LangGraph SDK's face (docs/langgraph-sdk.md).
        ("/info", "get"),
        ("/ok", "get"),
        ("/assistants/search", "post"),
        ("/assistants/count", "post"),
        ("/assistants/{assistant_id}", "get"),
        ("/assistants/{assistant_id}/graph", "get"),
        ("/assistants/{assistant_id}/schemas", "get"),
        ("/assistants", "post"),
        ("/assistants/{assistant_id}", "patch"),
        ("/assistants/{assistant_id}", "delete"),
        ("/assistants/{assistant_id}/versions", "post"),
        ("/assistants/{assistant_id}/latest", "post"),
        ("/assistants/{assistant_id}/subgraphs", "get"),
        ("/assistants/{assistant_id}/subgraphs/{namespace}", "get"),
        ("/threads", "post"),
        ("/threads/search", "post"),
        ("/threads/count", "post"),
        ("/threads/prune", "post"),
        ("/store/items", "put"),
        ("/store/items", "get"),
        ("/store/items", "delete"),
        ("/store/items/search", "post"),
        ("/store/namespaces", "post"),
        ("/runs/crons", "post"),
        ("/threads/{thread_id}/runs/crons", "post"),
        ("/runs/crons/{cron_id}", "patch"),
        ("/runs/crons/{cron_id}", "delete"),
        ("/runs/crons/search", "post"),
        ("/runs/crons/count", "post"),
        ("/threads/{thread_id}/copy", "post"),
        ("/threads/{thread_id}", "get"),
        ("/threads/{thread_id}", "patch"),
        ("/threads/{thread_id}", "delete"),
        ("/threads/{thread_id}/state", "get"),
        ("/threads/{thread_id}/state", "post"),
        ("/threads/{thread_id}/state/{checkpoint_id}", "get"),
        ("/threads/{thread_id}/state/checkpoint", "post"),
        ("/threads/{thread_id}/history", "post"),
        ("/threads/{thread_id}/runs/stream", "post"),
        ("/runs/stream", "post"),
        ("/threads/{thread_id}/runs/{run_id}/stream", "get"),
        ("/threads/{thread_id}/runs/{run_id}/cancel", "post"),
        ("/threads/{thread_id}/runs", "post"),
        ("/threads/{thread_id}/runs", "get"),
        ("/runs", "post"),
        ("/threads/{thread_id}/runs/wait", "post"),
        ("/runs/wait", "post"),
        ("/runs/batch", "post"),
        ("/runs/cancel", "post"),
        ("/v1/agui/{graph}", "post"),
        ("/threads/{thread_id}/runs/{run_id}", "get"),
        ("/threads/{thread_id}/runs/{run_id}", "delete"),
        ("/threads/{thread_id}/runs/{run_id}/join", "get"),
    }
    # A key goes in `Authorization: Bearer` or, as the LangGraph SDK sends it, in `x-api-key`.
    schemes = spec["components"]["securitySchemes"]
    assert schemes["HTTPBearer"]["scheme"] == "bearer"
    assert {k: schemes["APIKeyHeader"][k] for k in ("type", "in", "name")} == {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
    }
    assert spec["paths"]["/threads"]["post"]["security"] == [
        {"HTTPBearer": []},
        {"APIKeyHeader": []},
    ]
    assert spec["paths"]["/v1/chat"]["post"]["security"] == [
        {"HTTPBearer": []},
        {"APIKeyHeader": []},
    ]
    assert spec["paths"]["/threads/{thread_id}"]["get"]["tags"] == ["langgraph-sdk"]
    schemas = spec["components"]["schemas"]
    event_refs = {ref["$ref"] for ref in schemas["Event"]["oneOf"]}
    assert "#/components/schemas/ConsentEvent" in event_refs
    assert "approval_id" in schemas["ConsentEvent"]["properties"]
    chat = spec["paths"]["/v1/chat"]["post"]
    assert chat["responses"]["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    retry = spec["paths"]["/v1/threads/{thread_id}/retry"]["post"]
    assert {"404", "409"} <= set(retry["responses"])
    streams = {
        path: spec["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"]
        for path, method in [
            ("/v1/chat", "post"),
            ("/v1/threads/{thread_id}/retry", "post"),
            ("/v1/threads/{thread_id}/stream", "get"),
        ]
    }
    for path, content in streams.items():
        # Each SSE frame: `id` (the seq), `event` (the type), `data` (the event as JSON).
        assert content["schema"] == {
            "type": "object",
            "required": ["id", "event", "data"],
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": "^[0-9]+$",
                    "description": "The event's `seq`.",
                },
                "event": {"type": "string", "description": "The event's `type`."},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/Event"},
                },
            },
        }, path
    # The approvals stream: `ready` once caught up, then an `approval` frame per change.
    feed = spec["paths"]["/v1/approvals/stream"]["get"]["responses"]["200"]["content"]
    frames = feed["text/event-stream"]["schema"]["oneOf"]
    assert [
        (f["properties"]["event"]["const"], f["properties"]["data"]["contentSchema"]["$ref"])
        for f in frames
    ] == [
        ("ready", "#/components/schemas/ApprovalsReady"),
        ("approval", "#/components/schemas/ApprovalChange"),
    ]
    docs = await client.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()
