"""The baseline ``consentry bench`` compares Consentry with: the same tutor graph and offline model
behind a naive FastAPI + LangGraph + ``AsyncSqliteSaver`` endpoint, with none of Consentry's
guarantees. No event log, approval records, audit, leases, idempotency or budgets; the run lives
in the request; the graph streams with LangGraph's default durability; events are sent as they
come; notes are kept in memory.

It speaks just enough of Consentry's chat protocol for the load generator (``POST /v1/chat`` with
``message`` or ``thread_id`` + ``resume``; ``consent``, ``note`` and ``final`` events), so both
servers are driven by the same code:

    python -m consentry.bench.baseline --port 8100 --database /tmp/baseline.db
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal
from uuid import uuid4

import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from langchain_core.messages import AIMessageChunk, HumanMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from pydantic import BaseModel

from consentry_graphs.consent import ConsentDecision, InMemoryEffectLedger
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.services import GraphContext
from consentry_graphs.tutor.graph import build_tutor_graph
from consentry_graphs.tutor.memory_notes import InMemoryNotesStore

__all__ = ["create_baseline_app", "main"]

PROJECT = "bench"


class _Resume(BaseModel):
    approval_id: str
    decision: Literal["approve", "reject"]


class _Chat(BaseModel):
    thread_id: str | None = None
    message: str | None = None
    resume: _Resume | None = None


def create_baseline_app(database: Path) -> FastAPI:
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncSqliteSaver.from_conn_string(str(database)) as saver:
            state["graph"] = build_tutor_graph(OfflineChatModel(), saver)
            state["context"] = GraphContext(
                notes=InMemoryNotesStore(), effects=InMemoryEffectLedger(), user="bench"
            )
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat")
    async def chat(body: _Chat) -> StreamingResponse:
        thread_id = body.thread_id or str(uuid4())
        graph_input: Any
        if body.resume is not None:
            decision = ConsentDecision(
                approval_id=body.resume.approval_id,
                decision=body.resume.decision,
                decided_by="bench",
            )
            graph_input = Command(resume={decision.approval_id: decision.model_dump(mode="json")})
        else:
            message = HumanMessage(body.message or "")
            graph_input = {"messages": [message], "project_id": PROJECT, "note_id": None}
        return StreamingResponse(
            _events(state, thread_id, graph_input), media_type="text/event-stream"
        )

    return app


async def _events(state: dict[str, Any], thread_id: str, graph_input: Any) -> AsyncIterator[str]:
    reason = "completed"
    async for mode, chunk in state["graph"].astream(
        graph_input,
        {"configurable": {"thread_id": thread_id}},
        context=state["context"],
        stream_mode=["messages", "updates", "custom"],
    ):
        if mode == "messages" and isinstance(chunk[0], AIMessageChunk) and chunk[0].text:
            yield _frame({"type": "token", "delta": chunk[0].text})
        elif mode == "custom" and chunk.get("event") == "note":
            yield _frame({"type": "note", "note_id": chunk["note_id"]})
        elif mode == "updates" and "__interrupt__" in chunk:
            reason = "interrupted"
            for interrupt in chunk["__interrupt__"]:
                consent = {"type": "consent", "thread_id": thread_id, "approval_id": interrupt.id}
                yield _frame(consent)
    yield _frame({"type": "final", "thread_id": thread_id, "reason": reason})


def _frame(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event)}\n\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database", type=Path, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(
        create_baseline_app(args.database),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
