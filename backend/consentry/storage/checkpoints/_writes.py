"""Writing pending writes (a task's, a run's held ones): the rows of one call or of a run's
whole unfinished step, each key once, fenced by a run's lease when it writes them."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP

from consentry.storage.checkpoints._operations import (
    CheckpointFence,
    Operation,
    Query,
    fenced,
    fenced_statement,
)
from consentry.storage.checkpoints._sql import CheckpointSql

__all__ = ["held_writes", "put_writes", "special_write"]


def put_writes(
    sql: CheckpointSql,
    rows: list[tuple[Any, ...]],
    *,
    replace: bool,
    fence: CheckpointFence | None,
) -> Operation:
    """Write a task's pending writes (``replace``: every one is a special channel, which
    LangGraph writes again with the newest value; others are kept as first written)."""
    if fence is not None and rows:
        # One statement writes each key once, as the statements one by one would leave it.
        distinct = _last_of_each_key(rows) if replace else _first_of_each_key(rows)
        statement = sql.put_writes_fenced(len(distinct), replace=replace)
        if statement is not None:
            values = (*fence, *(value for row in distinct for value in row))
            yield from fenced_statement(Query(statement, values, last=True), fence)
            return
    yield from fenced(sql, fence)
    if rows:
        yield Query(sql.put_write_replace if replace else sql.put_write_ignore, many=rows)


def held_writes(
    sql: CheckpointSql, rows: list[tuple[Any, ...]], *, fence: CheckpointFence | None
) -> list[Operation]:
    """Write a run's held pending writes: those of ordinary channels as :func:`put_writes`
    writes them (the first of each key kept), then those of special channels (a resume value, an
    interrupt) with ``replace`` (the last kept); an operation each, fenced (on PostgreSQL one
    statement each)."""
    special = [row for row in rows if special_write(row)]
    ordinary = [row for row in rows if not special_write(row)]
    kinds = ((ordinary, False), (special, True))
    return [
        put_writes(sql, kind, replace=rewritten, fence=fence) for kind, rewritten in kinds if kind
    ]


def special_write(row: tuple[Any, ...]) -> bool:
    """Whether a write row is of one of LangGraph's special channels (written again with the
    newest value, where the others keep the first)."""
    return row[_CHANNEL] in WRITES_IDX_MAP


def _first_of_each_key(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Write rows, the first of each key (``DO NOTHING``)."""
    kept: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        kept.setdefault(_write_key(row), row)
    return list(kept.values())


def _last_of_each_key(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Write rows, the last of each key (``DO UPDATE``)."""
    return list({_write_key(row): row for row in rows}.values())


def _write_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A write row's primary key: its thread, namespace and checkpoint, its task's id and its
    index (the rows of one call share the first three; a run's held writes may not)."""
    return (*row[:3], row[_TASK], row[_IDX])


_TASK, _IDX = 3, 5
"""Where a write row (``ConsentrySaver._write_rows``) has its task id and its index."""
_CHANNEL = 6
"""Where a write row (``ConsentrySaver._write_rows``) has its channel."""
