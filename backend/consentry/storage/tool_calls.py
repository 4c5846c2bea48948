"""A thread's tool calls, apart from its transcript (which keeps only what the user and the
assistant said): one row per call a model asked for, completed by the tool's result.

Rows are written from the ``tool_call`` and ``tool_result`` events, in the transaction that stores
them (``runtime.runs.execute._run_store``), with the same time as the transcript entries written
there: so a call is read back after the messages said before it (``after_message_id``). A call
waits for its result as ``pending``, at most once per thread and call id (a unique partial index):
a call told again (its arguments edited before it ran) updates it, its result completes it, and a
result whose call was never told makes a row of its own. The result's content is what its event
carried (cut past ``runtime.runs``' ``TOOL_RESULT_CHARS``, the whole size in ``content_chars``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.db.dialect import INSERTS
from consentry.storage.tables import tool_calls, transcript

__all__ = [
    "ToolCallAsked",
    "ToolCallRecord",
    "ToolResultGiven",
    "list_tool_calls",
    "record_tool_events",
]

ToolCallStatus = Literal["pending", "success", "error"]


@dataclass(frozen=True, slots=True)
class ToolCallAsked:
    """A ``tool_call`` event to record."""

    tool_call_id: str
    name: str
    args: dict[str, Any]
    message_id: str


@dataclass(frozen=True, slots=True)
class ToolResultGiven:
    """A ``tool_result`` event to record."""

    tool_call_id: str
    name: str
    status: Literal["success", "error"]
    content: str
    content_chars: int


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One stored tool call with its result (the wire model, which documents each field, is
    :class:`consentry.schemas.threads.ToolCall`)."""

    tool_call_id: str
    run_id: str
    name: str
    args: dict[str, Any]
    message_id: str | None
    status: ToolCallStatus
    content: str | None
    content_chars: int | None
    created_at: datetime
    finished_at: datetime | None
    after_message_id: str | None

    @property
    def truncated(self) -> bool:
        return (
            self.content is not None
            and self.content_chars is not None
            and self.content_chars > len(self.content)
        )


_PENDING = sa.text("status = 'pending'")
_CONFLICT_TARGET: dict[str, Any] = {
    "index_elements": [tool_calls.c.thread_id, tool_calls.c.tool_call_id],
    "index_where": _PENDING,
}


def _pending_row(dialect_insert: Any) -> Any:
    return dialect_insert(tool_calls).values(
        thread_id=sa.bindparam("p_thread"),
        run_id=sa.bindparam("p_run"),
        tool_call_id=sa.bindparam("p_call"),
        name=sa.bindparam("p_name"),
        args=sa.bindparam("p_args"),
        message_id=sa.bindparam("p_message"),
        status="pending",
        created_at=sa.bindparam("p_now"),
    )


def _ask(dialect_insert: Any) -> Any:
    insert = _pending_row(dialect_insert)
    return insert.on_conflict_do_update(
        **_CONFLICT_TARGET,
        set_={
            "name": insert.excluded.name,
            "args": insert.excluded.args,
            "message_id": insert.excluded.message_id,
        },
    )


_ASK = {name: _ask(build) for name, build in INSERTS.items()}
"""A call: a pending row, or the pending row of the same call updated."""
_ANSWER_UNASKED = {
    name: _pending_row(build).on_conflict_do_nothing(**_CONFLICT_TARGET)
    for name, build in INSERTS.items()
}
"""Before a result: a pending row for it if its call was never told."""
_ANSWER = (
    tool_calls.update()
    .where(
        tool_calls.c.thread_id == sa.bindparam("p_thread"),
        tool_calls.c.tool_call_id == sa.bindparam("p_call"),
        _PENDING,
    )
    .values(
        status=sa.bindparam("p_status"),
        content=sa.bindparam("p_content"),
        content_chars=sa.bindparam("p_chars"),
        finished_at=sa.bindparam("p_now"),
    )
)

_SAID_BEFORE = (
    sa.select(transcript.c.message_id)
    .where(
        transcript.c.thread_id == tool_calls.c.thread_id,
        transcript.c.created_at <= tool_calls.c.created_at,
    )
    .order_by(transcript.c.id.desc())
    .limit(1)
    .correlate(tool_calls)
    .scalar_subquery()
)
_LIST = (
    sa.select(
        tool_calls.c.tool_call_id,
        tool_calls.c.run_id,
        tool_calls.c.name,
        tool_calls.c.args,
        tool_calls.c.message_id,
        tool_calls.c.status,
        tool_calls.c.content,
        tool_calls.c.content_chars,
        tool_calls.c.created_at,
        tool_calls.c.finished_at,
        _SAID_BEFORE.label("after_message_id"),
    )
    .where(tool_calls.c.thread_id == sa.bindparam("p_thread"))
    .order_by(tool_calls.c.id)
)


async def record_tool_events(
    conn: DbConnection,
    *,
    thread_id: str,
    run_id: str,
    told: Iterable[ToolCallAsked | ToolResultGiven],
    now: datetime,
) -> None:
    """Record a run's tool calls and results, in the order they were told (a statement or two
    each; on SQLite they go with the transaction's next statement)."""
    dialect = conn.dialect.name
    for event in told:
        key = {"p_thread": thread_id, "p_call": event.tool_call_id, "p_now": now}
        row = key | {"p_run": run_id, "p_name": event.name}
        if isinstance(event, ToolCallAsked):
            row |= {"p_args": event.args, "p_message": event.message_id}
            await execute_unread(conn, _ASK[dialect], row)
            continue
        unasked = row | {"p_args": {}, "p_message": None}
        await execute_unread(conn, _ANSWER_UNASKED[dialect], unasked)
        answer = {"p_status": event.status, "p_content": event.content}
        await execute_unread(conn, _ANSWER, key | answer | {"p_chars": event.content_chars})


async def list_tool_calls(conn: DbConnection, thread_id: str) -> list[ToolCallRecord]:
    """The thread's tool calls in the order they were asked, each with its result (if any yet)
    and the transcript message said last before it."""
    rows = await conn.execute(_LIST, {"p_thread": thread_id})
    return [ToolCallRecord(*row) for row in rows]
