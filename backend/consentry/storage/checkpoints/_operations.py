"""What each checkpointer call does in the database, once for every driver.

An operation is a generator: it yields each ``Query`` and is sent its ``Result``, and returns
what the call returns. ``_drivers`` runs one on sqlite3 (on the connection's thread, in one hop)
or on psycopg (sync or async), so the SQL, the fencing and the row decoding are written once.
Everything a call serializes is serialized before its operation starts, outside the database's
write lock.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from sqlalchemy.exc import DBAPIError

from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.db.postgres_connection import refused_one_row_change
from consentry.storage.leases import LeaseLostError

__all__ = [
    "CheckpointFence",
    "Droppable",
    "Operation",
    "Query",
    "Result",
    "SerializedCheckpoint",
    "copy_thread",
    "delete_runs",
    "delete_thread",
    "fenced",
    "get_rows",
    "get_tuple",
    "head_id",
    "lease_lost",
    "list_tuples",
    "prune",
    "put_checkpoint",
    "tuple_of",
]


class CheckpointFence(NamedTuple):
    """The lease a run's checkpoint writes are checked against: they are written only while the
    thread's active run is ``run_id`` with ``fencing_token``. Its effects on Consentry's own
    tables are committed only then too (``leases.commit_only_while_leased``)."""

    thread_id: str
    run_id: str
    fencing_token: int


class Droppable(NamedTuple):
    """Which older checkpoints a write with ``latest_only`` drops: those after ``after`` and
    ``also`` (``""``: none more). ``Droppable("", "")``: all of them."""

    after: str = ""
    also: str = ""


_ALL_OLDER = Droppable()


@dataclass(frozen=True)
class Query:
    sql: str
    params: Sequence[Any] = ()
    many: Sequence[Sequence[Any]] | None = None
    """Parameter rows for ``executemany`` (then ``params`` is unused)."""
    last: bool = False
    """The operation's last statement (a caller may commit with it: ``run_on(commit=True)``)."""


@dataclass(frozen=True)
class Result:
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = 0


Operation = Generator[Query, Result, Any]


@dataclass(frozen=True)
class SerializedCheckpoint:
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    run_id: str | None
    type: str
    blob: bytes
    metadata: str


def fenced(sql: CheckpointSql, fence: CheckpointFence | None) -> Operation:
    if fence is None:
        return
    found = yield Query(sql.fence, (fence.thread_id, fence.run_id, fence.fencing_token))
    if not found.rows:
        raise lease_lost(fence)


def fenced_statement(query: Query, fence: CheckpointFence) -> Operation:
    """Run ``query``, a statement that checks ``fence`` itself (PostgreSQL: ``put_fenced``,
    ``put_writes_fenced``) and fails with ``division_by_zero`` when the lease moved on, so that
    its transaction commits nothing even when its ``COMMIT`` went in the same message; that
    failure is raised as the lost lease it is."""
    try:
        return (yield query)
    except DBAPIError as exc:
        if refused_one_row_change(exc):
            raise lease_lost(fence) from exc
        raise


def lease_lost(fence: CheckpointFence) -> LeaseLostError:
    return LeaseLostError(
        f"run {fence.run_id} no longer holds thread {fence.thread_id}'s lease: "
        "its checkpoint is not written"
    )


def put_checkpoint(
    sql: CheckpointSql,
    saved: SerializedCheckpoint,
    *,
    fence: CheckpointFence | None,
    latest_only: bool,
    droppable: Droppable = _ALL_OLDER,
) -> Operation:
    """Write a checkpoint (fenced when a run writes it). ``latest_only``: the namespace's older
    checkpoints ``droppable`` names, and their pending writes, go in the same transaction (no
    prune pass later)."""
    row = (
        saved.thread_id,
        saved.checkpoint_ns,
        saved.checkpoint_id,
        saved.parent_checkpoint_id,
        saved.run_id,
        saved.type,
        saved.blob,
        saved.metadata,
    )
    if sql.put_fenced is not None and sql.put_fenced_latest is not None and fence is not None:
        older = (saved.thread_id, saved.checkpoint_ns, saved.checkpoint_id, *droppable)
        yield from fenced_statement(
            Query(
                sql.put_fenced_latest if latest_only else sql.put_fenced,
                (*fence, *row, *(older * 2 if latest_only else ())),
                last=True,
            ),
            fence,
        )
        return
    yield from fenced(sql, fence)
    yield Query(sql.put, row)
    if latest_only:
        for statement in sql.drop_older:
            older = (saved.thread_id, saved.checkpoint_ns, saved.checkpoint_id, *droppable)
            yield Query(statement, older)


_CHECKPOINT_WIDTH = 7
"""The columns of a checkpoint's row (``_checkpoint_tuple``)."""


def _checkpoint_tuple(
    serde: SerializerProtocol, row: tuple[Any, ...], writes: list[PendingWrite]
) -> CheckpointTuple:
    thread_id, checkpoint_ns, checkpoint_id, parent_id, type_, blob, metadata = row
    return CheckpointTuple(
        config={
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        },
        checkpoint=serde.loads_typed((type_, bytes(blob))),
        metadata=cast(
            CheckpointMetadata, metadata if isinstance(metadata, dict) else json.loads(metadata)
        ),
        parent_config=(
            {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": parent_id,
                }
            }
            if parent_id
            else None
        ),
        pending_writes=writes,
    )


def _pending_writes(serde: SerializerProtocol, rows: list[tuple[Any, ...]]) -> list[PendingWrite]:
    """``(task_id, channel, type, value, task_path, idx)`` rows in LangGraph's write order."""
    ordered = sorted(rows, key=lambda r: writes_sort_key(r[4], r[0], r[5]))
    return [
        (task_id, channel, serde.loads_typed((type_, bytes(value) if value is not None else b"")))
        for task_id, channel, type_, value, _, _ in ordered
    ]


def get_tuple(
    sql: CheckpointSql,
    serde: SerializerProtocol,
    *,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None,
) -> Operation:
    rows = yield from get_rows(
        sql, thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id
    )
    return tuple_of(serde, rows)


def get_rows(
    sql: CheckpointSql, *, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
) -> Operation:
    """The rows of one checkpoint (the newest, without ``checkpoint_id``) and of its pending
    writes, as read (``CheckpointSql.get_one``): :func:`tuple_of` decodes them."""
    if checkpoint_id:
        found = yield Query(sql.get_one, (thread_id, checkpoint_ns, checkpoint_id))
    else:
        found = yield Query(sql.get_latest, (thread_id, checkpoint_ns))
    return found.rows


def tuple_of(
    serde: SerializerProtocol, rows: list[tuple[Any, ...]], *, again: bool = False
) -> CheckpointTuple | None:
    """The checkpoint :func:`get_rows` read (None: there was none). ``again``: the rows were
    decoded before; the metadata PostgreSQL's driver gives as a dict is copied, so the two
    tuples share nothing (the rest is decoded anew from bytes and strings)."""
    if not rows:
        return None
    first, *writes = rows  # the checkpoint, then its writes (``CheckpointSql.get_one``)
    row = first[1 : 1 + _CHECKPOINT_WIDTH]
    found = _checkpoint_tuple(serde, row, _pending_writes(serde, [w[-6:] for w in writes]))
    if again and isinstance(row[-1], dict):  # the row's own metadata (PostgreSQL)
        return found._replace(metadata=copy.deepcopy(found.metadata))
    return found


def list_tuples(
    sql: CheckpointSql,
    serde: SerializerProtocol,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Operation:
    """Newest first, as LangGraph's savers list them; the pending writes of each thread's
    checkpoints in one more query."""
    terms: list[str] = []
    params: list[Any] = []
    if config is not None:
        configurable = config["configurable"]
        terms.append("thread_id = ?")
        params.append(str(configurable["thread_id"]))
        if (checkpoint_ns := configurable.get("checkpoint_ns")) is not None:
            terms.append("checkpoint_ns = ?")
            params.append(checkpoint_ns)
        if checkpoint_id := configurable.get("checkpoint_id"):
            terms.append("checkpoint_id = ?")
            params.append(checkpoint_id)
    if filter:
        metadata_terms, metadata_params = sql.metadata_predicates(filter)
        terms += metadata_terms
        params += metadata_params
    if before is not None and (before_id := before["configurable"].get("checkpoint_id")):
        terms.append("checkpoint_id < ?")
        params.append(before_id)
    statement = "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    statement += "checkpoint, metadata FROM graph_checkpoints"
    if terms:
        statement += " WHERE " + " AND ".join(terms)
    statement += " ORDER BY checkpoint_id DESC"
    if limit is not None:
        statement += " LIMIT ?"
        params.append(int(limit))
    found = yield Query(sql.param(statement), params)
    by_thread: dict[str, list[str]] = {}
    for row in found.rows:
        by_thread.setdefault(row[0], []).append(row[2])
    writes: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
    for thread_id, ids in by_thread.items():
        unique = sorted(set(ids))
        rows = yield Query(sql.listed(sql.writes_of_many, len(unique)), (thread_id, *unique))
        for ns, checkpoint_id, *write in rows.rows:
            writes.setdefault((thread_id, ns, checkpoint_id), []).append(tuple(write))
    return [
        _checkpoint_tuple(
            serde, row, _pending_writes(serde, writes.get((row[0], row[1], row[2]), []))
        )
        for row in found.rows
    ]


def head_id(sql: CheckpointSql, thread_id: str) -> Operation:
    found = yield Query(sql.head_id, (thread_id,))
    return found.rows[0][0] if found.rows else None


def run_checkpoints(sql: CheckpointSql, thread_id: str, run_id: str) -> Operation:
    """``(checkpoint_id, parent_checkpoint_id)`` of the run's root checkpoints, oldest first."""
    found = yield Query(sql.run_checkpoints, (thread_id, run_id))
    return [(str(row[0]), row[1]) for row in found.rows]


def delete_thread_run(sql: CheckpointSql, thread_id: str, run_id: str) -> Operation:
    for statement in sql.delete_thread_run:
        yield Query(statement, (thread_id, run_id))


def delete_thread(sql: CheckpointSql, thread_id: str) -> Operation:
    for statement in sql.delete_thread:
        yield Query(statement, (thread_id,))


def delete_runs(sql: CheckpointSql, run_ids: Sequence[str]) -> Operation:
    if not run_ids:
        return
    yield Query(sql.listed(sql.delete_runs_writes, len(run_ids)), tuple(run_ids))
    yield Query(sql.listed(sql.delete_runs, len(run_ids)), tuple(run_ids))


def copy_thread(sql: CheckpointSql, source: str, target: str) -> Operation:
    yield Query(sql.copy_checkpoints, (target, source))
    yield Query(sql.copy_writes, (target, source))


def prune(sql: CheckpointSql, thread_ids: Sequence[str], *, strategy: str) -> Operation:
    """``keep_latest``: each namespace's newest checkpoint and its writes stay; ``delete``: all
    of the threads' go."""
    if strategy not in ("keep_latest", "delete"):
        raise ValueError(f"Unknown prune strategy: {strategy!r}")
    statements = sql.delete_thread if strategy == "delete" else sql.prune_older
    for thread_id in thread_ids:
        for statement in statements:
            yield Query(statement, (thread_id,))
