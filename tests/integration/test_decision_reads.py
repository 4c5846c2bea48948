"""A decision reads the consent it names and its thread's pending consents in one statement
(``approvals.find_with_pending``): what the two reads it replaces gave, on both databases."""

from __future__ import annotations

import httpx

from consentry.principal import LOCAL_PRINCIPAL, Principal
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from tests.sse import ask_for_note_edit, chat

STRANGER = Principal(LOCAL_PRINCIPAL.tenant, "someone-else")
Read = tuple[ApprovalRecord | None, list[ApprovalRecord]]


async def _both_ways(
    client: httpx.AsyncClient, owner: Principal, approval_id: str, thread_id: str
) -> tuple[Read, Read]:
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        combined = await approvals_repo.find_with_pending(conn, owner, approval_id, thread_id)
        apart = (
            await approvals_repo.find_approval(conn, owner, approval_id),
            await approvals_repo.pending_approvals(conn, thread_id),
        )
    return combined, apart


async def test_the_combined_read_gives_what_the_two_reads_gave(client: httpx.AsyncClient) -> None:
    _, first = await ask_for_note_edit(client)
    consent = first[-2]
    thread_id, approval_id = consent.thread_id, consent.approval_id  # type: ignore[union-attr]

    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, thread_id)
    assert combined == apart
    found, pending = apart
    assert found is not None
    assert [row.id for row in pending] == [approval_id]

    # Another user names it: not found for them, and it is still the thread's pending one.
    combined, apart = await _both_ways(client, STRANGER, approval_id, thread_id)
    assert combined == apart
    assert apart[0] is None

    # Decided: found (as decided), and nothing pending.
    await chat(
        client,
        {"thread_id": thread_id, "resume": {"approval_id": approval_id, "decision": "reject"}},
    )
    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, thread_id)
    assert combined == apart
    found, pending = apart
    assert found is not None
    assert found.status == "rejected"
    assert pending == []
    # Named with another thread: found all the same, and that thread has nothing pending.
    combined, apart = await _both_ways(client, LOCAL_PRINCIPAL, approval_id, "another-thread")
    assert combined == apart
