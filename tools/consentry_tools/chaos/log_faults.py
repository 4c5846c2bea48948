"""Faults in the event log and the runs: what a lost, doubled or misnumbered event write, or a
run closed with the wrong reason, would leave (``faults`` names each and its invariant)."""

from __future__ import annotations

import json

import sqlalchemy as sa

from consentry.stored import audit, events, runs, threads
from consentry_tools.chaos.plant_site import NoTargetError, PlantSite, now

__all__ = [
    "SEQ_JUMP",
    "applied_run_marked_failed",
    "duplicate_event",
    "event_seq_gap",
    "event_seq_jump",
    "run_started_deleted",
]

SEQ_JUMP = 4096
"""The jump the kill trials of issue 17 found after crashes."""


async def event_seq_gap(site: PlantSite) -> str:
    """Delete a stored event that a client received live (a step)."""
    for thread_id, stored in site.threads():
        seen = {s for c in site.clients for s in c.seen.by_thread.get(thread_id, {})}
        for event in stored.events:
            if event.type == "step" and event.seq in seen:
                async with site.db.write() as conn:
                    await conn.execute(
                        events.delete().where(
                            events.c.thread_id == thread_id, events.c.seq == event.seq
                        )
                    )
                return thread_id
    raise NoTargetError("no step event seen live")


async def duplicate_event(site: PlantSite) -> str:
    """Store a thread's assistant message a second time, as the thread's next event."""
    for thread_id, stored in site.threads():
        message = next((e for e in stored.events if e.type == "message"), None)
        if message is None or not stored.events:
            continue
        seq = stored.events[-1].seq + 1
        async with site.db.write() as conn:
            await conn.execute(
                events.insert().values(
                    thread_id=thread_id,
                    seq=seq,
                    run_id=stored.events[-1].run_id,
                    type="message",
                    data=json.dumps({**message.data, "seq": seq}, separators=(",", ":")),
                    created_at=now(),
                )
            )
            await conn.execute(
                threads.update().where(threads.c.id == thread_id).values(last_seq=seq)
            )
        return thread_id
    raise NoTargetError("no assistant message")


async def run_started_deleted(site: PlantSite) -> str:
    for thread_id, stored in site.threads():
        started = next((e for e in stored.events if e.type == "run_started"), None)
        if started is not None:
            async with site.db.write() as conn:
                await conn.execute(
                    events.delete().where(
                        events.c.thread_id == thread_id, events.c.seq == started.seq
                    )
                )
            return thread_id
    raise NoTargetError("no run_started event")


async def event_seq_jump(site: PlantSite) -> str:
    """Number a thread's last run's events 4,096 further on, as after a crash's reservation."""
    for thread_id, stored in site.threads():
        seqs = [e.seq for e in stored.events]
        if not stored.runs or seqs != list(range(1, len(seqs) + 1)):
            continue  # only a thread whose seqs were contiguous shows what the jump does
        last = stored.runs[-1].run_id
        moved = [e for e in stored.events if e.run_id == last]
        async with site.db.write() as conn:
            for event in sorted(moved, key=lambda e: -e.seq):
                seq = event.seq + SEQ_JUMP
                await conn.execute(
                    events.update()
                    .where(events.c.thread_id == thread_id, events.c.seq == event.seq)
                    .values(seq=seq, data=json.dumps({**event.data, "seq": seq}))
                )
            await conn.execute(
                threads.update()
                .where(threads.c.id == thread_id)
                .values(last_seq=threads.c.last_seq + SEQ_JUMP)
            )
        return thread_id
    raise NoTargetError("no thread with contiguous seqs")


async def applied_run_marked_failed(site: PlantSite) -> str:
    """Record a run that applied its effect and completed as ``failed``, as a kill before its
    closing transaction leaves it."""
    for thread_id, stored in site.threads():
        for index, run in enumerate(stored.runs):
            applied = any(
                a.action == "effect_applied" and a.run_id == run.run_id for a in stored.audit
            )
            final = next(
                (e for e in stored.events if e.run_id == run.run_id and e.type == "final"), None
            )
            last = index == len(stored.runs) - 1 or stored.runs[index + 1].trigger != "recovery"
            if not (applied and last and final and run.reason == "completed"):
                continue
            async with site.db.write() as conn:
                await conn.execute(
                    runs.update()
                    .where(runs.c.id == run.run_id)
                    .values(reason="failed", error_code="server_restarted")
                )
                await conn.execute(
                    events.update()
                    .where(events.c.thread_id == thread_id, events.c.seq == final.seq)
                    .values(data=json.dumps({**final.data, "reason": "failed"}))
                )
                ended = sa.and_(audit.c.run_id == run.run_id, audit.c.action == "run_ended")
                data = await conn.scalar(sa.select(audit.c.data).where(ended))
                await conn.execute(
                    audit.update().where(ended).values(data={**(data or {}), "reason": "failed"})
                )
            return thread_id
    raise NoTargetError("no completed run that applied an effect")
