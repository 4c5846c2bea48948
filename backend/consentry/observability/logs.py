"""Logs as JSON lines, each carrying the ids of what it is about: the request, the principal, the
thread and the run.

The ids live in context variables: the request middleware (``api.http.request_ids``) binds the
request id, authentication binds the principal, and a run binds its thread and run ids in its own
task (which starts with a copy of the request's context, so a run's lines also name the request
that started it). Only ids and a short list of known fields are written: never a message, a note, a
proposal or a key. ``CONSENTRY_LOG_FORMAT=text`` gives readable lines for a terminal instead."""

from __future__ import annotations

import json
import logging
import logging.config
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = [
    "JsonLogFormatter",
    "bind_principal",
    "bind_request",
    "bind_run",
    "configure_logging",
    "logging_config",
]

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
principal: ContextVar[str | None] = ContextVar("principal", default=None)
thread_id: ContextVar[str | None] = ContextVar("thread_id", default=None)
run_id: ContextVar[str | None] = ContextVar("run_id", default=None)
_CONTEXT = (
    ("request_id", request_id),
    ("principal", principal),
    ("thread_id", thread_id),
    ("run_id", run_id),
)
# Fields a log call may add with ``extra=``: ids, codes, counts and timings, never free text.
_FIELDS = (
    "thread_id",
    "run_id",
    "approval_id",
    "code",
    "graph",
    "method",
    "path",
    "status",
    "outcome",
    "duration_ms",
    "client",
)


def bind_request(value: str) -> None:
    request_id.set(value)


def bind_principal(value: str) -> None:
    principal.set(value)


def bind_run(*, thread: str, run: str) -> None:
    thread_id.set(thread)
    run_id.set(run)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message``, the context's ids,
    the known ``extra`` fields, and ``exc_type`` / ``traceback`` for an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, var in _CONTEXT:
            value = var.get()
            if value is not None:
                line[name] = value
        for name in _FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            line["exc_type"] = record.exc_info[0].__name__
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class AtLeast(logging.Filter):
    """Lets through only the records of ``level`` or above."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level


def logging_config(
    *, level: str = "info", log_format: Literal["json", "text"] = "json"
) -> dict[str, Any]:
    """The root logger (and uvicorn's) to stderr in ``log_format`` (``consentry serve`` hands it
    to uvicorn). Uvicorn's own access log is off: each request's line comes from
    ``api.http.request_ids``, with its ids. Uvicorn's start and stop lines and the migrations' lines
    are shown only at ``debug``: start-up is the three lines ``consentry serve`` logs, and their
    warnings and errors always show."""
    chosen = logging.getLevelNamesMapping().get(level.upper(), logging.DEBUG)  # uvicorn's trace
    shown = chosen if chosen <= logging.DEBUG else max(chosen, logging.WARNING)
    formatter: dict[str, Any] = (
        {"()": JsonLogFormatter}
        if log_format == "json"
        else {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    config: dict[str, Any] = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"consentry": formatter},
        "filters": {"chatter": {"()": AtLeast, "level": shown}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "consentry",
                "stream": sys.stderr,
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            # Filters, not levels: uvicorn sets its loggers' levels itself, after this.
            "uvicorn.error": {"handlers": [], "propagate": True, "filters": ["chatter"]},
            "alembic.runtime.migration": {"propagate": True, "filters": ["chatter"]},
            "uvicorn.access": {"handlers": [], "propagate": False, "level": "WARNING"},
        },
    }
    return config


def configure_logging(*, level: str = "info", log_format: Literal["json", "text"] = "json") -> None:
    logging.config.dictConfig(logging_config(level=level, log_format=log_format))
