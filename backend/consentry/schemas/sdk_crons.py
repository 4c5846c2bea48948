"""The LangGraph SDK's cron bodies and answers (``client.crons``): a schedule of runs, on a thread
(``create_for_thread``) or each on a new thread (``create``).

A schedule is a standard cron expression of five fields (minute, hour, day of month, month, day
of week), or six with seconds last (croniter's reading, as the Agent Server's), in ``timezone``
(an IANA name; UTC when none).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field, JsonValue, StrictBool

from consentry.schemas.requests import RequestModel
from consentry.schemas.sdk import Count, MetadataFilter
from consentry.schemas.sdk_runs import RunFields, StreamMode

__all__ = [
    "CRON_FIELDS",
    "Cron",
    "CronCountRequest",
    "CronCreate",
    "CronSearchRequest",
    "CronSelectField",
    "CronUpdate",
]

CronSelectField = Literal[
    "cron_id",
    "assistant_id",
    "thread_id",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "now",
    "on_run_completed",
    "enabled",
]

_SCHEDULE = Field(
    min_length=1,
    max_length=128,
    description="A cron expression: five fields (`0 9 * * 1`: Mondays at 9:00), or six with "
    "seconds last (`* * * * * */10`: every ten seconds). 422 `invalid_schedule` otherwise.",
)
_TIMEZONE = Field(
    default=None,
    max_length=64,
    description="The IANA time zone the schedule is read in (`Europe/Paris`); UTC when none. "
    "422 `invalid_timezone` for an unknown one.",
)
_END_TIME = Field(
    default=None, description="No tick after this time (none: the schedule goes on for ever)."
)
_ON_RUN_COMPLETED = Field(
    default=None,
    description="A cron without a thread starts each run on a new thread: `delete` (the "
    "default) deletes it once the run has ended, unless a consent waits on it (then it is "
    "kept until answered); `keep` keeps it. Refused for a cron on a thread.",
)


class CronCreate(RunFields):
    """``POST /runs/crons`` and ``POST /threads/{thread_id}/runs/crons``: the schedule, and the
    run each tick starts (as a run request says it)."""

    schedule: str = _SCHEDULE
    timezone: str | None = _TIMEZONE
    end_time: AwareDatetime | None = _END_TIME
    enabled: StrictBool = Field(default=True, description="A disabled cron has no tick.")
    on_run_completed: Literal["delete", "keep"] | None = _ON_RUN_COMPLETED
    multitask_strategy: Literal["enqueue", "reject"] = Field(
        default="enqueue",
        description="When a tick comes while the thread has an active run: `enqueue` (the "
        "default) starts the tick's run after it; `reject` skips the tick (recorded). "
        "`interrupt` and `rollback` are not served for crons (422).",
    )


CRON_FIELDS = {"schedule", "timezone", "end_time", "enabled", "on_run_completed"}
"""The fields of a :class:`CronCreate` that are the cron's, not the run's."""


class CronUpdate(RequestModel):
    """``PATCH /runs/crons/{cron_id}``: what changes (a field not sent stays as it is). A run's
    field replaces the one the cron's runs were created with."""

    schedule: str | None = Field(default=None, min_length=1, max_length=128)
    timezone: str | None = _TIMEZONE
    end_time: AwareDatetime | None = Field(
        default=None, description="`null` sent: no end any more."
    )
    enabled: StrictBool | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    input: dict[str, JsonValue] | None = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_mode: StreamMode | list[StreamMode] | None = None
    stream_subgraphs: StrictBool | None = None
    stream_resumable: StrictBool | None = None
    durability: Literal["sync"] | None = None
    webhook: str | None = Field(default=None, max_length=2048)


class CronSearchRequest(RequestModel):
    """``POST /runs/crons/search``: the caller's crons that match every filter."""

    assistant_id: str | None = Field(default=None, max_length=64)
    thread_id: str | None = Field(default=None, max_length=64)
    enabled: StrictBool | None = None
    metadata: MetadataFilter | None = None
    limit: Count = Field(default=10, ge=1, le=1000)
    offset: Count = Field(default=0, ge=0, le=1_000_000)
    sort_by: (
        Literal[
            "cron_id",
            "assistant_id",
            "thread_id",
            "created_at",
            "updated_at",
            "next_run_date",
            "end_time",
        ]
        | None
    ) = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[CronSelectField] | None = Field(
        default=None, min_length=1, description="Only these fields of each cron."
    )


class CronCountRequest(RequestModel):
    """``POST /runs/crons/count``: how many of the caller's crons match."""

    assistant_id: str | None = Field(default=None, max_length=64)
    thread_id: str | None = Field(default=None, max_length=64)
    metadata: MetadataFilter | None = None


class Cron(BaseModel):
    """A cron, as the SDK reads it."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    on_run_completed: Literal["delete", "keep"] | None
    end_time: datetime | None
    schedule: str
    timezone: str | None
    created_at: datetime
    updated_at: datetime
    payload: dict[str, Any] = Field(description="The run each tick starts, as a run request.")
    user_id: str
    next_run_date: datetime | None = Field(
        description="When its next tick is due (none: disabled, or past its `end_time`)."
    )
    metadata: dict[str, Any]
    enabled: bool
