"""``Crons``: an owner's crons, created, read, changed and deleted (the SDK's ``client.crons``);
the scheduler (``_scheduler``) takes their ticks.

A cron's next tick (``next_run_date``) is planned when it is created, and again whenever its
schedule, time zone, end or ``enabled`` changes: the first tick after that moment, none past the
end or while disabled. A run's fields are checked by the caller (the SDK face) before they
reach here, as a run request's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import uuid4

from consentry.errors import InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.crons._schedules import Schedule
from consentry.schemas.sdk_crons import Cron
from consentry.storage import crons as crons_repo
from consentry.storage import threads as threads_repo
from consentry.storage.crons import CronOrder, CronRecord
from consentry.storage.db.database import Database
from consentry.storage.metadata_filters import MetadataValue

__all__ = ["CronPlan", "Crons", "cron_of"]

_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class CronPlan:
    """When a cron ticks: its schedule, time zone, end and whether it is enabled."""

    schedule: str
    timezone: str | None
    end_time: datetime | None
    enabled: bool

    def check(self, now: datetime) -> None:
        """422 ``invalid_schedule`` or ``invalid_timezone`` for a plan that cannot tick, or
        names no time that comes (February 30th)."""
        if Schedule.of(self.schedule, self.timezone).next_after(now) is None:
            raise InvalidRequestError(
                "The schedule names no time that comes (such as February 30th).",
                code="invalid_schedule",
                details={"schedule": self.schedule},
            )

    def next_tick(self, now: datetime) -> datetime | None:
        """Its first tick after ``now`` (None: disabled, or none before its end)."""
        if not self.enabled:
            return None
        following = Schedule.of(self.schedule, self.timezone).next_after(now)
        if following is None or (self.end_time is not None and following > self.end_time):
            return None
        return following


class Crons:
    def __init__(self, *, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def create(
        self,
        owner: Principal,
        *,
        plan: CronPlan,
        assistant_id: str,
        thread_id: str | None,
        payload: dict[str, Any],
        metadata: dict[str, Any] | None,
        on_run_completed: Literal["delete", "keep"] | None,
    ) -> Cron:
        """A new cron of the owner, on the owner's thread (404 ``thread_not_found`` for
        another's) or, with none, each tick's run on a new thread."""
        now = self._clock()
        plan.check(now)  # 422 before anything is stored
        if thread_id is not None and on_run_completed is not None:
            raise InvalidRequestError(
                "`on_run_completed` is for a cron without a thread (each run on a new one).",
                code="unsupported_field",
                details={"fields": ["on_run_completed"]},
            )
        cron_id = str(uuid4())
        async with self._db.write() as conn:
            if thread_id is not None:
                await threads_repo.get_thread(conn, owner, thread_id)
            await crons_repo.add_cron(
                conn,
                owner,
                {
                    "id": cron_id,
                    "assistant_id": assistant_id,
                    "thread_id": thread_id,
                    "schedule": plan.schedule,
                    "timezone": plan.timezone,
                    "end_time": plan.end_time,
                    "payload": payload,
                    "metadata": metadata,
                    "on_run_completed": (
                        None if thread_id is not None else on_run_completed or "delete"
                    ),
                    "enabled": plan.enabled,
                    "next_run_at": plan.next_tick(now),
                    "created_at": now,
                    "updated_at": now,
                },
            )
            return cron_of(await crons_repo.get_cron(conn, owner, cron_id))

    def now(self) -> datetime:
        """The server's time, as the crons' schedules read it."""
        return self._clock()

    async def get(self, owner: Principal, cron_id: str) -> Cron:
        async with self._db.read() as conn:
            return cron_of(await crons_repo.get_cron(conn, owner, cron_id))

    async def search(
        self,
        owner: Principal,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: Mapping[str, MetadataValue],
        limit: int,
        offset: int,
        order_by: CronOrder,
        descending: bool,
    ) -> list[Cron]:
        async with self._db.read() as conn:
            found = await crons_repo.search_crons(
                conn,
                owner,
                assistant_id=assistant_id,
                thread_id=thread_id,
                enabled=enabled,
                metadata=metadata,
                limit=limit,
                offset=offset,
                order_by=order_by,
                descending=descending,
            )
        return [cron_of(record) for record in found]

    async def count(
        self,
        owner: Principal,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        metadata: Mapping[str, MetadataValue],
    ) -> int:
        async with self._db.read() as conn:
            return await crons_repo.count_crons(
                conn, owner, assistant_id=assistant_id, thread_id=thread_id, metadata=metadata
            )

    async def update(
        self,
        owner: Principal,
        cron_id: str,
        *,
        plan: CronPlan | None,
        payload: dict[str, Any] | None,
        metadata: dict[str, Any] | None = _UNSET,
        on_run_completed: Literal["delete", "keep"] | None = None,
    ) -> Cron:
        """Change the owner's cron: its plan (its next tick planned again from now), the run
        its ticks start, its metadata."""
        now = self._clock()
        if plan is not None:
            plan.check(now)
        values: dict[str, Any] = {"updated_at": now}
        if plan is not None:
            values |= {
                "schedule": plan.schedule,
                "timezone": plan.timezone,
                "end_time": plan.end_time,
                "enabled": plan.enabled,
                "next_run_at": plan.next_tick(now),
            }
        if payload is not None:
            values["payload"] = payload
        if metadata is not _UNSET:
            values["metadata"] = metadata
        async with self._db.write() as conn:
            if on_run_completed is not None:
                current = await crons_repo.get_cron(conn, owner, cron_id)
                if current.thread_id is not None:
                    raise InvalidRequestError(
                        "`on_run_completed` is for a cron without a thread.",
                        code="unsupported_field",
                        details={"fields": ["on_run_completed"]},
                    )
                values["on_run_completed"] = on_run_completed
            await crons_repo.update_cron(conn, owner, cron_id, values)
            return cron_of(await crons_repo.get_cron(conn, owner, cron_id))

    async def delete(self, owner: Principal, cron_id: str) -> None:
        async with self._db.write() as conn:
            await crons_repo.delete_cron(conn, owner, cron_id)


def cron_of(record: CronRecord) -> Cron:
    """A cron as the SDK reads it."""
    completed = record.on_run_completed
    return Cron(
        cron_id=record.id,
        assistant_id=record.assistant_id,
        thread_id=record.thread_id,
        on_run_completed="keep" if completed == "keep" else "delete" if completed else None,
        end_time=record.end_time,
        schedule=record.schedule,
        timezone=record.timezone,
        created_at=record.created_at,
        updated_at=record.updated_at,
        payload=record.payload,
        user_id=record.user_id,
        next_run_date=record.next_run_at,
        metadata=record.metadata or {},
        enabled=record.enabled,
    )
