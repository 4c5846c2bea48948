"""Who is calling. Every thread, project, note and approval belongs to one (tenant, user)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["LOCAL_PRINCIPAL", "Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller: its identity is (``tenant``, ``user``); ``name`` is how people see it.

    Two API keys may name the same (tenant, user) with different display names: they are the
    same principal (``name`` takes no part in equality), and records keep ``display``, never the
    name, as the stable id."""

    tenant: str
    user: str
    name: str | None = field(default=None, compare=False)
    """The display name of ``CONSENTRY_API_KEYS`` (``token=tenant:user:Display Name``), or None."""

    @property
    def display(self) -> str:
        """``tenant/user``: the stable id written in records (``decided_by``, audit actors)."""
        return f"{self.tenant}/{self.user}"


LOCAL_PRINCIPAL = Principal("local", "local")
"""The one user of keyless mode (``CONSENTRY_API_KEYS`` unset, loopback only)."""
