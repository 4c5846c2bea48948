"""The checkpointer's statements, for SQLite (``?``) and PostgreSQL (``%s``), written once.

Every statement goes to the driver as it is (sqlite3, psycopg): no SQL compiler on the hot path.
The fence is the thread's row in ``threads`` (the run's id and fencing token, as the run's event
inserts check them). On PostgreSQL it is read ``FOR KEY SHARE``, which a takeover's ``FOR UPDATE``
of the row waits for (``storage.leases.seize_lease``): a write in flight commits before the
takeover (which then reads it), and one that starts after it waits, re-reads the row and finds
the new token. The heartbeat's renewal of the leases (an ``UPDATE`` of no key column) does not
wait for it. On SQLite the writer holds the database's write lock.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

from consentry.storage.db.direct import preparable

__all__ = ["CheckpointSql", "sql_for"]

_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
)
_SELECT = f"SELECT {_COLUMNS} FROM graph_checkpoints"
_WRITE_COLUMNS = "task_id, channel, type, value, task_path, idx"
_INSERT_WRITES = (
    "INSERT INTO graph_checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, "
    "task_id, task_path, idx, channel, type, value)"
)
_ON_WRITE_CONFLICT = "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)"
_REPLACE_WRITE = (
    f"{_ON_WRITE_CONFLICT} DO UPDATE SET task_path = excluded.task_path, "
    "channel = excluded.channel, type = excluded.type, value = excluded.value"
)
_IGNORE_WRITE = f"{_ON_WRITE_CONFLICT} DO NOTHING"
_FENCE = "SELECT 1 FROM threads WHERE id = ? AND active_run_id = ? AND fencing_token = ?"


@dataclass(frozen=True)
class CheckpointSql:
    dialect: Literal["sqlite", "postgresql"]
    fence: str
    put: str
    drop_older: tuple[str, ...]
    put_fenced: str | None
    """PostgreSQL: the fence and the checkpoint in one statement (one round trip); when the lease
    moved on it fails with ``division_by_zero`` (``refused_one_row_change``), failing its
    transaction. None on SQLite,
    where the separate statements run in one call, in the process, and a refused fence raises
    before the commit."""
    put_fenced_latest: str | None
    """``put_fenced`` that also drops the namespace's older checkpoints and their writes."""
    put_write_replace: str
    put_write_ignore: str
    get_latest: str
    """The namespace's newest checkpoint, then its pending writes: one statement
    (:func:`_with_writes`)."""
    get_one: str
    """A checkpoint by id, then its pending writes (:func:`_with_writes`)."""
    writes_of_many: str
    delete_thread: tuple[str, ...]
    delete_runs_writes: str
    delete_runs: str
    copy_checkpoints: str
    copy_writes: str
    prune_older: tuple[str, ...]
    head_id: str
    """The id of the thread's newest checkpoint of its root graph (NULL: none)."""
    run_checkpoints: str
    """A run's checkpoints of the thread's root graph, oldest first, with their parents."""
    delete_thread_run: tuple[str, ...]
    """A run's checkpoints of one thread (every namespace) and their pending writes."""

    def put_writes_fenced(self, count: int, *, replace: bool) -> str | None:
        """PostgreSQL: the fence and ``count`` pending writes in one statement (one round trip,
        committed in the same message: ``run_on(commit=True)``); when the lease moved on it fails
        with ``division_by_zero``, failing its transaction (``put_fenced``). None on SQLite."""
        if self.dialect != "postgresql":
            return None
        text = _put_writes_fenced(count, replace)
        if count <= _MOST_WRITES_PREPARED:
            preparable(text)
        return text

    def metadata_predicates(self, wanted: dict[str, Any]) -> tuple[list[str], list[Any]]:
        """``WHERE`` terms selecting checkpoints whose metadata has these keys and values."""
        if self.dialect == "postgresql":
            return [self.param("metadata @> ?::jsonb")], [json.dumps(wanted)]
        terms: list[str] = []
        params: list[Any] = []
        for key, value in wanted.items():
            path = "$." + json.dumps(key)
            if value is None:
                terms.append("json_extract(metadata, ?) IS NULL")
                params.append(path)
            elif isinstance(value, bool):  # json_extract gives 1 / 0 for true / false
                terms.append("json_extract(metadata, ?) = ?")
                params += [path, int(value)]
            elif isinstance(value, str | int | float):
                terms.append("json_extract(metadata, ?) = ?")
                params += [path, value]
            else:  # an object or an array: json_extract gives it as compact JSON text
                terms.append("json_extract(metadata, ?) = ?")
                params += [path, json.dumps(value, separators=(",", ":"))]
        return terms, params

    def param(self, text: str) -> str:
        return text.replace("?", "%s") if self.dialect == "postgresql" else text

    def listed(self, statement: str, count: int) -> str:
        """``statement`` with its ``{ids}`` list filled for ``count`` parameters."""
        return statement.format(ids=", ".join([self.param("?")] * count))


def _statements(dialect: Literal["sqlite", "postgresql"]) -> CheckpointSql:
    pg = dialect == "postgresql"
    metadata = "?::jsonb" if pg else "?"
    # The namespace's checkpoints before the new one that its run may drop: after a bound, and
    # one more (a fork's anchor); `_operations.Droppable`.
    older = (
        "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id < ? "
        "AND (checkpoint_id > ? OR checkpoint_id = ?)"
    )
    sql = CheckpointSql(
        dialect=dialect,
        fence=_FENCE + (" FOR KEY SHARE" if pg else ""),
        put=(
            "INSERT INTO graph_checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, run_id, type, checkpoint, metadata) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, {metadata}) "
            "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
            "parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id, "
            "type = excluded.type, checkpoint = excluded.checkpoint, "
            "metadata = excluded.metadata"
        ),
        drop_older=(
            f"DELETE FROM graph_checkpoint_writes WHERE {older}",
            f"DELETE FROM graph_checkpoints WHERE {older}",
        ),
        put_fenced=_put_fenced("") if pg else None,
        put_fenced_latest=_put_fenced(
            "".join(
                f", drop_{table} AS (DELETE FROM {table} WHERE {older} "
                "AND EXISTS (SELECT 1 FROM fence))"
                for table in ("graph_checkpoint_writes", "graph_checkpoints")
            )
        )
        if pg
        else None,
        put_write_replace=f"{_INSERT_WRITES} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) {_REPLACE_WRITE}",
        put_write_ignore=f"{_INSERT_WRITES} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) {_IGNORE_WRITE}",
        get_latest=_with_writes(
            f"{_SELECT} WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ),
        get_one=_with_writes(
            f"{_SELECT} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
        ),
        writes_of_many=(
            f"SELECT checkpoint_ns, checkpoint_id, {_WRITE_COLUMNS} FROM graph_checkpoint_writes "
            "WHERE thread_id = ? AND checkpoint_id IN ({ids})"
        ),
        delete_thread=(
            "DELETE FROM graph_checkpoint_writes WHERE thread_id = ?",
            "DELETE FROM graph_checkpoints WHERE thread_id = ?",
        ),
        delete_runs_writes=(
            "DELETE FROM graph_checkpoint_writes WHERE EXISTS (SELECT 1 FROM graph_checkpoints c "
            "WHERE c.run_id IN ({ids}) AND c.thread_id = graph_checkpoint_writes.thread_id "
            "AND c.checkpoint_ns = graph_checkpoint_writes.checkpoint_ns "
            "AND c.checkpoint_id = graph_checkpoint_writes.checkpoint_id)"
        ),
        delete_runs="DELETE FROM graph_checkpoints WHERE run_id IN ({ids})",
        copy_checkpoints=(
            "INSERT INTO graph_checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, run_id, type, checkpoint, metadata) "
            "SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, "
            "checkpoint, metadata FROM graph_checkpoints WHERE thread_id = ? "
            "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING"
        ),
        copy_writes=(
            "INSERT INTO graph_checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, "
            "task_id, task_path, idx, channel, type, value) "
            "SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, "
            "value FROM graph_checkpoint_writes WHERE thread_id = ? "
            "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING"
        ),
        head_id=(
            "SELECT MAX(checkpoint_id) FROM graph_checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = ''"
        ),
        run_checkpoints=(
            "SELECT checkpoint_id, parent_checkpoint_id FROM graph_checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = '' AND run_id = ? ORDER BY checkpoint_id"
        ),
        delete_thread_run=(
            "DELETE FROM graph_checkpoint_writes WHERE thread_id = ? AND EXISTS (SELECT 1 FROM "
            "graph_checkpoints c WHERE c.thread_id = graph_checkpoint_writes.thread_id "
            "AND c.run_id = ? AND c.checkpoint_ns = graph_checkpoint_writes.checkpoint_ns "
            "AND c.checkpoint_id = graph_checkpoint_writes.checkpoint_id)",
            "DELETE FROM graph_checkpoints WHERE thread_id = ? AND run_id = ?",
        ),
        prune_older=tuple(
            f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id < ("
            "SELECT MAX(newest.checkpoint_id) FROM graph_checkpoints AS newest "
            f"WHERE newest.thread_id = {table}.thread_id "
            f"AND newest.checkpoint_ns = {table}.checkpoint_ns)"
            for table in ("graph_checkpoint_writes", "graph_checkpoints")
        ),
    )
    return sql


def _with_writes(checkpoint: str) -> str:
    """``checkpoint`` (a query of at most one checkpoint) and its pending writes in one
    statement: first a row ``(0, <checkpoint's columns>, <nulls>)``, then one ``(1, <nulls>,
    <a write's columns>)`` a write. On PostgreSQL that is one round trip instead of two, for
    every run's start and every decision."""
    written = ", ".join(f"w.{column}" for column in _WRITE_COLUMNS.split(", "))
    return (
        f"WITH c AS ({checkpoint}) "
        f"SELECT 0, c.*, {_nulls(_WRITE_COLUMNS)} FROM c "
        f"UNION ALL SELECT 1, {_nulls(_COLUMNS)}, {written} FROM graph_checkpoint_writes w "
        "JOIN c ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns "
        "AND w.checkpoint_id = c.checkpoint_id ORDER BY 1"
    )


def _nulls(columns: str) -> str:
    return ", ".join("NULL" for _ in columns.split(", "))


_MOST_WRITES_PREPARED = 4
"""A step's pending writes in one prepared statement at most (an interrupt's: one or two)."""


@functools.lru_cache(maxsize=64)
def _put_writes_fenced(count: int, replace: bool) -> str:
    row = "(%s, %s, %s, %s, %s, %s::integer, %s, %s, %s::bytea)"
    return (
        f"WITH fence AS ({_FENCE.replace('?', '%s')} FOR KEY SHARE), "
        f"put AS ({_INSERT_WRITES} SELECT v.* FROM fence, (VALUES {', '.join([row] * count)}) "
        "AS v (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, "
        f"value) {_REPLACE_WRITE if replace else _IGNORE_WRITE}) "
        "SELECT 1 / (SELECT count(*) FROM fence)"  # a refused fence fails it (``put_fenced``)
    )


def _put_fenced(drop: str) -> str:
    return (
        "WITH fence AS (SELECT 1 FROM threads WHERE id = ? AND active_run_id = ? "
        "AND fencing_token = ? FOR KEY SHARE), put AS (INSERT INTO graph_checkpoints (thread_id, "
        "checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, "
        "metadata) SELECT ?, ?, ?, ?, ?, ?, ?, ?::jsonb FROM fence "
        "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
        "parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id, "
        "type = excluded.type, checkpoint = excluded.checkpoint, "
        f"metadata = excluded.metadata RETURNING 1){drop} "
        # A fence that refused fails the statement (division_by_zero, as a refused claim does),
        # hence its message and the transaction, even when the COMMIT goes in that message: a
        # row count read after the COMMIT would let the transaction's other writes (its user
        # messages in the transcript, say) commit under a lease that moved on.
        "SELECT (SELECT count(*) FROM put) / (SELECT count(*) FROM fence)"
    )


def _with_params(sql: CheckpointSql) -> CheckpointSql:
    """The same statements in PostgreSQL's parameter style (``%s``)."""
    converted: dict[str, Any] = {}
    for name in CheckpointSql.__dataclass_fields__:
        value = getattr(sql, name)
        if name == "dialect":
            converted[name] = "postgresql"
        elif isinstance(value, tuple):
            converted[name] = tuple(sql_text.replace("?", "%s") for sql_text in value)
        elif value is None:
            converted[name] = None
        else:
            converted[name] = value.replace("?", "%s")
    return CheckpointSql(**converted)


def _declared_preparable(sql: CheckpointSql) -> CheckpointSql:
    """``sql`` with its fixed statements declared preparable on PostgreSQL (``storage.db.direct``:
    prepared once a connection); those that vary with a count are declared where they are made,
    for the small counts only."""
    for name in CheckpointSql.__dataclass_fields__:
        value = getattr(sql, name)
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and name != "dialect":
                preparable(text)
    return sql


_SQLITE = _statements("sqlite")
_POSTGRES = _declared_preparable(_with_params(_statements("postgresql")))


def sql_for(dialect: str) -> CheckpointSql:
    return _POSTGRES if dialect == "postgresql" else _SQLITE
