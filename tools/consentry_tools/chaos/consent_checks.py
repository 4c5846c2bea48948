"""Invariants 1, 3 and 4: no lost consent, no decision lost or applied twice, no thread stuck.

The consents are read three ways: what the graph waits for (the latest checkpoint's
interrupts), the approval rows, and what the API lists (a thread's ``pending_consents``, the
inbox, ``GET /v1/approvals/{id}``); the effects from the note versions and the effects ledger.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from consentry_tools.chaos.observations import ClientLog, KeyedRequest
from consentry_tools.chaos.records import ApprovalRecord, VersionRecord
from consentry_tools.chaos.snapshot import Snapshot
from consentry_tools.chaos.violations import Violation

__all__ = ["STATUS_OF", "canonical", "check_consents", "check_decisions", "check_stuck"]

STATUS_OF = {"approve": "approved", "edit": "edited", "reject": "rejected"}
APPLYING = frozenset({"approved", "edited"})


def _approvals(snapshot: Snapshot) -> dict[str, tuple[str, ApprovalRecord]]:
    """Every approval of the trial's threads: (thread id, row)."""
    return {
        a.approval_id: (thread_id, a)
        for thread_id, stored in snapshot.stored.items()
        for a in stored.approvals
    }


def check_consents(snapshot: Snapshot) -> Iterator[Violation]:
    """1. Every interrupt pending in a thread's latest checkpoint has its approval row, pending
    and listed by the API (the thread's ``pending_consents`` or the inbox)."""
    for thread_id in snapshot.thread_ids:
        rows = {a.approval_id: a for a in snapshot.stored[thread_id].approvals}
        api = snapshot.api[thread_id]
        listed = set(api.pending) | snapshot.inbox_pending
        for interrupt in snapshot.positions[thread_id].interrupts:
            row = rows.get(interrupt)
            if row is None:
                yield Violation(
                    "lost_consent",
                    thread_id,
                    f"the graph waits on interrupt {interrupt} (latest checkpoint), but no "
                    "approval row exists: nobody can see or decide it",
                )
            elif row.status == "pending" and interrupt not in listed and api.error is None:
                yield Violation(
                    "lost_consent",
                    thread_id,
                    f"approval {interrupt} is pending, but neither GET /v1/threads/{{id}} "
                    "pending_consents nor the inbox lists it",
                )


def check_stuck(snapshot: Snapshot) -> Iterator[Violation]:
    """4. Once settled no thread is ``running``, none waits for a consent nobody can decide."""
    for thread_id in snapshot.thread_ids:
        stored = snapshot.stored[thread_id]
        thread = stored.thread
        pending = [a.approval_id for a in stored.approvals if a.status == "pending"]
        waiting = snapshot.positions[thread_id].interrupts
        if snapshot.api[thread_id].error:
            yield Violation(
                "thread_stuck",
                thread_id,
                f"the API cannot show it: {snapshot.api[thread_id].error}",
            )
        if thread.status == "running":
            yield Violation(
                "thread_stuck",
                thread_id,
                f"left running after the trial settled (run {thread.active_run_id}, lease "
                f"{thread.lease_owner or 'none'})",
            )
        if thread.status == "awaiting_consent" and not pending:
            yield Violation(
                "thread_stuck", thread_id, "awaiting_consent without any pending approval"
            )
        for approval_id in pending:
            if approval_id not in waiting:
                yield Violation(
                    "thread_stuck",
                    thread_id,
                    f"approval {approval_id} is pending but the graph does not wait for it: "
                    "a decision on it cannot run",
                )
        for run in stored.runs:
            if run.status != "ended" and thread.status != "running":
                yield Violation(
                    "thread_stuck",
                    thread_id,
                    f"run {run.run_id} ({run.trigger}) is still {run.status} though the "
                    f"thread is {thread.status}",
                )


def check_decisions(clients: Sequence[ClientLog], snapshot: Snapshot) -> Iterator[Violation]:
    """3. An acknowledged decision is the one recorded on its approval (a losing one was told the
    winner with 409 ``already_decided``); an approved or edited consent's effect, a note version
    carrying its approval id, exists exactly once; no effect without such a decision."""
    approvals = _approvals(snapshot)
    decisions: dict[str, list[KeyedRequest]] = defaultdict(list)
    for client in clients:
        for request in client.requests:
            if request.kind == "decision" and request.approval_id:
                decisions[request.approval_id].append(request)
    for approval_id, requests in decisions.items():
        found = approvals.get(approval_id)
        thread_id = found[0] if found else requests[0].thread_id
        yield from _decision_recorded(approval_id, thread_id, requests, found, snapshot)
    versions_of: dict[str, list[VersionRecord]] = defaultdict(list)
    for versions in snapshot.versions.values():
        for version in versions:
            if version.approval_id:
                versions_of[version.approval_id].append(version)
    for approval_id, (thread_id, row) in approvals.items():
        yield from _effect_once(thread_id, row, versions_of.pop(approval_id, []), snapshot)
    for approval_id, versions in versions_of.items():
        for version in versions:
            yield Violation(
                "decision_once",
                None,
                f"note {version.note_id} version {version.version} carries approval "
                f"{approval_id}, which no thread of the trial has: an effect without a decision",
            )


def _decision_recorded(
    approval_id: str,
    thread_id: str | None,
    requests: list[KeyedRequest],
    found: tuple[str, ApprovalRecord] | None,
    snapshot: Snapshot,
) -> Iterator[Violation]:
    acknowledged = [r for r in requests if r.acknowledged]
    if found is None:
        if acknowledged:
            yield Violation(
                "decision_once",
                thread_id,
                f"{acknowledged[0].describe()} was acknowledged, but approval {approval_id} "
                "does not exist any more",
            )
        return
    row = found[1]
    api = snapshot.api_approvals.get(approval_id, {})
    decided = api.get("decided") or {}
    winners = {(r.decision, canonical(r.edited)) for r in acknowledged}
    if len(winners) > 1:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id}: {len(winners)} different decisions were all acknowledged "
            f"({', '.join(sorted(str(w[0]) for w in winners))})",
        )
    for request in acknowledged:
        expected = STATUS_OF[str(request.decision)]
        if row.status != expected or canonical(row.edited) != canonical(request.edited):
            yield Violation(
                "decision_once",
                thread_id,
                f"{request.describe()} was acknowledged, but the approval records "
                f"{row.status} (edited {row.edited!r})",
            )
        elif api.get("status") != expected or canonical(decided.get("edited")) != canonical(
            request.edited
        ):
            yield Violation(
                "decision_once",
                thread_id,
                f"{request.describe()} was acknowledged, but GET /v1/approvals/{{id}} says "
                f"{api.get('status')} (edited {decided.get('edited')!r})",
            )
    for request in requests:
        for attempt in request.attempts:
            if attempt.code != "already_decided":
                continue
            told = attempt.details.get("decided") or {}
            recorded = (row.status, canonical(row.edited))
            if (told.get("status"), canonical(told.get("edited"))) != recorded:
                yield Violation(
                    "decision_once",
                    thread_id,
                    f"{request.describe()} lost with 409 already_decided naming "
                    f"{told.get('status')} (edited {told.get('edited')!r}), but the winner "
                    f"recorded is {row.status} (edited {row.edited!r})",
                )


def _effect_once(
    thread_id: str, row: ApprovalRecord, versions: list[VersionRecord], snapshot: Snapshot
) -> Iterator[Violation]:
    approval_id = row.approval_id
    ledger = snapshot.effects.get(approval_id)
    audit = snapshot.stored[thread_id].audit
    decided = sum(
        1 for r in audit if r.approval_id == approval_id and r.action == "consent_decided"
    )
    applied = sum(1 for r in audit if r.approval_id == approval_id and r.action == "effect_applied")
    if decided > 1 or applied > 1:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id}: {decided} consent_decided and {applied} effect_applied "
            "audit records (at most one each)",
        )
    if row.status not in APPLYING:
        for version in versions:
            yield Violation(
                "decision_once",
                thread_id,
                f"note {version.note_id} version {version.version} carries approval "
                f"{approval_id}, which is {row.status}: an effect without a decision",
            )
        return
    if approval_id in snapshot.positions[thread_id].interrupts:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id} is {row.status}, but the graph still waits for it: the "
            "decision was never applied",
        )
        return
    if ledger is None:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id} is {row.status}, but its effect never ran (no effects row)",
        )
        return
    if ledger.result.get("outcome") != "applied":
        if versions:
            yield Violation(
                "decision_once",
                thread_id,
                f"approval {approval_id}: the ledger says {ledger.result.get('outcome')}, yet "
                f"{len(versions)} note version(s) carry it",
            )
        return
    if len(versions) != 1:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id} ({row.status}) was applied {len(versions)} times: note "
            f"versions {[v.version for v in versions]}",
        )
        return
    expected = _expected_content(row)
    if expected is not None and versions[0].content != expected:
        yield Violation(
            "decision_once",
            thread_id,
            f"approval {approval_id} ({row.status}): note version {versions[0].version} does "
            "not hold the decided content",
        )


def _expected_content(row: ApprovalRecord) -> str | None:
    if row.kind != "note_edit":
        return None
    edited = row.edited if isinstance(row.edited, dict) else {}
    if row.status == "edited" and edited.get("content"):
        return str(edited["content"])
    proposal = row.event.get("proposal")
    return str(proposal["proposed_content"]) if isinstance(proposal, dict) else None


def canonical(value: Any) -> Any:
    """``None`` and ``{}`` alike, dicts compared by content."""
    if not value:
        return None
    return (
        tuple(sorted((k, str(v)) for k, v in value.items())) if isinstance(value, dict) else value
    )
