"""``GET /v1/me``: the caller, as the server knows it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from consentry.principal import Principal

__all__ = ["Me"]


class Me(BaseModel):
    """Who the request's key names: the stable id, its parts, and a display name."""

    principal: str = Field(
        description="`tenant/user`: the stable id records carry (`decided_by`, audit actors)."
    )
    tenant: str
    user: str
    name: str | None = Field(
        description="The display name of the caller's key (`CONSENTRY_API_KEYS` entry "
        "`token=tenant:user:Display Name`); null when the key has none, and in keyless local "
        "mode."
    )

    @classmethod
    def of(cls, principal: Principal) -> Me:
        return cls(
            principal=principal.display,
            tenant=principal.tenant,
            user=principal.user,
            name=principal.name,
        )
