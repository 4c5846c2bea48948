"""The effects ledger: one row per approval whose effect ran, with its result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection, execute, execute_unread
from consentry.storage.db.direct import direct
from consentry.storage.tables import approvals, audit, effects, threads
from consentry_graphs.consent import ConsentNotGrantedError

__all__ = ["apply_once", "recall_effect", "remember_effect"]

ResultT = TypeVar("ResultT", bound=BaseModel)


# On the path of every approved effect: built once, run on the driver (``storage.db.direct``).
# The approval's status and its effect's result, if it ran: one read for both.
_RECALL = direct(
    sa.select(approvals.c.status, effects.c.result)
    .select_from(approvals)
    .outerjoin(effects, effects.c.approval_id == approvals.c.id)
    .where(
        approvals.c.id == sa.bindparam("p_id"),
        approvals.c.thread_id == sa.bindparam("p_thread"),
        approvals.c.tenant == sa.bindparam("p_tenant"),
        approvals.c.user_id == sa.bindparam("p_user"),
    )
)
_GRANTED = frozenset({"approved", "edited"})
"""The statuses of an approval whose effect may run."""
_REMEMBER = direct(effects.insert())
_AUDIT_APPLIED = direct(
    audit.insert().from_select(
        [
            "thread_id",
            "tenant",
            "user_id",
            "run_id",
            "approval_id",
            "action",
            "actor",
            "data",
            "created_at",
        ],
        sa.select(
            approvals.c.thread_id,
            approvals.c.tenant,
            approvals.c.user_id,
            threads.c.active_run_id,  # the run doing the effect
            approvals.c.id,
            sa.literal("effect_applied", audit.c.action.type),
            sa.literal("system", audit.c.actor.type),
            sa.bindparam("p_data", type_=audit.c.data.type),
            sa.bindparam("p_at", type_=audit.c.created_at.type),
        )
        .join(threads, threads.c.id == approvals.c.thread_id)
        .where(approvals.c.id == sa.bindparam("p_id")),
    )
)
"""The ``effect_applied`` audit record of the approval's owner, thread and run, written from
the approval's row: nothing is read back, so it goes with the transaction's commit."""


async def apply_once(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    approval_id: str,
    kind: str,
    result_model: type[ResultT],
    act: Callable[[], Awaitable[ResultT]],
    now: datetime,
) -> ResultT:
    """Run an effect on Consentry's own tables once per approval: the ledger row is written in
    the caller's transaction, with the effect; a second call returns the recorded result."""
    recorded = await recall_effect(conn, owner, approval_id, thread_id=thread_id)
    if recorded is not None:
        return result_model.model_validate(recorded)
    result = await act()
    await remember_effect(
        conn, approval_id=approval_id, kind=kind, result=result.model_dump(mode="json"), now=now
    )
    return result


async def recall_effect(
    conn: DbConnection, owner: Principal, approval_id: str, *, thread_id: str
) -> dict[str, Any] | None:
    """The recorded result of the effect behind one of the owner's approvals in ``thread_id``
    (the run's), if it ran; None when it has not and may (the approval was approved or edited).
    ``ConsentNotGrantedError`` otherwise: an effect runs only behind a decision on record in its
    own thread, whatever a graph's state says (a state written by hand, a copied thread)."""
    params = {
        "p_id": approval_id,
        "p_thread": thread_id,
        "p_tenant": owner.tenant,
        "p_user": owner.user,
    }
    found = (await execute(conn, _RECALL, params)).first()
    if found is not None and found[1] is not None:
        return dict(found[1])
    if found is None or found[0] not in _GRANTED:
        raise ConsentNotGrantedError(approval_id)
    return None


async def remember_effect(
    conn: DbConnection, *, approval_id: str, kind: str, result: dict[str, Any], now: datetime
) -> None:
    """Record an effect's result, with its ``effect_applied`` audit record, in the caller's
    transaction (the one that made the effect, for effects on Consentry's own tables). Both
    statements go with the transaction's next one or its commit: on PostgreSQL no round trip of
    their own."""
    await execute_unread(
        conn,
        _REMEMBER,
        {"approval_id": approval_id, "kind": kind, "result": result, "created_at": now},
    )
    await execute_unread(
        conn,
        _AUDIT_APPLIED,
        {"p_id": approval_id, "p_data": {"kind": kind, **_summary(result)}, "p_at": now},
    )


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """The identifying facts of a result, not its content (an audit is not a copy of the data)."""
    facts: dict[str, Any] = {
        key: value
        for key, value in result.items()
        if isinstance(value, int | bool) or (isinstance(value, str) and len(value) <= 200)
    }
    note = result.get("note")
    if isinstance(note, dict):
        facts.update(note_id=note.get("note_id"), version=note.get("version"))
    return facts
