"""Faults in the records of consents, decisions, transcripts, keys, threads and checkpoints: what
a lost, doubled or stale write would leave (``faults`` names each and the invariant that must
catch it)."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import sqlalchemy as sa

from consentry.stored import approvals, idempotency_keys, note_versions, threads, transcript
from consentry_tools.chaos.plant_site import NoTargetError, PlantSite, now

__all__ = [
    "approval_deleted",
    "decision_erased",
    "duplicate_version",
    "effect_without_decision",
    "idempotency_key_deleted",
    "orphan_thread",
    "second_history",
    "thread_left_running",
    "transcript_message_deleted",
]


async def approval_deleted(site: PlantSite) -> str:
    for thread_id, stored in site.threads():
        waiting = site.snapshot.positions[thread_id].interrupts
        for approval in stored.approvals:
            if approval.status == "pending" and approval.approval_id in waiting:
                async with site.db.write() as conn:
                    await conn.execute(
                        approvals.delete().where(approvals.c.id == approval.approval_id)
                    )
                return thread_id
    raise NoTargetError("no pending consent")


async def decision_erased(site: PlantSite) -> str:
    for request, thread_id in site.acknowledged("decision"):
        async with site.db.write() as conn:
            await conn.execute(
                approvals.update()
                .where(approvals.c.id == request.approval_id)
                .values(
                    status="pending", decision=None, edited=None, decided_at=None, decided_by=None
                )
            )
        return thread_id
    raise NoTargetError("no acknowledged decision")


async def _effect_version(site: PlantSite, *, statuses: tuple[str, ...]) -> str:
    """Write a note version carrying the id of an approval in one of ``statuses``."""
    for thread_id, stored in site.threads():
        for approval in stored.approvals:
            proposal = approval.event.get("proposal") or {}
            note_id = proposal.get("note_id")
            if approval.status not in statuses or not note_id:
                continue
            if statuses == ("approved", "edited") and not any(
                v.approval_id == approval.approval_id
                for v in site.snapshot.versions.get(note_id, [])
            ):
                continue
            async with site.db.write() as conn:
                latest = await conn.scalar(
                    sa.select(sa.func.max(note_versions.c.version)).where(
                        note_versions.c.note_id == note_id
                    )
                )
                await conn.execute(
                    note_versions.insert().values(
                        note_id=note_id,
                        version=int(latest or 0) + 1,
                        title=str(proposal.get("title", "")),
                        content=str(proposal.get("proposed_content", "")),
                        author="assistant",
                        approval_id=approval.approval_id,
                        created_at=now(),
                    )
                )
            return thread_id
    raise NoTargetError(f"no approval {' or '.join(statuses)}")


async def duplicate_version(site: PlantSite) -> str:
    return await _effect_version(site, statuses=("approved", "edited"))


async def effect_without_decision(site: PlantSite) -> str:
    return await _effect_version(site, statuses=("rejected", "pending"))


async def thread_left_running(site: PlantSite) -> str:
    for thread_id, stored in site.threads():
        if stored.thread.status == "idle" and stored.runs:
            async with site.db.write() as conn:
                await conn.execute(
                    threads.update()
                    .where(threads.c.id == thread_id)
                    .values(
                        status="running",
                        active_run_id=stored.runs[-1].run_id,
                        # A lease far ahead: no replica takes the thread over meanwhile.
                        lease_owner="chaos-planted:0:0",
                        lease_expires_at=now() + timedelta(days=1),
                    )
                )
            return thread_id
    raise NoTargetError("no idle thread")


async def transcript_message_deleted(site: PlantSite) -> str:
    for request, thread_id in site.acknowledged("message"):
        async with site.db.write() as conn:
            await conn.execute(
                transcript.delete().where(
                    transcript.c.thread_id == thread_id,
                    transcript.c.role == "user",
                    transcript.c.content == request.text,
                )
            )
        return thread_id
    raise NoTargetError("no acknowledged message")


async def idempotency_key_deleted(site: PlantSite) -> str:
    for request, thread_id in site.acknowledged("message"):
        if request.key in site.snapshot.keys:
            async with site.db.write() as conn:
                await conn.execute(
                    idempotency_keys.delete().where(idempotency_keys.c.key == request.key)
                )
            return thread_id
    raise NoTargetError("no acknowledged keyed request")


async def orphan_thread(site: PlantSite) -> str:
    """A second thread from a client's first message, as a forgotten key leaves it."""
    started = [(r, t) for r, t in site.acknowledged("message") if r.thread_id is None]
    if not started:
        raise NoTargetError("no message that started a thread")
    request, thread_id = started[0]
    orphan, created = str(uuid4()), now()
    copied = (threads.c.tenant, threads.c.user_id, threads.c.graph, threads.c.project_id)
    async with site.db.write() as conn:
        row = (await conn.execute(sa.select(*copied).where(threads.c.id == thread_id))).one()
        await conn.execute(
            threads.insert().values(
                id=orphan,
                **row._asdict(),
                title=str(request.text)[:200],
                status="idle",
                last_seq=0,
                transcript_kept=True,
                created_at=created,
                updated_at=created,
            )
        )
        await conn.execute(
            transcript.insert().values(
                thread_id=orphan,
                message_id=f"msg-{uuid4().hex}",
                role="user",
                content=request.text,
                created_at=created,
            )
        )
    return orphan


_COPY_CHECKPOINT = sa.text(
    "INSERT INTO graph_checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, run_id, type, checkpoint, metadata) "
    "SELECT thread_id, checkpoint_ns, :copy, parent_checkpoint_id, run_id, type, checkpoint, "
    "metadata FROM graph_checkpoints "
    "WHERE thread_id = :thread AND checkpoint_ns = '' AND checkpoint_id = :newest"
)


async def second_history(site: PlantSite) -> str:
    """What a stale replica's step would leave had the fence let it through: the thread's newest
    checkpoint's parent continued a second time, at the same step. The copy's id sorts right
    before the newest's (no id of LangGraph's ends with ``-``), so the thread's head, and what
    the other invariants read of it (the interrupts it waits on, which are its pending writes),
    stay as they were: a fault planted on the same thread before this one stays visible."""
    for thread_id, stored in site.threads():
        followed = [c for c in stored.checkpoints if c.parent_id is not None]
        if not followed:
            continue
        newest = followed[-1].checkpoint_id
        async with site.db.write() as conn:
            await conn.execute(
                _COPY_CHECKPOINT,
                {"thread": thread_id, "newest": newest, "copy": f"{newest[:-1]}-"},
            )
        return thread_id
    raise NoTargetError("no thread with a checkpoint that follows another")
