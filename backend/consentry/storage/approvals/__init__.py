"""Approval records: one per consent request. Every transition is a compare-and-set on
``status`` (``pending → approved | edited | rejected | answered | expired | cancelled |
superseded``), so
exactly one decision, expiry or cancellation wins however many race for it. A consent with no
deadline (``expires_at`` null: a raw ``interrupt()`` when no TTL is configured) never expires.

A decided row's ``decision`` JSON is the value the graph is resumed with (``ConsentDecision``
of ``graphs/consentry_graphs/consent.py``), plus ``decided_by_name``: the decider's display name at
decision time (``CONSENTRY_API_KEYS`` ``token=tenant:user:Display Name``), kept beside
``decided_by`` for people to read. :func:`recorded_decision` takes it out again: the graph never
sees it.

The row and what the API shows of it (``_records``: :class:`ApprovalRecord`, :func:`live_at`,
:func:`to_approval`, :func:`recorded_decision`), the reads (``_reads``: find, pending, closed,
list, count, and the expiry sweeper's due approvals and next deadline) and the writes
(``_decisions``: insert, then decide, expire, reopen or cancel) are private modules."""

from __future__ import annotations

from consentry.storage.approvals._decisions import (
    cancel_approval,
    cancel_run_approvals,
    decide_approval,
    expire_approval,
    insert_approval,
    reopen_approval,
    supersede_approval,
)
from consentry.storage.approvals._reads import (
    closed_approvals,
    count_pending,
    due_approvals,
    existing_approval_ids,
    find_approval,
    find_with_pending,
    list_approvals,
    next_expiry,
    pending_approvals,
)
from consentry.storage.approvals._records import (
    DECIDED_BY_NAME,
    ApprovalRecord,
    live_at,
    recorded_decision,
    to_approval,
)

__all__ = [
    "DECIDED_BY_NAME",
    "ApprovalRecord",
    "cancel_approval",
    "cancel_run_approvals",
    "closed_approvals",
    "count_pending",
    "decide_approval",
    "due_approvals",
    "existing_approval_ids",
    "expire_approval",
    "find_approval",
    "find_with_pending",
    "insert_approval",
    "list_approvals",
    "live_at",
    "next_expiry",
    "pending_approvals",
    "recorded_decision",
    "reopen_approval",
    "supersede_approval",
    "to_approval",
]
