"""Invariants 2 and 6: no acknowledged message lost, idempotent retries replayed.

A message counts as acknowledged once an answer named its run (``200`` with ``X-Run-Id``), even
if the stream was cut right after. Each message text is unique (it carries the trial, client and
conversation), so the transcript can be searched for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from consentry_tools.chaos.consent_checks import STATUS_OF, canonical
from consentry_tools.chaos.observations import ClientLog, KeyedRequest
from consentry_tools.chaos.snapshot import Snapshot
from consentry_tools.chaos.violations import Violation

__all__ = ["check_idempotency", "check_messages"]


def check_messages(clients: Sequence[ClientLog], snapshot: Snapshot) -> Iterator[Violation]:
    """2. Every acknowledged message is in its thread's transcript exactly once (database and
    ``GET /v1/threads/{id}/messages``); no message is there twice; every assistant ``message``
    event stored or seen live is in the transcript once."""
    stored: Counter[tuple[str, str]] = Counter()
    listed: Counter[tuple[str, str]] = Counter()
    for thread_id in snapshot.thread_ids:
        for row in snapshot.stored[thread_id].transcript:
            key = row.content if row.role == "user" else row.message_id
            stored[(thread_id, key)] += 1
        api = snapshot.api[thread_id]
        if api.error is not None:  # reported as stuck: compare the database only
            listed.update({k: n for k, n in stored.items() if k[0] == thread_id})
            continue
        for message in api.messages:
            key = message["content"] if message["role"] == "user" else message["message_id"]
            listed[(thread_id, key)] += 1
    for client in clients:
        for request in client.requests:
            if request.kind == "message" and request.text is not None:
                yield from _message_once(request, request.text, stored, listed, snapshot)
    for thread_id in snapshot.thread_ids:
        said = {
            str(e.data["message_id"])
            for e in snapshot.stored[thread_id].events
            if e.type == "message"
        }
        for client in clients:
            said |= {
                str(e["message_id"])
                for e in client.seen.by_thread.get(thread_id, {}).values()
                if e.get("type") == "message"
            }
        for message_id in sorted(said):
            counts = (stored[(thread_id, message_id)], listed[(thread_id, message_id)])
            if counts != (1, 1):
                yield Violation(
                    "message_lost",
                    thread_id,
                    f"assistant message {message_id} (a message event) is in the transcript "
                    f"{counts[0]} time(s), in GET …/messages {counts[1]} time(s)",
                )


def _message_once(
    request: KeyedRequest,
    text: str,
    stored: Counter[tuple[str, str]],
    listed: Counter[tuple[str, str]],
    snapshot: Snapshot,
) -> Iterator[Violation]:
    everywhere = {t: stored[(t, text)] for t in snapshot.thread_ids if stored[(t, text)]}
    total = sum(everywhere.values())
    acknowledged = request.first_acknowledged
    if acknowledged is None:
        if total > 1:
            yield Violation(
                "message_lost",
                None,
                f"{request.describe()} is in the transcripts {total} times: {everywhere}",
            )
        return
    thread_id = acknowledged.thread_id
    if thread_id not in snapshot.stored:
        return  # a thread that does not exist is an idempotency violation
    counts = (stored[(thread_id, text)], listed[(thread_id, text)])
    if counts != (1, 1) or total != 1:
        yield Violation(
            "message_lost",
            thread_id,
            f"{request.describe()} was acknowledged (run {acknowledged.run_id}), but it is in "
            f"the thread's transcript {counts[0]} time(s), in GET …/messages {counts[1]} "
            f"time(s), in all transcripts {total} time(s)",
        )


_TRY_AGAIN = frozenset({"request_in_progress", "database_unavailable", "storage_full"})
"""Answers that tell a client to send the same request again later (409 while its first attempt
still runs, 503 while the database is away, 507 while its disk is full), not what became of
it."""


def check_idempotency(clients: Sequence[ClientLog], snapshot: Snapshot) -> Iterator[Violation]:
    """6. A retry of a request whose first attempt was acknowledged is replayed
    (``Idempotent-Replayed: true``, same thread and run), never run again; the key is stored with
    that run; a request that ran though no attempt was answered (it claimed its run, then the
    server died) is replayed too, not refused; no keyed message gave a second run or a second
    thread; no thread that no client was told of (an orphan)."""
    for client in clients:
        for request in client.requests:
            yield from _replayed(request, snapshot)
            yield from _ran_then_refused(request, snapshot)
        created = [r for r in client.requests if r.kind == "message" and r.thread_id is None]
        for request in created:
            threads = list(dict.fromkeys(a.thread_id for a in request.attempts if a.thread_id))
            if len(threads) > 1:
                yield Violation(
                    "idempotency",
                    threads[0],
                    f"{request.describe()} gave {len(threads)} threads: {', '.join(threads)}",
                )
    told = {thread_id for client in clients for thread_id in client.threads}
    for thread_id in snapshot.thread_ids:
        if thread_id not in told:
            first = next(
                (m.content for m in snapshot.stored[thread_id].transcript if m.role == "user"),
                None,
            )
            yield Violation(
                "idempotency",
                thread_id,
                f"an orphan thread no client was told of (first message {first!r}): a keyed "
                "message ran twice",
            )
    yield from _message_runs(clients, snapshot, told)


def _replayed(request: KeyedRequest, snapshot: Snapshot) -> Iterator[Violation]:
    first = request.first_acknowledged
    if first is None:
        return
    later = request.attempts[request.attempts.index(first) + 1 :]
    for attempt in later:
        if attempt.status is None or attempt.code in _TRY_AGAIN:
            continue  # not an answer: the client tries again, and that answer is checked
        if attempt.status not in (200, 202):
            yield Violation(
                "idempotency",
                first.thread_id,
                f"{request.describe()}: its first attempt was acknowledged (run {first.run_id}), "
                f"a retry got {attempt.status} {attempt.code} instead of the replay: the key "
                "was forgotten",
            )
        elif not attempt.replayed or (attempt.thread_id, attempt.run_id) != (
            first.thread_id,
            first.run_id,
        ):
            yield Violation(
                "idempotency",
                first.thread_id,
                f"{request.describe()}: its first attempt was acknowledged (run {first.run_id}), "
                f"a retry got run {attempt.run_id} of thread {attempt.thread_id} "
                f"(replayed: {attempt.replayed})",
            )
    stored = snapshot.keys.get(request.key)
    if stored is None:
        yield Violation(
            "idempotency",
            first.thread_id,
            f"{request.describe()} was acknowledged (run {first.run_id}), but its key is not "
            "stored: a retry would run it again",
        )
    elif stored.run_id is not None and stored.run_id != first.run_id:
        yield Violation(
            "idempotency",
            first.thread_id,
            f"{request.describe()} was acknowledged as run {first.run_id}, but its stored key "
            f"names run {stored.run_id}",
        )


def _ran_then_refused(request: KeyedRequest, snapshot: Snapshot) -> Iterator[Violation]:
    last = request.last
    if request.acknowledged or not request.retried or last is None or last.status is None:
        return
    if last.status < 400 or last.code == "request_in_progress":
        return
    refused = f"{last.status} {last.code}"
    if request.kind == "message":
        for thread_id in snapshot.thread_ids:
            transcript = snapshot.stored[thread_id].transcript
            if any(m.role == "user" and m.content == request.text for m in transcript):
                yield Violation(
                    "idempotency",
                    thread_id,
                    f"{request.describe()} ran (it is in the transcript) though no attempt was "
                    f"answered, and its retry was refused with {refused} instead of replayed",
                )
                return
        return
    for thread_id in snapshot.thread_ids:
        for approval in snapshot.stored[thread_id].approvals:
            if approval.approval_id != request.approval_id:
                continue
            recorded = (approval.status, canonical(approval.edited))
            if recorded == (STATUS_OF[str(request.decision)], canonical(request.edited)):
                yield Violation(
                    "idempotency",
                    thread_id,
                    f"{request.describe()} was recorded though no attempt was answered, and its "
                    f"retry was refused with {refused} instead of replayed",
                )
            return


def _message_runs(
    clients: Sequence[ClientLog], snapshot: Snapshot, told: set[str]
) -> Iterator[Violation]:
    """A thread a client knows has at most one ``message`` run per message sent to it."""
    sent: Counter[str] = Counter()
    for client in clients:
        for request in client.requests:
            if request.kind != "message":
                continue
            targets = {a.thread_id for a in request.attempts if a.thread_id}
            for thread_id in targets or ({request.thread_id} if request.thread_id else set()):
                sent[thread_id] += 1
    for thread_id in snapshot.thread_ids:
        if thread_id not in told:
            continue  # an orphan, reported as such
        runs = [r for r in snapshot.stored[thread_id].runs if r.trigger == "message"]
        if len(runs) > sent[thread_id]:
            listed = ", ".join(f"{r.run_id[:8]} {r.reason}" for r in runs)
            yield Violation(
                "idempotency",
                thread_id,
                f"{len(runs)} message runs for {sent[thread_id]} message(s) sent to the thread "
                f"({listed}): a keyed message ran twice",
            )
