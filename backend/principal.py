"""Who is calling. Every thread, project, note and approval belongs to one (tenant, user)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LOCAL_PRINCIPAL", "Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    tenant: str
    user: str

    @property
    def display(self) -> str:
        return f"{self.tenant}/{self.user}"


LOCAL_PRINCIPAL = Principal("local", "local")
"""The one user of keyless mode (``CONSENTRY_API_KEYS`` unset, loopback only)."""
