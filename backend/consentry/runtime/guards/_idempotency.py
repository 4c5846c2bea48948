"""``Idempotency-Key`` on ``POST /v1/chat``, on decisions and on retries, with Stripe's and the
IETF draft's semantics, kept across crashes and replicas: one key means one request.

- The first request with a key holds it (``in_flight``, by its attempt id) while it is checked.
  The run it starts completes the key **in the transaction that claims the run**
  (:meth:`KeyHold.complete`), so a key either names its run or no run was ever claimed for it.
- The same key and body again give the first request's answer (``Idempotent-Replayed``): a
  chat replays its run (and the run that continues it after a crash) from its first event, live
  while it goes on; a decision's 202 is returned again.
- The same key with another body gets 422 ``idempotency_key_reused``; while the first request is
  checked and has not claimed its run yet, 409 ``request_in_progress`` (retry in a moment).
- A request refused (4xx), failing or cancelled before it claimed a run releases its key, so a
  retry runs it again. A key whose process died before claiming is released at start-up (SQLite:
  no other process can hold one) or taken over by a retry once it is older than a run's lease
  (``CONSENTRY_LEASE_SECONDS``: by then a replica that died is known dead; any database); a
  request whose key was taken over cannot claim its run (its compare-and-set fails).
Keys belong to one owner and are kept at least 24 hours.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import uuid4

from consentry.errors import ConflictError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.storage import idempotency as repo
from consentry.storage.db.database import Database, DbConnection

__all__ = [
    "KEY_RETENTION",
    "IdempotencyGuard",
    "KeyHold",
    "StoredResponse",
    "request_fingerprint",
]

KEY_RETENTION = timedelta(hours=24)


def request_fingerprint(route: str, body: dict[str, Any]) -> str:
    canonical = json.dumps([route, body], sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    """What the first request with a key produced."""

    status: int
    body: dict[str, Any] | None
    thread_id: str | None
    run_id: str | None


def _in_progress(key: str) -> ConflictError:
    return ConflictError(
        "A request with this Idempotency-Key is still in progress.",
        code="request_in_progress",
        details={"idempotency_key": key},
    )


@dataclass
class KeyHold:
    """A key this request holds while it runs; the run it claims completes it."""

    owner: Principal
    key: str
    attempt: str
    respond: Callable[[str, str], StoredResponse]
    """What a replay answers, from the thread and run the request started."""
    completed: bool = field(default=False, init=False)
    run_id: None = field(default=None, init=False)
    """A keyed request's run takes a new id (``runs.ClaimHold``)."""

    async def complete(self, conn: DbConnection, *, thread_id: str, run_id: str) -> None:
        """In the caller's transaction (the one that claims the run): the key names the run.
        409 ``request_in_progress`` (the transaction must roll back) when a retry took the key
        over, as it may once the key is stale (``IdempotencyGuard``)."""
        response = self.respond(thread_id, run_id)
        if not await repo.complete_idempotency_key(
            conn,
            self.owner,
            self.key,
            attempt=self.attempt,
            response_status=response.status,
            response_body=response.body,
            thread_id=response.thread_id,
            run_id=response.run_id,
        ):
            raise _in_progress(self.key)
        self.completed = True


class IdempotencyGuard:
    def __init__(self, db: Database, clock: Clock, *, stale_after: timedelta) -> None:
        """``stale_after``: how long a key may stay in flight before a retry takes it over (a
        request claims its run within a second or two, unless its process died)."""
        self._db = db
        self._clock = clock
        self._stale_after = stale_after

    @asynccontextmanager
    async def held(
        self,
        owner: Principal,
        key: str | None,
        *,
        route: str,
        body: dict[str, Any],
        respond: Callable[[str, str], StoredResponse],
    ) -> AsyncIterator[KeyHold | StoredResponse | None]:
        """The request's key, resolved here and nowhere else: ``None`` (the request has no
        key), the first request's :class:`StoredResponse` (a repeat), or the :class:`KeyHold`
        this request holds while the block runs; the run the block claims completes it
        (``KeyHold.complete``, in the claim's transaction). A block that raises, or ends
        without claiming a run, releases it: a retry runs the request again. 422
        ``idempotency_key_reused`` (another route or body), 409 ``request_in_progress``."""
        if key is None:
            yield None
            return
        hold = await self._hold(owner, key, request_fingerprint(route, body), respond)
        if isinstance(hold, StoredResponse):
            yield hold
            return
        try:
            yield hold
        finally:
            if not hold.completed:
                # Refused, failed or cancelled before claiming a run: a retry runs it again.
                await asyncio.shield(self._release(hold))

    async def _release(self, hold: KeyHold) -> None:
        async with self._db.write() as conn:
            await repo.release_idempotency_key(conn, hold.owner, hold.key, attempt=hold.attempt)

    async def release_abandoned(self) -> int:
        """At start-up, when this process is the only one on the database (SQLite): keys left in
        flight by the last process never claimed a run; forget them."""
        async with self._db.write() as conn:
            return await repo.release_in_flight_keys(conn)

    async def _hold(
        self,
        owner: Principal,
        key: str,
        fingerprint: str,
        respond: Callable[[str, str], StoredResponse],
    ) -> KeyHold | StoredResponse:
        attempt, now = uuid4().hex, self._clock()
        hold = KeyHold(owner, key, attempt, respond)
        async with self._db.write() as conn:
            if await repo.claim_idempotency_key(
                conn, owner, key, request_hash=fingerprint, attempt=attempt, now=now
            ):
                return hold
            row = await repo.find_idempotency_key(conn, owner, key)
            assert row is not None
            if row.request_hash != fingerprint:
                raise InvalidRequestError(
                    "This Idempotency-Key was used with a different request.",
                    code="idempotency_key_reused",
                    details={"idempotency_key": key},
                )
            if row.status != "done":
                stale = row.created_at <= now - self._stale_after
                if stale and await repo.take_over_idempotency_key(
                    conn, owner, key, stale_attempt=row.attempt, attempt=attempt, now=now
                ):
                    return hold
                raise _in_progress(key)
        assert row.response_status is not None  # a `done` key has its response
        return StoredResponse(
            status=row.response_status,
            body=row.response_body,
            thread_id=row.thread_id,
            run_id=row.run_id,
        )
