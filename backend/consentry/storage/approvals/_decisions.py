"""Writing approvals: a consent request's pending row, and each transition out of ``pending``
(decided, expired, cancelled) or back into it (reopened), every one a compare-and-set on
``status`` (see ``storage.approvals``' docstring)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.approvals import ApprovalStatus
from consentry.schemas.events import ConsentEvent
from consentry.storage.approvals._records import DECIDED_BY_NAME, live_at
from consentry.storage.db.database import DbConnection, execute, execute_unread
from consentry.storage.db.direct import direct
from consentry.storage.db.postgres_connection import PostgresConnection
from consentry.storage.tables import UTCDateTime, approvals

_INSERT = direct(approvals.insert())
_DECIDE = direct(
    approvals.update()
    .where(
        approvals.c.id == sa.bindparam("p_id"),
        approvals.c.status == "pending",
        live_at(sa.bindparam("p_now", type_=UTCDateTime)),
    )
    .values(
        status=sa.bindparam("p_status"),
        decided_by=sa.bindparam("p_by"),
        decision=sa.bindparam("p_decision", type_=sa.JSON),
        edited=sa.bindparam("p_edited", type_=sa.JSON),
        comment=sa.bindparam("p_comment"),
        decided_at=sa.bindparam("p_now", type_=UTCDateTime),
    )
)


async def insert_approval(
    conn: DbConnection,
    owner: Principal,
    event: ConsentEvent,
    *,
    proposal_hash: str,
    now: datetime,
) -> None:
    """Nobody reads its result: it goes with the transaction's next statement or its commit
    (``database.execute_unread``); a conflict fails the transaction there."""
    await execute_unread(
        conn,
        _INSERT,
        {
            "id": event.approval_id,
            "thread_id": event.thread_id,
            "run_id": event.run_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "kind": event.kind,
            "status": "pending",
            "event": event.model_dump(mode="json"),
            "proposal_hash": proposal_hash,
            "created_at": now,
            "expires_at": event.expires_at,
        },
    )


async def decide_approval(
    conn: DbConnection,
    approval_id: str,
    *,
    status: ApprovalStatus,
    decided_by: str,
    decided_by_name: str | None = None,
    decision: dict[str, Any],
    now: datetime,
    with_next: bool = False,
) -> bool:
    """``pending → status`` unless expired; False when somebody else decided first.
    ``decided_by_name`` is stored beside the decision (see ``storage.approvals``' docstring).
    ``with_next``: on PostgreSQL the change goes with the transaction's next statement, and when
    it changes no row it fails that statement's message and the transaction
    (:func:`~consentry.storage.db.postgres_connection.refused_one_row_change` says so): True
    here, the caller reads the approval again after that failure."""
    parameters = {
        "p_id": approval_id,
        "p_now": now,
        "p_status": status,
        "p_by": decided_by,
        "p_decision": {**decision, DECIDED_BY_NAME: decided_by_name},
        "p_edited": decision.get("edited"),
        "p_comment": decision.get("comment"),
    }
    if with_next and isinstance(conn, PostgresConnection):
        conn.defer_one_row_change(_DECIDE, parameters)
        return True
    result = await execute(conn, _DECIDE, parameters)
    return result.rowcount == 1


async def expire_approval(conn: DbConnection, approval_id: str, *, now: datetime) -> bool:
    """``pending → expired`` once its deadline passed; False when it was decided first."""
    result = await conn.execute(
        approvals.update()
        .where(
            approvals.c.id == approval_id,
            approvals.c.status == "pending",
            approvals.c.expires_at <= now,
        )
        .values(
            status="expired",
            decided_by="system",
            decision={
                "approval_id": approval_id,
                "decision": "expire",
                "edited": None,
                "comment": None,
                "decided_by": "system",
            },
            decided_at=now,
        )
    )
    return result.rowcount == 1


async def reopen_approval(conn: DbConnection, approval_id: str) -> bool:
    """``answered → pending``: the graph raised on the answer and still waits for one."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.id == approval_id, approvals.c.status == "answered")
        .values(
            status="pending",
            decided_by=None,
            decided_at=None,
            decision=None,
            edited=None,
            comment=None,
        )
    )
    return result.rowcount == 1


async def cancel_approval(conn: DbConnection, approval_id: str, *, now: datetime) -> bool:
    """``pending → cancelled``: the graph no longer waits for it."""
    return await _close(conn, approval_id, "cancelled", now=now)


async def supersede_approval(conn: DbConnection, approval_id: str, *, now: datetime) -> bool:
    """``pending → superseded``: the thread's head moved to another branch of its history."""
    return await _close(conn, approval_id, "superseded", now=now)


async def _close(
    conn: DbConnection,
    approval_id: str,
    status: Literal["cancelled", "superseded"],
    *,
    now: datetime,
) -> bool:
    """``pending → status``, by the system; False when it was not pending."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.id == approval_id, approvals.c.status == "pending")
        .values(status=status, decided_by="system", decided_at=now)
    )
    return result.rowcount == 1


async def cancel_run_approvals(conn: DbConnection, run_id: str, *, now: datetime) -> int:
    """The pending approvals a cancelled run asked for become ``cancelled``."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.run_id == run_id, approvals.c.status == "pending")
        .values(status="cancelled", decided_by="system", decided_at=now)
    )
    return result.rowcount
