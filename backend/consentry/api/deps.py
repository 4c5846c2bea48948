"""Dependencies shared by the routers."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from consentry.errors import UnauthorizedError
from consentry.observability.logs import bind_principal
from consentry.principal import LOCAL_PRINCIPAL, Principal
from consentry.services import Services

__all__ = ["IdempotencyKey", "PrincipalDep", "ServicesDep", "authenticate", "needs_principal"]

_bearer = HTTPBearer(auto_error=False, description="An API key from CONSENTRY_API_KEYS.")


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_principal(
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    principal = authenticate(services.settings.api_keys, credentials)
    bind_principal(principal.display)  # on this request's log lines
    return principal


def authenticate(
    keys: Mapping[str, Principal], credentials: HTTPAuthorizationCredentials | None
) -> Principal:
    """The principal of the bearer token, or ``UnauthorizedError`` (no keys: the local user)."""
    if not keys:
        return LOCAL_PRINCIPAL
    if credentials is None:
        raise UnauthorizedError("Send `Authorization: Bearer <api key>`.")
    for token, principal in keys.items():
        if hmac.compare_digest(token.encode(), credentials.credentials.encode()):
            return principal
    raise UnauthorizedError("Unknown API key.")


async def bearer_credentials(request: Request) -> HTTPAuthorizationCredentials | None:
    return await _bearer(request)


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
