"""The baseline ``consentry bench`` compares Consentry with: the same graphs (the tutor with the
offline model, the five-node ``consent_flow``, and ``memory_flow``, the same with Store calls)
behind a naive FastAPI + LangGraph endpoint on LangGraph's own checkpointer, ``AsyncSqliteSaver``
or ``AsyncPostgresSaver``, and store, ``AsyncSqliteStore`` or ``AsyncPostgresStore`` (no index:
no embeddings), with none of Consentry's guarantees. No event log, approval records, audit,
leases, idempotency or budgets; the run lives in the request; the graph streams with LangGraph's
default durability; events are sent as they come; notes, effects and each thread's graph are kept
in memory.

Each saver and store is opened the simplest way LangGraph documents, ``from_conn_string``: one
connection each per process (``setup()`` creates their tables on start). On PostgreSQL both are in
the given database; on SQLite the store has a file of its own beside the saver's
(``<name>.store.db``, in WAL mode as the saver's, not counted in the bench's database bytes: it
holds one item a person).
In the saver's file, concurrent runs failed with ``database is locked`` (2 conversations of 200
at C=10): ``AsyncSqliteStore`` runs a batch (LangGraph batches the calls of concurrent runs, here
one's search with another's put) in a deferred ``BEGIN``, and its write after a read whose
snapshot the saver's connection has since moved past fails at once (``SQLITE_BUSY_SNAPSHOT``:
no busy wait helps). Only ``memory_flow`` is compiled with the store.

It speaks just enough of Consentry's chat protocol for the load generator (``POST /v1/chat`` with
``graph`` and ``message``, or ``thread_id`` + ``resume``; ``consent``, ``note``, ``message`` and
``final`` events), so both servers are driven by the same code:

    python -m consentry_tools.bench.baseline --port 8100 --database /tmp/baseline.db
    python -m consentry_tools.bench.baseline --port 8100 --database postgresql://u@host/empty_db
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast
from uuid import uuid4

import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.postgres.aio import AsyncPostgresStore
from langgraph.store.sqlite.aio import AsyncSqliteStore
from langgraph.types import Command
from pydantic import BaseModel

from consentry_graphs.consent import ConsentDecision, InMemoryEffectLedger
from consentry_graphs.examples.consent_flow import build_consent_flow_graph
from consentry_graphs.examples.memory_flow import build_memory_flow_graph
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.services import GraphServices, serving
from consentry_graphs.tutor.graph import build_tutor_graph
from consentry_graphs.tutor.memory_notes import InMemoryNotesStore
from consentry_tools.bench.databases import libpq_url

__all__ = ["create_baseline_app", "main"]

PROJECT = "bench"


class _Resume(BaseModel):
    approval_id: str
    decision: Literal["approve", "reject"]


class _Chat(BaseModel):
    graph: Literal["tutor", "consent_flow", "memory_flow"] = "tutor"
    thread_id: str | None = None
    message: str | None = None
    resume: _Resume | None = None


def create_baseline_app(database: Path | str) -> FastAPI:
    """The naive server on ``database``: a SQLite file, or a ``postgresql://`` URL of an empty
    database."""
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with _open_database(database) as (saver, store):
            state["graphs"] = {
                "tutor": build_tutor_graph(OfflineChatModel(), saver),
                "consent_flow": build_consent_flow_graph(None, saver),
                "memory_flow": build_memory_flow_graph(None, saver, store=store),
            }
            state["thread_graphs"] = {}
            state["services"] = GraphServices(
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
        # A thread keeps the graph that started it (a resume names only the thread), in memory.
        graph = state["graphs"][state["thread_graphs"].setdefault(thread_id, body.graph)]
        return StreamingResponse(
            _events(graph, state["services"], thread_id, graph_input),
            media_type="text/event-stream",
        )

    return app


@asynccontextmanager
async def _open_database(
    database: Path | str,
) -> AsyncIterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    """The saver and the store on ``database``, their tables made."""
    url = str(database)
    if url.split("://", 1)[0] in ("postgresql", "postgres", "postgresql+psycopg"):
        async with (
            AsyncPostgresSaver.from_conn_string(libpq_url(url)) as saver,
            AsyncPostgresStore.from_conn_string(libpq_url(url)) as store,
        ):
            await saver.setup()
            await store.setup()
            yield saver, store
    else:
        store_path = Path(url).with_suffix(".store.db")
        async with (
            AsyncSqliteSaver.from_conn_string(url) as sqlite_saver,
            AsyncSqliteStore.from_conn_string(str(store_path)) as sqlite_store,
        ):
            await sqlite_saver.setup()
            await sqlite_store.setup()
            # As the saver's setup() does for its file: without WAL a put's commit waits for a
            # rollback journal's fsyncs (16 ms a put here, against 0.3 to 4 ms with WAL).
            await sqlite_store.conn.execute("PRAGMA journal_mode=WAL")
            yield sqlite_saver, sqlite_store


async def _events(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    services: GraphServices,
    thread_id: str,
    graph_input: Any,
) -> AsyncIterator[str]:
    reason = "completed"
    # The response's body is read in one task: the services stay set across its yields.
    with serving(services):
        async for item in graph.astream(
            graph_input,
            {"configurable": {"thread_id": thread_id}},
            stream_mode=["messages", "updates", "custom"],
        ):
            mode, chunk = cast(tuple[str, Any], item)
            if mode == "messages" and isinstance(chunk[0], AIMessageChunk):
                if chunk[0].text:
                    yield _frame({"type": "token", "delta": chunk[0].text})
            elif mode == "messages" and isinstance(chunk[0], AIMessage) and chunk[0].text:
                # A node's whole message (not streamed from a model): consent_flow's answer.
                said = {"type": "message", "message_id": chunk[0].id, "content": chunk[0].text}
                yield _frame(said)
            elif mode == "custom" and chunk.get("event") == "note":
                yield _frame({"type": "note", "note_id": chunk["note_id"]})
            elif mode == "updates" and "__interrupt__" in chunk:
                reason = "interrupted"
                for interrupt in chunk["__interrupt__"]:
                    consent = {
                        "type": "consent",
                        "thread_id": thread_id,
                        "approval_id": interrupt.id,
                    }
                    yield _frame(consent)
    yield _frame({"type": "final", "thread_id": thread_id, "reason": reason})


def _frame(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event)}\n\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--database", required=True, help="a SQLite file, or a postgresql:// URL (empty database)"
    )
    args = parser.parse_args(argv)
    uvicorn.run(
        create_baseline_app(args.database),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
