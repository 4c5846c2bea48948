"""Whether this process should get traffic (``GET /readyz``): its database answers, the schema
is the one this release needs, its background tasks are alive, and it is not shutting down.

Liveness (``GET /healthz``) only says the process answers; a load balancer or Kubernetes
readiness probe asks this instead, and takes a replica out of rotation while it drains.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from consentry.storage.db.database import DATABASE_ERRORS, Database, head_revision

__all__ = ["BackgroundTask", "Readiness"]


class BackgroundTask(Protocol):
    @property
    def running(self) -> bool:
        """Its task was started and has not ended."""
        ...


class Readiness:
    def __init__(self, db: Database, *, background: Mapping[str, BackgroundTask]) -> None:
        self._db = db
        self._background = dict(background)
        self._head = head_revision()  # read from the migration scripts once, at start-up
        self.draining = False
        """Set when the server was asked to stop: it finishes what runs, takes nothing new."""

    async def alive(self) -> None:
        """The database answers (liveness); its error otherwise."""
        await self._db.ping()

    async def checks(self) -> dict[str, str]:
        """Each check's state: ``ok``, or what is wrong."""
        checks: dict[str, str] = {}
        try:
            current = await self._db.schema_revision()
        except DATABASE_ERRORS:
            checks["database"] = "unreachable"
            checks["migrations"] = "unknown"
        else:
            checks["database"] = "ok"
            checks["migrations"] = (
                "ok" if current == self._head else f"at {current or 'nothing'}, needs {self._head}"
            )
        stopped = sorted(name for name, task in self._background.items() if not task.running)
        checks["workers"] = "ok" if not stopped else "stopped: " + ", ".join(stopped)
        checks["shutdown"] = "draining" if self.draining else "ok"
        return checks
