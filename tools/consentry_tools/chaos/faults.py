"""Faults planted in the database after a trial, to show that the invariants catch what they
claim to: each fault is the damage one kind of bug would leave, written with SQLAlchemy Core on
the tables of ``consentry.stored`` (``record_faults``, ``log_faults``), preferably into a thread no
other fault damaged (``plant_site``). A fault is caught when the invariant it targets finds
something on that thread that it did not find before the fault was planted (``trials``), so
faults planted one after the other are judged apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from consentry_tools.chaos.log_faults import (
    SEQ_JUMP,
    applied_run_marked_failed,
    duplicate_event,
    event_seq_gap,
    event_seq_jump,
    run_started_deleted,
)
from consentry_tools.chaos.plant_site import NoTargetError, Plant, PlantSite
from consentry_tools.chaos.record_faults import (
    approval_deleted,
    decision_erased,
    duplicate_version,
    effect_without_decision,
    idempotency_key_deleted,
    orphan_thread,
    second_history,
    thread_left_running,
    transcript_message_deleted,
)
from consentry_tools.chaos.violations import InvariantName

__all__ = ["FAULTS", "Fault", "NoTargetError", "PlantSite"]


@dataclass(frozen=True)
class Fault:
    name: str
    invariant: InvariantName
    description: str
    plant: Plant


FAULTS: dict[str, Fault] = {
    fault.name: fault
    for fault in (
        Fault(
            "approval_deleted",
            "lost_consent",
            "a pending consent's approval row deleted",
            approval_deleted,
        ),
        Fault(
            "transcript_message_deleted",
            "message_lost",
            "an acknowledged user message deleted from the transcript",
            transcript_message_deleted,
        ),
        Fault(
            "decision_erased",
            "decision_once",
            "an acknowledged decision erased (the approval set back to pending)",
            decision_erased,
        ),
        Fault(
            "duplicate_version",
            "decision_once",
            "a second note version carrying an applied approval's id",
            duplicate_version,
        ),
        Fault(
            "effect_without_decision",
            "decision_once",
            "a note version carrying a rejected or pending approval's id",
            effect_without_decision,
        ),
        Fault(
            "event_seq_gap",
            "replay",
            "a stored event a client received live deleted",
            event_seq_gap,
        ),
        Fault(
            "duplicate_event", "replay", "an assistant message event stored twice", duplicate_event
        ),
        Fault(
            "event_seq_jump",
            "seq_contiguous",
            f"a run's stored events renumbered {SEQ_JUMP} further on",
            event_seq_jump,
        ),
        Fault(
            "idempotency_key_deleted",
            "idempotency",
            "the stored Idempotency-Key of an acknowledged request deleted",
            idempotency_key_deleted,
        ),
        Fault(
            "orphan_thread",
            "idempotency",
            "a second thread from a client's first keyed message",
            orphan_thread,
        ),
        Fault(
            "run_started_deleted",
            "records_agree",
            "a run's stored run_started deleted",
            run_started_deleted,
        ),
        Fault(
            "applied_run_marked_failed",
            "records_agree",
            "a run that applied its effect and completed recorded failed",
            applied_run_marked_failed,
        ),
        Fault(
            "second_history",
            "one_history",
            "a thread's newest checkpoint continued twice (a stale replica's step)",
            second_history,
        ),
        Fault(
            "thread_left_running",
            "thread_stuck",
            "a settled thread set back to running",
            thread_left_running,
        ),
    )
}
"""Every plantable fault by name, and the invariant that must catch it."""
