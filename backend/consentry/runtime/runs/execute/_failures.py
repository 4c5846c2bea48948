"""How a failure inside a run is reported: a stable code, a safe message, and whether to retry."""

from __future__ import annotations

from dataclasses import dataclass

from consentry.errors import ConflictError, ConsentryError, TooManyRequestsError
from consentry.storage.db.database import (
    Database,
    is_connection_lost,
    is_database_unavailable,
    is_storage_full,
    is_write_refused,
)
from consentry_graphs.consent import ConsentNotGrantedError
from consentry_graphs.declared_kinds import GraphDefinitionError
from consentry_graphs.models import ModelFaultCode, classify_fault

__all__ = ["RunFailure", "database_lost", "describe_failure"]


@dataclass(frozen=True)
class RunFailure:
    code: str
    message: str
    retryable: bool
    """Whether sending the same thing again later may work (``POST /v1/threads/{id}/retry``)."""


_NOT_GRANTED = (
    "The graph went to apply a consent's effect, but no approval of it is on record; nothing "
    "was applied."
)

_MODEL_FAULTS: dict[ModelFaultCode, str] = {
    "model_rate_limited": "The model provider is rate limiting us; try again in a moment.",
    "model_quota_exhausted": "The model provider's quota for this deployment is used up.",
    "model_unavailable": "The model provider did not answer; try again in a moment.",
    "model_auth_failed": "The model provider refused this deployment's credentials.",
    "model_rejected": "The model provider refused the request.",
}


def database_lost(db: Database, exc: BaseException) -> bool:
    """Whether ``exc``, met by a run, stops it for a takeover (``_takeover_stops``) rather than
    failing it: on PostgreSQL its connection broke (what the database holds is unknown); on
    SQLite the file refused a write for now (its disk full, its file locked past the busy
    timeout), which this process's ``LeftOpenRuns`` closer retries once it takes writes."""
    return is_connection_lost(exc) if db.is_postgres else is_write_refused(exc)


def describe_failure(exc: BaseException) -> RunFailure:
    """Never expose ``str(exc)``: provider messages can carry prompts, keys or internals. The
    exceptions are messages Consentry wrote: a mistake in the graph's definition, for the
    graph's developer (``GraphDefinitionError``: its kind names, nothing of the run), and one of
    its own errors (``ConsentryError``: what the API would answer)."""
    if isinstance(exc, GraphDefinitionError):
        return RunFailure(exc.code, str(exc), False)
    if isinstance(exc, ConsentNotGrantedError):
        return RunFailure("consent_not_granted", _NOT_GRANTED, False)
    if isinstance(exc, ConsentryError):
        # One of ours, raised by a store the graph called (a note's version moved on): its
        # message is ours too, and its HTTP status is not a model provider's.
        retryable = isinstance(exc, ConflictError | TooManyRequestsError)
        return RunFailure(exc.code, exc.message, retryable)
    fault = classify_fault(exc)
    if fault is not None:
        return RunFailure(fault.code, _MODEL_FAULTS[fault.code], fault.retryable)
    if is_storage_full(exc):
        return RunFailure("storage_full", "The database's disk is full: nothing more stored.", True)
    if is_database_unavailable(exc):
        return RunFailure("database_unavailable", "The database could not be reached.", True)
    return RunFailure("internal_error", "The run failed unexpectedly.", False)
