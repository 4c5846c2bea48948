"""Everything the invariants look at once a trial has settled, read twice: through the API (what
a client would see) and in the database (records, and the graph's checkpoints)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from consentry.stored import Database
from consentry_tools.chaos.checkpoints import GraphPosition, Positions
from consentry_tools.chaos.observations import Event
from consentry_tools.chaos.records import (
    EffectRecord,
    KeyRecord,
    StoredThread,
    VersionRecord,
    read_effects,
    read_keys,
    read_threads,
    read_versions,
)
from consentry_tools.chaos.wire import sse_events

__all__ = ["ApiThread", "Snapshot", "take_snapshot"]

API_TIMEOUT_SECONDS = 30.0
INBOX_PAGE = 200
UNAVAILABLE = 503
TRY_AGAIN_PAUSES = (0.1, 0.3, 1.0, 0.0)
"""The pauses after a 503 before the next try (the last try's is not waited)."""


@dataclass(frozen=True)
class ApiThread:
    """``GET /v1/threads/{id}``, its messages and its replay from the start."""

    status: str
    last_reason: str | None
    pending: tuple[str, ...]
    """The approval ids of ``pending_consents``."""
    messages: list[dict[str, Any]]
    replay: list[Event] | None
    """None for a thread still running (its stream would wait for the run)."""
    error: str | None = None
    """Why the API could not show the thread (then nothing else here is read)."""


@dataclass
class Snapshot:
    thread_ids: list[str]
    stored: dict[str, StoredThread]
    positions: dict[str, GraphPosition]
    api: dict[str, ApiThread]
    api_approvals: dict[str, dict[str, Any]]
    """``GET /v1/approvals/{id}`` of every approval of the trial's threads."""
    versions: dict[str, list[VersionRecord]]
    """Every version of the clients' notes and of the notes the trial's consents name."""
    effects: dict[str, EffectRecord]
    keys: dict[str, KeyRecord]
    inbox_pending: set[str] = field(default_factory=set)
    """``GET /v1/approvals?status=pending``, read only when a pending consent is missing from its
    thread's ``pending_consents``."""


async def take_snapshot(
    *,
    db: Database,
    positions: Positions,
    server: str,
    thread_ids: Sequence[str],
    note_ids: Sequence[str],
    keys: Sequence[str],
) -> Snapshot:
    stored = await read_threads(db, thread_ids)
    ids = [t for t in thread_ids if t in stored]
    approval_ids = [a.approval_id for t in stored.values() for a in t.approvals]
    proposal_notes = {
        str(a.event.get("proposal", {}).get("note_id"))
        for t in stored.values()
        for a in t.approvals
        if isinstance(a.event.get("proposal"), dict) and a.event["proposal"].get("note_id")
    }
    async with httpx.AsyncClient(base_url=server, timeout=API_TIMEOUT_SECONDS) as http:
        api = {t: await _api_thread(http, t) for t in ids}
        api_approvals = {a: await _get_or_empty(http, f"/v1/approvals/{a}") for a in approval_ids}
        snapshot = Snapshot(
            thread_ids=ids,
            stored=stored,
            positions=await positions.of(ids),
            api=api,
            api_approvals=api_approvals,
            versions=await read_versions(db, sorted({*note_ids, *proposal_notes})),
            effects=await read_effects(db, approval_ids),
            keys=await read_keys(db, keys),
        )
        listed = {a for thread in api.values() for a in thread.pending}
        if any(a not in listed for p in snapshot.positions.values() for a in p.interrupts):
            snapshot.inbox_pending = await _inbox(http)
    return snapshot


async def _get(http: httpx.AsyncClient, path: str, **params: str) -> dict[str, Any]:
    """``GET path``; a 503 (a pooled connection the trial's last strike cut, found broken when
    used: the server says to try again) is tried again, as a client would, a few times."""
    for pause in TRY_AGAIN_PAUSES:
        response = await http.get(path, params=params)
        if response.status_code != UNAVAILABLE:
            break
        await asyncio.sleep(pause)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


async def _get_or_empty(http: httpx.AsyncClient, path: str) -> dict[str, Any]:
    """An approval as the API shows it; empty when it does not (the checks say what differs)."""
    try:
        return await _get(http, path)
    except httpx.HTTPStatusError:
        return {}


async def _api_thread(http: httpx.AsyncClient, thread_id: str) -> ApiThread:
    try:
        return await _read_api_thread(http, thread_id)
    except httpx.HTTPStatusError as exc:
        answer = exc.response
        error = f"{answer.request.method} {answer.request.url.path} answered {answer.status_code}"
        return ApiThread(
            status="", last_reason=None, pending=(), messages=[], replay=None, error=error
        )


async def _read_api_thread(http: httpx.AsyncClient, thread_id: str) -> ApiThread:
    thread = await _get(http, f"/v1/threads/{thread_id}")
    messages = await _get(http, f"/v1/threads/{thread_id}/messages")
    replay: list[Event] | None = None
    if thread["status"] != "running":
        async with http.stream("GET", f"/v1/threads/{thread_id}/stream") as response:
            response.raise_for_status()
            replay = [event async for event in sse_events(response.aiter_lines())]
    return ApiThread(
        status=thread["status"],
        last_reason=thread.get("last_reason"),
        pending=tuple(c["approval_id"] for c in thread.get("pending_consents", [])),
        messages=list(messages["messages"]),
        replay=replay,
    )


async def _inbox(http: httpx.AsyncClient) -> set[str]:
    pending: set[str] = set()
    cursor: str | None = None
    while True:
        params = {"status": "pending", "limit": str(INBOX_PAGE)}
        if cursor:
            params["cursor"] = cursor
        page = await _get(http, "/v1/approvals", **params)
        pending |= {a["approval_id"] for a in page["approvals"]}
        cursor = page.get("next_cursor")
        if not cursor:
            return pending
