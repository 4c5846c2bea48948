"""The audit trail of a thread."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["AuditRecord", "AuditTrail"]


class AuditRecord(BaseModel):
    seq: int = Field(description="Position in the whole audit log; grows with time.")
    action: str = Field(
        description="`run_started`, `run_ended`, `consent_requested`, `consent_decided`, "
        "`consent_expired`, `consent_cancelled`, `consent_superseded`, `state_updated`, "
        "`thread_copied`, `run_deleted`, `run_rolled_back`, `effect_applied`, `cron_ticked`, "
        "`cron_tick_skipped` or `error`."
    )
    actor: str = Field(description="`tenant/user`, `policy` or `system`.")
    run_id: str | None
    approval_id: str | None
    data: dict[str, Any]
    at: datetime


class AuditTrail(BaseModel):
    thread_id: str
    records: list[AuditRecord]
