"""A statement marked :func:`direct`, compiled once per database and set of parameter names.

SQLAlchemy compiles it (the SQL, its parameters' order, its types' bind processors, the values it
carries itself, its columns' result processors); a form that needs more (a default, an expanding
``IN``) compiles to None: on SQLite it runs through SQLAlchemy's execution, on PostgreSQL it is
compiled for the one row it runs with (:func:`compiled_for_driver`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Dialect, IteratorResult
from sqlalchemy.engine.result import SimpleResultMetaData
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.util import LRUCache

from consentry.storage.db.direct._prepared import preparable

__all__ = ["BufferedResult", "compiled_for_driver", "direct"]

E = TypeVar("E", bound=Executable)
_Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None

_DIRECT: dict[int, Executable] = {}
"""The statements marked :func:`direct`, by identity (held, so an identity is never reused)."""


class BufferedResult(IteratorResult[*tuple[Any, ...]]):
    """A statement's result, every row already fetched, with the driver's ``rowcount``."""

    rowcount: int

    def __init__(self, keys: Iterable[str], rows: list[Any], rowcount: int) -> None:
        super().__init__(SimpleResultMetaData(list(keys)), iter(rows))
        self.rowcount = rowcount


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    carried: Mapping[str, Any]
    """The values the statement carries itself (``.values(status="ended")``)."""
    positional: bool
    """sqlite3 takes a tuple (``?``), psycopg a dict (``%(name)s``)."""
    keys: tuple[str, ...]
    """The names of the rows' columns (a ``SELECT``, a ``RETURNING``); empty: from the driver
    (a textual statement), or no rows."""
    row_processors: tuple[Callable[[Any], Any] | None, ...] | None
    """What SQLAlchemy's result would do to each column's value (SQLite's dates from text);
    None: nothing."""
    constants: tuple[str, ...] | None = None
    """A statement compiled once: the parameters no row gives (their values the statement's
    own); None: compiled for one call."""

    def result(
        self, rows: list[Any] | None, rowcount: int, description: Callable[[], Sequence[Any]]
    ) -> BufferedResult:
        """The rows as SQLAlchemy's result would give them (None: the statement returns none).
        ``description``: the driver's, read only when the statement does not name its columns
        (psycopg builds it anew at each read)."""
        if rows is None:
            return BufferedResult((), [], rowcount)
        processors = self.row_processors
        if processors is not None:
            rows = [
                tuple(
                    value if process is None else process(value)
                    for process, value in zip(processors, row, strict=True)
                )
                for row in rows
            ]
        keys = self.keys or tuple(column[0] for column in description())
        return BufferedResult(keys, rows, rowcount)

    def arguments(self, row: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        carried = self.carried
        values = [
            (row[name] if name in row else carried[name])
            if process is None
            else process(row[name] if name in row else carried[name])
            for name, process in zip(self.names, self.processors, strict=True)
        ]
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))


_COMPILED: dict[tuple[int, str, tuple[str, ...]], _Compiled | None] = {}
"""By statement, database and parameter names; None: that form runs through SQLAlchemy."""


def direct(statement: E) -> E:
    """Mark a statement built once (a module's constant) to run on the driver directly."""
    _DIRECT[id(statement)] = statement
    return statement


def _rows(parameters: _Parameters) -> Sequence[Mapping[str, Any]]:
    if not parameters:
        return ()
    if isinstance(parameters, Mapping):
        return (parameters,)
    return parameters


def _compiled(statement: Executable, rows: Sequence[Mapping[str, Any]], dialect: Dialect) -> Any:
    if id(statement) not in _DIRECT or not rows:
        return None
    names = tuple(rows[0])
    key = (id(statement), dialect.name, names)
    try:
        return _COMPILED[key]
    except KeyError:
        compiled = _COMPILED[key] = _compile(statement, names, dialect)
        return compiled


def _compile(statement: Executable, names: tuple[str, ...], dialect: Dialect) -> _Compiled | None:
    assert isinstance(statement, ClauseElement)
    # As for executemany: no implicit RETURNING of a generated key nobody reads (PostgreSQL).
    compiled = statement.compile(dialect=dialect, column_keys=list(names), for_executemany=True)
    assert isinstance(compiled, SQLCompiler)
    binds = compiled.binds.values()
    order = compiled.positiontup
    if (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.escaped_bind_names
        or compiled.literal_execute_params
        or any(bind.expanding for bind in binds)
        or not {bind.key for bind in binds if bind.required} <= set(names)
    ):
        return None  # SQLAlchemy's execution does what this one does not
    carried = compiled.construct_params(_check=False)
    if order is None:  # named parameters (psycopg): every one the statement has
        order = list(carried)
    processors = cast(Mapping[str, Callable[[Any], Any]], compiled._bind_processors)
    columns = compiled._result_columns
    try:
        row_processors = tuple(
            column.type._cached_result_processor(dialect, None) for column in columns
        )
    except Exception:  # a processor that wants the driver's column type (a NUMERIC's scale)
        return None
    bound = tuple(processors.get(name) for name in order)
    constants = tuple(name for name in order if name not in names)
    if dialect.name == "postgresql":
        preparable(compiled.string, constants)
    return _Compiled(
        sql=compiled.string,
        names=tuple(order),
        processors=bound,
        carried=carried,
        positional=compiled.positiontup is not None,
        keys=tuple(column.keyname for column in columns),
        row_processors=row_processors if any(row_processors) else None,
        constants=constants,
    )


_AD_HOC_CACHE: LRUCache[Any, Any] = LRUCache(500)
"""SQLAlchemy's compiled forms of the statements not marked :func:`direct`, by its cache key."""


def compiled_for_driver(
    statement: Executable, row: Mapping[str, Any], dialect: Dialect
) -> _Compiled:
    """``statement`` with the parameters ``row``, compiled to run on the driver: a statement
    marked :func:`direct` as compiled once; any other through SQLAlchemy's compiled cache (its
    cache key, its values, its defaults and expanding parameters as SQLAlchemy's execution
    would give them), for this one row. PostgreSQL's connections run every statement so
    (``postgres_connection``)."""
    compiled = _compiled(statement, (row,), dialect) if row else None
    return compiled if compiled is not None else _ad_hoc(statement, row, dialect)


def _ad_hoc(statement: Executable, row: Mapping[str, Any], dialect: Dialect) -> _Compiled:
    assert isinstance(statement, ClauseElement)
    compiled, extracted, collected, _hit = statement._compile_w_cache(
        dialect=dialect,
        compiled_cache=_AD_HOC_CACHE,
        column_keys=sorted(row),
        for_executemany=True,  # as direct's: no implicit RETURNING of a key nobody reads
    )
    assert isinstance(compiled, SQLCompiler)
    values = compiled.construct_params(
        dict(row),
        escape_names=False,
        extracted_parameters=extracted,
        _collected_params=collected,
    )
    for column, default in (
        *((column, column.default) for column in compiled.insert_prefetch),
        *((column, column.onupdate) for column in compiled.update_prefetch),
    ):
        key = compiled._within_exec_param_key_getter(column)
        if key not in row:
            values[key] = _python_default(column.key, default)
    sql = compiled.string
    processors: dict[str, Any] = dict(compiled._bind_processors)
    if compiled.literal_execute_params or compiled.post_compile_params:
        expanded = compiled._process_parameters_for_postcompile(values)
        sql, values = expanded.statement, dict(expanded.parameters)
        processors.update(expanded.processors)
    escaped: Mapping[str, str] = compiled.escaped_bind_names or {}
    names = tuple(values)
    columns = compiled._result_columns
    row_processors = tuple(_result_processor(column.type, dialect) for column in columns)
    return _Compiled(
        sql=sql,
        names=tuple(escaped.get(name, name) for name in names),
        processors=tuple(processors.get(name) for name in names),
        carried={escaped.get(name, name): value for name, value in values.items()},
        positional=False,
        keys=tuple(column.keyname for column in columns),
        row_processors=row_processors if any(row_processors) else None,
    )


def _python_default(name: str, default: Any) -> Any:
    """A column's Python-side default value (only plain values are used in our tables)."""
    if default is None:
        return None
    if not default.is_scalar:
        raise TypeError(f"column {name!r}: only a plain default value runs on the driver")
    return default.arg


def _result_processor(type_: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    try:
        processor: Callable[[Any], Any] | None = type_._cached_result_processor(dialect, None)
    except Exception:  # one that wants the driver's column type: psycopg's own value is kept
        return None
    return processor
