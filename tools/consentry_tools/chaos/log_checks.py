"""Invariants 5, 5b and 7, on each thread's event log: the replay is gap- and duplicate-free,
the stored seqs are contiguous, and the event log, the runs and the audit agree.

The replay is ``GET /v1/threads/{id}/stream`` from the start (the API); the stored events,
runs and audit records are the database's. A thread still running has no replay (it would
wait for the run); it is reported stuck instead.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Sequence

from consentry_tools.chaos.observations import ClientLog, Event
from consentry_tools.chaos.records import EventRecord, StoredThread
from consentry_tools.chaos.snapshot import Snapshot
from consentry_tools.chaos.violations import Violation

__all__ = ["check_contiguous", "check_records", "check_replay"]

SHOWN = 3
"""Examples named in one violation's detail."""


def check_replay(clients: Sequence[ClientLog], snapshot: Snapshot) -> Iterator[Violation]:
    """5. The replay from the start has strictly increasing seqs, each run's events framed
    ``run_started … final`` with no other run in between, no event twice (a message, a consent, a
    note version), the stored events exactly, and every durable event a client saw live, as it
    was sent."""
    for thread_id in snapshot.thread_ids:
        replay = snapshot.api[thread_id].replay
        if replay is None:
            continue
        events = [e for e in replay if e.get("type") != "resync"]
        yield from _increasing(thread_id, events)
        yield from _framed(thread_id, events)
        yield from _unique(thread_id, events)
        stored = {e.seq: e.data for e in snapshot.stored[thread_id].events}
        replayed = {int(e["seq"]): e for e in events}
        if replayed != stored:
            differing = sorted(
                s for s in stored.keys() | replayed.keys() if stored.get(s) != replayed.get(s)
            )
            yield Violation(
                "replay",
                thread_id,
                f"the replay differs from the stored events at {len(differing)} seq(s): "
                f"{differing[:SHOWN]}",
            )
        for client in clients:
            yield from _seen_live(thread_id, client, replayed)
    for client in clients:
        for thread_id, seq, first, second in client.seen.conflicts:
            yield Violation(
                "replay",
                thread_id,
                f"client {client.client} received seq {seq} twice with different content: "
                f"{first.get('type')} (run {first.get('run_id')}) then {second.get('type')} "
                f"(run {second.get('run_id')})",
            )


def _increasing(thread_id: str, events: list[Event]) -> Iterator[Violation]:
    seqs = [int(e["seq"]) for e in events]
    wrong = [(a, b) for a, b in itertools.pairwise(seqs) if b <= a]
    if wrong:
        yield Violation(
            "replay",
            thread_id,
            f"seqs not strictly increasing {len(wrong)} time(s): "
            + ", ".join(f"{b} after {a}" for a, b in wrong[:SHOWN]),
        )


def _framed(thread_id: str, events: list[Event]) -> Iterator[Violation]:
    blocks: list[tuple[str, list[str]]] = []
    for event in events:
        run_id = str(event.get("run_id"))
        if not blocks or blocks[-1][0] != run_id:
            blocks.append((run_id, []))
        blocks[-1][1].append(str(event["type"]))
    seen: set[str] = set()
    for run_id, kinds in blocks:
        if run_id in seen:
            yield Violation(
                "replay", thread_id, f"run {run_id}'s events are interleaved with another run's"
            )
        seen.add(run_id)
        framed = kinds[0] == "run_started" and kinds[-1] == "final"
        if not framed or kinds.count("run_started") != 1 or kinds.count("final") != 1:
            yield Violation(
                "replay",
                thread_id,
                f"run {run_id}'s events are not run_started … final: {_short(kinds)}",
            )


def _unique(thread_id: str, events: list[Event]) -> Iterator[Violation]:
    identities: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for event in events:
        kind = str(event["type"])
        if kind == "message":
            identities[(kind, str(event["message_id"]))].append(int(event["seq"]))
        elif kind == "consent":
            identities[(kind, str(event["approval_id"]))].append(int(event["seq"]))
        elif kind == "note":
            identities[(kind, str(event["note_id"]), str(event["version"]))].append(
                int(event["seq"])
            )
    for identity, seqs in identities.items():
        if len(seqs) > 1:
            yield Violation(
                "replay",
                thread_id,
                f"the same {identity[0]} ({', '.join(identity[1:])}) is replayed "
                f"{len(seqs)} times, at seqs {seqs}",
            )


def _seen_live(
    thread_id: str, client: ClientLog, replayed: dict[int, Event]
) -> Iterator[Violation]:
    seen = client.seen.by_thread.get(thread_id, {})
    missing = sorted(s for s in seen if s not in replayed)
    changed = sorted(s for s in seen if s in replayed and replayed[s] != seen[s])
    if missing:
        kinds = [f"{s} {seen[s].get('type')}" for s in missing[:SHOWN]]
        yield Violation(
            "replay",
            thread_id,
            f"{len(missing)} event(s) client {client.client} received live are missing from the "
            f"replay: {', '.join(kinds)}",
        )
    if changed:
        kinds = [f"{s} {seen[s].get('type')}→{replayed[s].get('type')}" for s in changed[:SHOWN]]
        yield Violation(
            "replay",
            thread_id,
            f"{len(changed)} event(s) client {client.client} received live are replayed with "
            f"other content: {', '.join(kinds)}",
        )


def check_contiguous(snapshot: Snapshot) -> Iterator[Violation]:
    """5b. The stored events of a thread are numbered 1..n (after what retention pruned) with no
    jump, even after a crash (the seq contract: a token carries the seq of the durable event
    before it)."""
    for thread_id in snapshot.thread_ids:
        stored = snapshot.stored[thread_id]
        previous = stored.thread.pruned_through
        jumps: list[tuple[int, EventRecord]] = []
        for event in stored.events:
            if event.seq != previous + 1:
                jumps.append((previous, event))
            previous = event.seq
        if jumps:
            largest = max(e.seq - p for p, e in jumps)
            shown = ", ".join(
                f"{e.seq} after {p} (+{e.seq - p}, at a {e.type} of run {e.run_id[:8]})"
                for p, e in jumps[:SHOWN]
            )
            yield Violation(
                "seq_contiguous",
                thread_id,
                f"{len(jumps)} jump(s) in the stored seqs, largest +{largest}: {shown}",
            )


def check_records(snapshot: Snapshot) -> Iterator[Violation]:
    """7. Every run has one stored ``run_started``, and one ``final`` whose reason is the run's;
    the audit has its ``run_started`` and ``run_ended`` with that reason; no events of a run that
    does not exist; a run recorded ``failed`` did not apply an effect after which its graph
    finished (then nothing continues it, and the thread says failed though all was done)."""
    for thread_id in snapshot.thread_ids:
        yield from _records_of(thread_id, snapshot.stored[thread_id])


def _records_of(thread_id: str, stored: StoredThread) -> Iterator[Violation]:
    by_run: dict[str, list[EventRecord]] = defaultdict(list)
    for event in stored.events:
        by_run[event.run_id].append(event)
    for index, run in enumerate(stored.runs):
        events = by_run.pop(run.run_id, [])
        kinds = [e.type for e in events]
        name = f"run {run.run_id} ({run.trigger}, {run.status} {run.reason or ''})".replace(
            " )", ")"
        )
        if kinds.count("run_started") != 1:
            yield Violation(
                "records_agree",
                thread_id,
                f"{name} has {kinds.count('run_started')} stored run_started event(s)",
            )
        finals = [e for e in events if e.type == "final"]
        audits = [a for a in stored.audit if a.run_id == run.run_id]
        started = sum(1 for a in audits if a.action == "run_started")
        ended = [a for a in audits if a.action == "run_ended"]
        if started != 1:
            yield Violation(
                "records_agree", thread_id, f"{name} has {started} run_started audit record(s)"
            )
        if run.status == "ended":
            if len(finals) != 1 or finals[0].data.get("reason") != run.reason:
                reasons = [e.data.get("reason") for e in finals]
                yield Violation(
                    "records_agree", thread_id, f"{name} has stored final event(s) {reasons}"
                )
            if len(ended) != 1 or ended[0].data.get("reason") != run.reason:
                reasons = [a.data.get("reason") for a in ended]
                yield Violation(
                    "records_agree", thread_id, f"{name} has run_ended audit record(s) {reasons}"
                )
        if run.reason == "failed":
            yield from _failed_after_its_effect(thread_id, stored, index, name)
    for run_id, events in by_run.items():
        yield Violation(
            "records_agree",
            thread_id,
            f"{len(events)} stored event(s) of run {run_id}, which has no runs row: "
            f"{_short([e.type for e in events])}",
        )


def _failed_after_its_effect(
    thread_id: str, stored: StoredThread, index: int, name: str
) -> Iterator[Violation]:
    run = stored.runs[index]
    effects = [a for a in stored.audit if a.action == "effect_applied" and a.run_id == run.run_id]
    after = stored.runs[index + 1] if index + 1 < len(stored.runs) else None
    if effects and (after is None or after.trigger != "recovery"):
        effect = effects[0]
        yield Violation(
            "records_agree",
            thread_id,
            f"{name} applied the effect of approval {effect.approval_id} "
            f"({effect.data.get('outcome')}, version {effect.data.get('version')}) and its graph "
            f"finished, but it is recorded failed ({run.error_code}) and no recovery followed",
        )


def _short(kinds: list[str]) -> str:
    return " ".join(kinds) if len(kinds) <= 12 else " ".join([*kinds[:6], "…", *kinds[-4:]])
