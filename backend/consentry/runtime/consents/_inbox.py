"""The approvals inbox: the caller's consents across threads, and decisions taken from it."""

from __future__ import annotations

import base64
from datetime import datetime

from consentry.errors import InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.consents._gate import STATUS_OF
from consentry.schemas.approvals import (
    Approval,
    ApprovalList,
    ApprovalStatus,
    DecisionAccepted,
    DecisionRequest,
)
from consentry.storage import approvals as repo
from consentry.storage.db.database import Database

__all__ = ["ApprovalInbox", "accepted"]


def _cursor(created_at: datetime, approval_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{approval_id}".encode()).decode()


def _parse_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        created_at, _, approval_id = base64.urlsafe_b64decode(cursor).decode().partition("|")
        when = datetime.fromisoformat(created_at)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None or not approval_id:
        raise InvalidRequestError(
            "This cursor is not one this API returned.", code="invalid_cursor"
        )
    return when, approval_id


class ApprovalInbox:
    def __init__(self, *, db: Database) -> None:
        self._db = db

    async def list_approvals(
        self, owner: Principal, *, status: ApprovalStatus | None, limit: int, cursor: str | None
    ) -> ApprovalList:
        before = _parse_cursor(cursor) if cursor else None
        async with self._db.read() as conn:
            rows = await repo.list_approvals(
                conn, owner, status=status, limit=limit + 1, before=before
            )
        page = rows[:limit]
        more = len(rows) > limit
        return ApprovalList(
            approvals=[repo.to_approval(row) for row in page],
            next_cursor=_cursor(page[-1].created_at, page[-1].id) if more else None,
        )

    async def get(self, owner: Principal, approval_id: str) -> Approval:
        async with self._db.read() as conn:
            row = await repo.find_approval(conn, owner, approval_id)
        if row is None:
            raise NotFoundError.of("approval", approval_id)
        return repo.to_approval(row)


def accepted(
    approval_id: str, decision: DecisionRequest, *, thread_id: str, run_id: str
) -> DecisionAccepted:
    """The 202 of a decision taken from the inbox (and what its idempotent replay answers)."""
    return DecisionAccepted(
        approval_id=approval_id,
        thread_id=thread_id,
        run_id=run_id,
        status=STATUS_OF[decision.decision],
    )
