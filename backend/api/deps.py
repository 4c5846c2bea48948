"""Dependencies shared by the routers."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from backend.errors import UnauthorizedError
from backend.principal import LOCAL_PRINCIPAL, Principal
from backend.services import Services

__all__ = ["IdempotencyKey", "PrincipalDep", "ServicesDep"]

_bearer = HTTPBearer(auto_error=False, description="An API key from CONSENTRY_API_KEYS.")


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_principal(
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    keys = services.settings.api_keys
    if not keys:
        return LOCAL_PRINCIPAL
    if credentials is None:
        raise UnauthorizedError("Send `Authorization: Bearer <api key>`.")
    for token, principal in keys.items():
        if hmac.compare_digest(token.encode(), credentials.credentials.encode()):
            return principal
    raise UnauthorizedError("Unknown API key.")


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
