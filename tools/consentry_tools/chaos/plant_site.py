"""Where a planted fault goes: the settled trial, its threads ordered so that each fault lands
in a thread no other fault damaged, when there is one (``faults``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from consentry.stored import Database
from consentry_tools.chaos.observations import ClientLog, KeyedRequest
from consentry_tools.chaos.records import StoredThread
from consentry_tools.chaos.snapshot import Snapshot

__all__ = ["NoTargetError", "Plant", "PlantSite", "now"]


class NoTargetError(LookupError):
    """The trial left no thread this fault can be planted in."""


@dataclass(frozen=True)
class PlantSite:
    """What a fault may damage: the settled trial. Threads come least damaged first, and threads
    left running last (their replay cannot be read)."""

    db: Database
    snapshot: Snapshot
    clients: Sequence[ClientLog]
    used: Mapping[str, int]
    """How many faults each thread got already."""

    def _order(self, thread_id: str) -> tuple[bool, int]:
        stored = self.snapshot.stored.get(thread_id)
        running = stored is None or stored.thread.status == "running"
        return (running, self.used.get(thread_id, 0))

    def threads(self) -> list[tuple[str, StoredThread]]:
        ordered = sorted(self.snapshot.thread_ids, key=self._order)
        return [(t, self.snapshot.stored[t]) for t in ordered]

    def acknowledged(self, kind: str) -> list[tuple[KeyedRequest, str]]:
        """The clients' acknowledged requests of ``kind`` with their thread, in thread order."""
        found = [
            (request, str(ack.thread_id))
            for client in self.clients
            for request in client.requests
            if request.kind == kind and (ack := request.first_acknowledged) and ack.thread_id
        ]
        return sorted(found, key=lambda pair: self._order(pair[1]))


Plant = Callable[[PlantSite], Awaitable[str]]
"""Damage one thread; its id."""


def now() -> datetime:
    return datetime.now(UTC)
