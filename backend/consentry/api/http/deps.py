"""Dependencies shared by the routers: the caller (``PrincipalDep``), the ``Idempotency-Key``
header, and each narrow service a route uses (``RunsDep``, ``ThreadsDep``, ``SettingsDep``...), so
a route's signature says what it touches. Every getter is ``async`` (FastAPI runs a plain ``def``
dependency in a worker thread)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from consentry.errors import UnauthorizedError
from consentry.observability.logs import bind_principal
from consentry.observability.metrics import Metrics
from consentry.principal import LOCAL_PRINCIPAL, Principal
from consentry.runtime.assistants import Assistants
from consentry.runtime.consents import ApprovalInbox
from consentry.runtime.crons import Crons
from consentry.runtime.notes import NotesService
from consentry.runtime.readiness import Readiness
from consentry.runtime.runs import (
    RunRecords,
    RunRollback,
    RunService,
    ThreadReader,
    ThreadWriter,
)
from consentry.runtime.store import ItemStore
from consentry.runtime.webhooks import WebhookHosts
from consentry.settings import Settings
from consentry_graphs.registry import GraphSpec

__all__ = [
    "ApprovalsDep",
    "AssistantsDep",
    "CronsDep",
    "GraphsDep",
    "IdempotencyKey",
    "MetricsDep",
    "NotesDep",
    "PrincipalDep",
    "ReadinessDep",
    "RunRecordsDep",
    "RunRollbackDep",
    "RunsDep",
    "SettingsDep",
    "StoreDep",
    "ThreadWriterDep",
    "ThreadsDep",
    "WebhookHostsDep",
    "authenticate",
    "needs_principal",
    "request_api_key",
]

_bearer = HTTPBearer(auto_error=False, description="An API key from CONSENTRY_API_KEYS.")
_api_key_header = APIKeyHeader(
    name="x-api-key",
    auto_error=False,
    description="The same API key, in the header the LangGraph SDK sends "
    "(`Authorization: Bearer` wins when both are sent).",
)


def _service(field: str) -> Any:
    """The dependency on one field of the app's ``Services`` (``consentry.services``)."""

    async def get(request: Request) -> Any:
        return getattr(request.app.state.services, field)

    get.__name__ = f"get_{field}"
    return Depends(get)


SettingsDep = Annotated[Settings, _service("settings")]
RunsDep = Annotated[RunService, _service("runs")]
ThreadsDep = Annotated[ThreadReader, _service("threads")]
ThreadWriterDep = Annotated[ThreadWriter, _service("thread_writer")]
AssistantsDep = Annotated[Assistants, _service("assistants")]
RunRecordsDep = Annotated[RunRecords, _service("run_records")]
RunRollbackDep = Annotated[RunRollback, _service("run_rollback")]
StoreDep = Annotated[ItemStore, _service("store")]
CronsDep = Annotated[Crons, _service("crons")]
ApprovalsDep = Annotated[ApprovalInbox, _service("approvals")]
GraphsDep = Annotated[Mapping[str, GraphSpec], _service("graphs")]
ReadinessDep = Annotated[Readiness, _service("readiness")]
MetricsDep = Annotated[Metrics, _service("metrics")]
NotesDep = Annotated[NotesService, _service("notes")]
WebhookHostsDep = Annotated[WebhookHosts, _service("webhook_hosts")]


async def get_principal(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key_header)],
) -> Principal:
    principal = authenticate(settings.api_keys, _key_sent(credentials, api_key))
    bind_principal(principal.display)  # on this request's log lines
    return principal


def authenticate(keys: Mapping[str, Principal], key: str | None) -> Principal:
    """The principal of the API key sent, or ``UnauthorizedError`` (no keys: the local user)."""
    if not keys:
        return LOCAL_PRINCIPAL
    if key is None:
        raise UnauthorizedError("Send `Authorization: Bearer <api key>` (or `x-api-key`).")
    for token, principal in keys.items():
        if hmac.compare_digest(token.encode(), key.encode()):
            return principal
    raise UnauthorizedError("Unknown API key.")


def _key_sent(credentials: HTTPAuthorizationCredentials | None, api_key: str | None) -> str | None:
    """The bearer token, else the ``x-api-key`` header (the LangGraph SDK's)."""
    return credentials.credentials if credentials is not None else api_key


async def request_api_key(request: Request) -> str | None:
    """The API key a request sent, as :func:`get_principal` reads it."""
    return _key_sent(await _bearer(request), await _api_key_header(request))


def needs_principal(route: object) -> bool:
    """Whether a route authenticates its caller (depends on ``get_principal``)."""
    pending = [route.dependant] if isinstance(route, APIRoute) else []
    while pending:
        dependant = pending.pop()
        if dependant.call is get_principal:
            return True
        pending.extend(dependant.dependencies)
    return False


PrincipalDep = Annotated[Principal, Depends(get_principal)]


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Retry safely: the same key and body return the first response again "
        "(keys are kept at least 24 hours).",
    ),
]
