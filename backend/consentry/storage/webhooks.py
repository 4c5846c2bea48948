"""The webhook outbox: a run's end to post, queued in the transaction that ends the run, then
taken by one sender at a time and marked with each attempt's outcome.

Taking a delivery is one compare-and-set (``status = 'pending' AND next_attempt_at <= now``)
that moves ``next_attempt_at`` to the end of the taker's lease: a second replica's take finds
the row not due and writes nothing, and a replica killed mid-send leaves a row that is due again
once its lease has expired (another replica sends it; the receiver dedupes on the delivery id).
An outcome is recorded only by the attempt that holds the row (its owner and attempt number),
so a late answer of an attempt whose lease expired changes nothing. A settled row (``delivered``,
``failed``) drops the values it was posted with at once, and the row itself once it is older than
the event retention (:func:`prune_settled_deliveries`, by the expiry sweeper).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.schemas.events import TerminalReason
from consentry.storage.db.database import DbConnection, execute_unread, notify_at_commit
from consentry.storage.tables import UTCDateTime, runs, webhook_deliveries

__all__ = [
    "WEBHOOKS_CHANNEL",
    "Delivery",
    "DeliveryStatus",
    "due_deliveries",
    "fail_expired_deliveries",
    "next_attempt_due",
    "prune_settled_deliveries",
    "queue_delivery",
    "record_attempt",
    "take_delivery",
]

WEBHOOKS_CHANNEL = "consentry_webhooks"
"""PostgreSQL channel notified (payload: a delivery id) when a run's end queued a delivery."""

DeliveryStatus = Literal["pending", "delivered", "failed"]

_COPIED = ("url", "run_started_at", "metadata")
"""What the delivery takes from the run's row in the same statement: its webhook, its start, the
client's metadata."""

_QUEUE = webhook_deliveries.insert().from_select(
    [
        "id",
        "run_id",
        "thread_id",
        "tenant",
        "graph",
        "reason",
        "error_code",
        "run_values",
        "run_ended_at",
        "status",
        "attempts",
        "next_attempt_at",
        "created_at",
        "updated_at",
        *_COPIED,
    ],
    sa.select(
        sa.bindparam("p_id", type_=sa.String),
        runs.c.id,
        runs.c.thread_id,
        sa.bindparam("p_tenant", type_=sa.String),
        sa.bindparam("p_graph", type_=sa.String),
        sa.bindparam("p_reason", type_=sa.String),
        sa.bindparam("p_error", type_=sa.String),
        sa.bindparam("p_values", type_=sa.JSON(none_as_null=True)),
        sa.bindparam("p_now", type_=UTCDateTime),
        sa.literal("pending"),
        sa.literal(0),
        sa.bindparam("p_now", type_=UTCDateTime),
        sa.bindparam("p_now", type_=UTCDateTime),
        sa.bindparam("p_now", type_=UTCDateTime),
        runs.c.webhook,
        runs.c.started_at,
        runs.c.metadata,
    ).where(runs.c.id == sa.bindparam("p_run"), runs.c.webhook.is_not(None)),
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """A delivery taken for an attempt (:func:`take_delivery`): what its body is built from."""

    id: str
    run_id: str
    thread_id: str
    tenant: str
    url: str
    graph: str
    run_started_at: datetime
    run_ended_at: datetime
    reason: TerminalReason
    error_code: str | None
    metadata: dict[str, Any] | None
    run_values: dict[str, Any] | None
    attempts: int
    """This attempt's number (1 for the first)."""
    created_at: datetime


async def queue_delivery(
    conn: DbConnection,
    *,
    delivery_id: str,
    run_id: str,
    thread_id: str,
    tenant: str,
    graph: str,
    reason: TerminalReason,
    error_code: str | None,
    values: dict[str, Any] | None,
    now: datetime,
) -> None:
    """In the transaction that ends run ``run_id``: queue the post of its end to its webhook
    (nothing when its row names none), due at once, and wake the senders once it commits."""
    await execute_unread(
        conn,
        _QUEUE,
        {
            "p_id": delivery_id,
            "p_run": run_id,
            "p_tenant": tenant,
            "p_graph": graph,
            "p_reason": reason,
            "p_error": error_code,
            "p_values": values,
            "p_now": now,
        },
    )
    await notify_at_commit(conn, WEBHOOKS_CHANNEL, delivery_id)


_DUE = (webhook_deliveries.c.status == "pending",)


async def due_deliveries(conn: DbConnection, *, now: datetime, limit: int) -> list[str]:
    """Pending deliveries due by ``now``, the longest due first."""
    rows = await conn.execute(
        sa.select(webhook_deliveries.c.id)
        .where(*_DUE, webhook_deliveries.c.next_attempt_at <= now)
        .order_by(webhook_deliveries.c.next_attempt_at)
        .limit(limit)
    )
    return [str(row.id) for row in rows]


async def next_attempt_due(conn: DbConnection) -> datetime | None:
    """When the first pending delivery is due (None: nothing is pending)."""
    found = await conn.scalar(
        sa.select(sa.func.min(webhook_deliveries.c.next_attempt_at)).where(*_DUE)
    )
    return found if isinstance(found, datetime) else None


async def take_delivery(
    conn: DbConnection, delivery_id: str, *, owner: str, now: datetime, lease_until: datetime
) -> Delivery | None:
    """Take a due delivery for one attempt, leased to ``owner`` until ``lease_until`` (when it is
    due again if no outcome is recorded); None when it is not due (another sender has it, or
    it ended)."""
    taken = (
        await conn.execute(
            webhook_deliveries.update()
            .where(
                webhook_deliveries.c.id == delivery_id,
                *_DUE,
                webhook_deliveries.c.next_attempt_at <= now,
            )
            .values(
                attempts=webhook_deliveries.c.attempts + 1,
                lease_owner=owner,
                next_attempt_at=lease_until,
                updated_at=now,
            )
            .returning(*(webhook_deliveries.c[name] for name in Delivery.__slots__))
        )
    ).first()
    return None if taken is None else Delivery(**taken._mapping)


async def record_attempt(
    conn: DbConnection,
    delivery: Delivery,
    *,
    owner: str,
    status: DeliveryStatus,
    next_attempt_at: datetime | None,
    error: str | None,
    now: datetime,
) -> bool:
    """Record the outcome of ``delivery``'s attempt (``pending`` again: due at
    ``next_attempt_at``; settled, its values are dropped); False when this attempt no longer
    holds it (its lease expired and another attempt took it)."""
    values: dict[str, Any] = {
        "status": status,
        "lease_owner": None,
        "last_error": error[:200] if error else None,
        "updated_at": now,
    }
    if next_attempt_at is not None:
        values["next_attempt_at"] = next_attempt_at
    if status != "pending":
        values["run_values"] = None
    result = await conn.execute(
        webhook_deliveries.update()
        .where(
            webhook_deliveries.c.id == delivery.id,
            webhook_deliveries.c.lease_owner == owner,
            webhook_deliveries.c.attempts == delivery.attempts,
        )
        .values(**values)
    )
    return bool(result.rowcount)


async def fail_expired_deliveries(
    conn: DbConnection, *, ended_before: datetime, now: datetime
) -> list[str]:
    """Give up (``failed``) the due deliveries already tried of runs that ended before
    ``ended_before`` (their retry window is over: their last attempt could not record its
    outcome, say); their ids. A delivery never tried gets its first attempt, however late."""
    rows = await conn.execute(
        webhook_deliveries.update()
        .where(
            *_DUE,
            webhook_deliveries.c.next_attempt_at <= now,
            webhook_deliveries.c.attempts > 0,
            webhook_deliveries.c.run_ended_at < ended_before,
        )
        .values(
            status="failed",
            lease_owner=None,
            run_values=None,
            last_error=sa.func.coalesce(webhook_deliveries.c.last_error, "retry_window_over"),
            updated_at=now,
        )
        .returning(webhook_deliveries.c.id)
    )
    return [str(row.id) for row in rows]


async def prune_settled_deliveries(
    conn: DbConnection, *, settled_before: datetime, limit: int
) -> int:
    """Delete up to ``limit`` deliveries settled (``delivered``, ``failed``) before
    ``settled_before``; how many."""
    oldest = (
        sa.select(webhook_deliveries.c.id)
        .where(webhook_deliveries.c.status != "pending")
        .where(webhook_deliveries.c.updated_at < settled_before)
        .limit(limit)
    )
    result = await conn.execute(
        webhook_deliveries.delete().where(webhook_deliveries.c.id.in_(oldest.scalar_subquery()))
    )
    return result.rowcount
