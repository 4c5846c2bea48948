"""Consents: the gate that checks and records decisions exactly once, the approval records a run
stores, expiry, the approvals inbox and its live feed, and the effects ledger graphs write
through. Nothing here starts a run: the expiry sweeper is given an :class:`Expirer` (the run
service)."""

from __future__ import annotations

from consentry.runtime.consents._alarm import ExpiryAlarm
from consentry.runtime.consents._asks import (
    ConsentAsk,
    ConsentDeadlines,
    graph_resumes,
    interrupt_of,
    read_asks,
)
from consentry.runtime.consents._effects import OwnerEffectLedger
from consentry.runtime.consents._expiry import ExpirySweeper
from consentry.runtime.consents._feed import ApprovalFeed
from consentry.runtime.consents._gate import (
    DECIDED,
    already_decided,
    cancel_consent,
    check_decision,
    check_each_consent_once,
    expire_consent,
    expired,
    is_expired,
    lost_to_another,
    record_decision,
    reopen_consent,
    supersede_consent,
    superseded,
)
from consentry.runtime.consents._inbox import ApprovalInbox, accepted
from consentry.runtime.consents._records import (
    SettledConsents,
    consent_event,
    record_consent,
    recorded_decisions,
    settle_pending,
    store_consent,
    supersede_pending,
)

__all__ = [
    "DECIDED",
    "ApprovalFeed",
    "ApprovalInbox",
    "ConsentAsk",
    "ConsentDeadlines",
    "ExpiryAlarm",
    "ExpirySweeper",
    "OwnerEffectLedger",
    "SettledConsents",
    "accepted",
    "already_decided",
    "cancel_consent",
    "check_decision",
    "check_each_consent_once",
    "consent_event",
    "expire_consent",
    "expired",
    "graph_resumes",
    "interrupt_of",
    "is_expired",
    "lost_to_another",
    "read_asks",
    "record_consent",
    "record_decision",
    "recorded_decisions",
    "reopen_consent",
    "settle_pending",
    "store_consent",
    "supersede_consent",
    "supersede_pending",
    "superseded",
]
