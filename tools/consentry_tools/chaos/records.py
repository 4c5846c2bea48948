"""What the database holds about a trial, read with SQLAlchemy Core on the tables of
``consentry.stored`` through the project's ``Database`` (the same code path as the server, on
SQLite and PostgreSQL). Only named columns are read, as frozen records."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from consentry.stored import (
    Database,
    DbConnection,
    approvals,
    audit,
    effects,
    events,
    idempotency_keys,
    note_versions,
    runs,
    threads,
    transcript,
)

__all__ = [
    "ApprovalRecord",
    "AuditRecord",
    "CheckpointRecord",
    "EffectRecord",
    "EventRecord",
    "KeyRecord",
    "RunRecord",
    "StoredThread",
    "ThreadRecord",
    "TranscriptRecord",
    "VersionRecord",
    "leased_pids",
    "read_effects",
    "read_keys",
    "read_threads",
    "read_versions",
    "running_threads",
    "thread_ids",
]

graph_checkpoints = sa.table(
    "graph_checkpoints",
    sa.column("thread_id"),
    sa.column("checkpoint_ns"),
    sa.column("checkpoint_id"),
    sa.column("parent_checkpoint_id"),
    sa.column("metadata"),
)
"""The checkpointer's table (``storage.checkpoints`` writes it with SQL of its own)."""

_CHUNK = 400
"""Ids per ``IN (…)`` (SQLite allows 32,766 parameters; PostgreSQL 65,535)."""


@dataclass(frozen=True)
class ThreadRecord:
    thread_id: str
    status: str
    last_reason: str | None
    last_seq: int
    pruned_through: int
    active_run_id: str | None
    lease_owner: str | None


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    trigger: str
    status: str
    reason: str | None
    error_code: str | None


@dataclass(frozen=True)
class EventRecord:
    seq: int
    run_id: str
    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class CheckpointRecord:
    """One of the thread's root graph checkpoints (namespace ``""``), as the checkpointer keeps
    them (``CONSENTRY_CHECKPOINT_RETENTION``): each names the one it follows."""

    checkpoint_id: str
    parent_id: str | None
    step: int | None
    """LangGraph's step number (``metadata.step``)."""
    fork_of: str | None
    """A time-travel fork's anchor: the checkpoint it copies (``consentry_fork_of``)."""


@dataclass(frozen=True)
class TranscriptRecord:
    message_id: str
    role: str
    content: str


@dataclass(frozen=True)
class ApprovalRecord:
    approval_id: str
    run_id: str
    kind: str
    status: str
    event: dict[str, Any]
    decision: Any
    edited: Any


@dataclass(frozen=True)
class AuditRecord:
    action: str
    run_id: str | None
    approval_id: str | None
    data: dict[str, Any]


@dataclass(frozen=True)
class VersionRecord:
    note_id: str
    version: int
    title: str
    content: str
    author: str
    approval_id: str | None


@dataclass(frozen=True)
class EffectRecord:
    approval_id: str
    kind: str
    result: dict[str, Any]


@dataclass(frozen=True)
class KeyRecord:
    key: str
    status: str
    thread_id: str | None
    run_id: str | None


@dataclass
class StoredThread:
    """One thread as the database holds it."""

    thread: ThreadRecord
    runs: list[RunRecord] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    """By seq."""
    transcript: list[TranscriptRecord] = field(default_factory=list)
    """In order."""
    approvals: list[ApprovalRecord] = field(default_factory=list)
    audit: list[AuditRecord] = field(default_factory=list)
    """In order."""
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    """By id (ids sort by time)."""


def _chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start : start + _CHUNK])


async def thread_ids(db: Database) -> set[str]:
    async with db.read() as conn:
        return {row[0] for row in await conn.execute(sa.select(threads.c.id))}


async def running_threads(db: Database, ids: Sequence[str]) -> list[str]:
    found: list[str] = []
    async with db.read() as conn:
        for chunk in _chunks(ids):
            query = sa.select(threads.c.id).where(
                threads.c.id.in_(chunk), threads.c.status == "running"
            )
            found += [row[0] for row in await conn.execute(query)]
    return found


async def leased_pids(db: Database) -> dict[str, int]:
    """The process id in the lease of every running thread (``host:pid:random``)."""
    query = sa.select(threads.c.id, threads.c.lease_owner).where(threads.c.status == "running")
    async with db.read() as conn:
        rows = list(await conn.execute(query))
    pids: dict[str, int] = {}
    for thread_id, owner in rows:
        parts = str(owner or "").split(":")
        if len(parts) >= 2 and parts[1].isdigit():
            pids[thread_id] = int(parts[1])
    return pids


async def read_threads(db: Database, ids: Sequence[str]) -> dict[str, StoredThread]:
    stored: dict[str, StoredThread] = {}
    async with db.read() as conn:
        for chunk in _chunks(ids):
            query = sa.select(
                threads.c.id,
                threads.c.status,
                threads.c.last_reason,
                threads.c.last_seq,
                threads.c.pruned_through,
                threads.c.active_run_id,
                threads.c.lease_owner,
            ).where(threads.c.id.in_(chunk))
            for row in await conn.execute(query):
                stored[row[0]] = StoredThread(ThreadRecord(*row))
            await _read_children(conn, chunk, stored)
    return stored


async def _read_children(
    conn: DbConnection, chunk: list[str], stored: dict[str, StoredThread]
) -> None:
    run_rows = await conn.execute(
        sa.select(
            runs.c.thread_id,
            runs.c.id,
            runs.c.trigger,
            runs.c.status,
            runs.c.reason,
            runs.c.error_code,
        )
        .where(runs.c.thread_id.in_(chunk))
        .order_by(runs.c.started_at, runs.c.id)
    )
    for thread_id, *rest in run_rows:
        stored[thread_id].runs.append(RunRecord(*rest))
    event_rows: Iterable[Any] = await conn.execute(
        sa.select(events.c.thread_id, events.c.seq, events.c.run_id, events.c.type, events.c.data)
        .where(events.c.thread_id.in_(chunk))
        .order_by(events.c.thread_id, events.c.seq)
    )
    for thread_id, seq, run_id, kind, data in event_rows:
        stored[thread_id].events.append(EventRecord(seq, run_id, kind, json.loads(data)))
    transcript_rows = await conn.execute(
        sa.select(
            transcript.c.thread_id, transcript.c.message_id, transcript.c.role, transcript.c.content
        )
        .where(transcript.c.thread_id.in_(chunk))
        .order_by(transcript.c.id)
    )
    for thread_id, *rest in transcript_rows:
        stored[thread_id].transcript.append(TranscriptRecord(*rest))
    approval_rows = await conn.execute(
        sa.select(
            approvals.c.thread_id,
            approvals.c.id,
            approvals.c.run_id,
            approvals.c.kind,
            approvals.c.status,
            approvals.c.event,
            approvals.c.decision,
            approvals.c.edited,
        )
        .where(approvals.c.thread_id.in_(chunk))
        .order_by(approvals.c.created_at)
    )
    for thread_id, *rest in approval_rows:
        stored[thread_id].approvals.append(ApprovalRecord(*rest))
    audit_rows = await conn.execute(
        sa.select(
            audit.c.thread_id, audit.c.action, audit.c.run_id, audit.c.approval_id, audit.c.data
        )
        .where(audit.c.thread_id.in_(chunk))
        .order_by(audit.c.id)
    )
    for thread_id, *rest in audit_rows:
        if thread_id in stored:
            stored[thread_id].audit.append(AuditRecord(*rest))
    checkpoint_rows = await conn.execute(
        sa.select(
            graph_checkpoints.c.thread_id,
            graph_checkpoints.c.checkpoint_id,
            graph_checkpoints.c.parent_checkpoint_id,
            graph_checkpoints.c.metadata,
        )
        .where(graph_checkpoints.c.thread_id.in_(chunk), graph_checkpoints.c.checkpoint_ns == "")
        .order_by(graph_checkpoints.c.thread_id, graph_checkpoints.c.checkpoint_id)
    )
    for thread_id, checkpoint_id, parent_id, metadata in checkpoint_rows:
        # jsonb on PostgreSQL (a dict), text on SQLite
        meta = json.loads(metadata) if isinstance(metadata, str | bytes) else dict(metadata or {})
        step = meta.get("step")
        stored[thread_id].checkpoints.append(
            CheckpointRecord(
                checkpoint_id,
                parent_id,
                step if isinstance(step, int) else None,
                meta.get("consentry_fork_of"),
            )
        )


async def read_versions(db: Database, note_ids: Sequence[str]) -> dict[str, list[VersionRecord]]:
    versions: dict[str, list[VersionRecord]] = defaultdict(list)
    async with db.read() as conn:
        for chunk in _chunks(note_ids):
            query = (
                sa.select(
                    note_versions.c.note_id,
                    note_versions.c.version,
                    note_versions.c.title,
                    note_versions.c.content,
                    note_versions.c.author,
                    note_versions.c.approval_id,
                )
                .where(note_versions.c.note_id.in_(chunk))
                .order_by(note_versions.c.note_id, note_versions.c.version)
            )
            for row in await conn.execute(query):
                versions[row[0]].append(VersionRecord(*row))
    return dict(versions)


async def read_effects(db: Database, approval_ids: Sequence[str]) -> dict[str, EffectRecord]:
    found: dict[str, EffectRecord] = {}
    async with db.read() as conn:
        for chunk in _chunks(approval_ids):
            query = sa.select(effects.c.approval_id, effects.c.kind, effects.c.result).where(
                effects.c.approval_id.in_(chunk)
            )
            for row in await conn.execute(query):
                found[row[0]] = EffectRecord(*row)
    return found


async def read_keys(db: Database, keys: Sequence[str]) -> dict[str, KeyRecord]:
    """Idempotency keys by key (the chaos clients' keys are unique across owners)."""
    found: dict[str, KeyRecord] = {}
    async with db.read() as conn:
        for chunk in _chunks(keys):
            query = sa.select(
                idempotency_keys.c.key,
                idempotency_keys.c.status,
                idempotency_keys.c.thread_id,
                idempotency_keys.c.run_id,
            ).where(idempotency_keys.c.key.in_(chunk))
            for row in await conn.execute(query):
                found[row[0]] = KeyRecord(*row)
    return found
