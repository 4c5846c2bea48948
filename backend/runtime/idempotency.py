"""``Idempotency-Key`` on ``POST /v1/chat`` and on decisions, with Stripe's and the IETF draft's
semantics: the same key and body give the stored response again; the same key with another body
gets 422 ``idempotency_key_reused``; the same key while the first request is still running gets
409 ``request_in_progress``. Keys belong to one owner and are kept at least 24 hours. A request
that is refused (4xx), fails or is cancelled is not stored, so a retry runs it again; keys left
in flight by a process that died are released when the next one starts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from backend.errors import ConflictError, InvalidRequestError
from backend.principal import Principal
from backend.runtime.clock import Clock
from backend.storage import idempotency as repo
from backend.storage.database import Database

__all__ = ["IdempotencyGuard", "StoredResponse", "request_fingerprint"]

KEY_RETENTION = timedelta(hours=24)
T = TypeVar("T")


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


class IdempotencyGuard:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def run(
        self,
        owner: Principal,
        key: str,
        fingerprint: str,
        action: Callable[[], Awaitable[T]],
        describe: Callable[[T], StoredResponse],
    ) -> T | StoredResponse:
        """Run ``action`` once per key: a repeat returns the first run's :class:`StoredResponse`."""
        stored = await self._claim(owner, key, fingerprint)
        if stored is not None:
            return stored
        try:
            result = await action()
        except BaseException:
            # Refused, failed or cancelled: nothing is stored, so a retry runs the request again.
            await asyncio.shield(self._release(owner, key))
            raise
        response = describe(result)
        async with self._db.write() as conn:
            await repo.complete_idempotency_key(
                conn,
                owner,
                key,
                response_status=response.status,
                response_body=response.body,
                thread_id=response.thread_id,
                run_id=response.run_id,
            )
        return result

    async def _release(self, owner: Principal, key: str) -> None:
        async with self._db.write() as conn:
            await repo.release_idempotency_key(conn, owner, key)

    async def release_abandoned(self) -> int:
        """At start-up: keys whose request was in flight when the last process stopped are
        forgotten (one process serves the database, so none is really in flight)."""
        async with self._db.write() as conn:
            return await repo.release_in_flight_keys(conn)

    async def _claim(self, owner: Principal, key: str, fingerprint: str) -> StoredResponse | None:
        async with self._db.write() as conn:
            if await repo.claim_idempotency_key(
                conn, owner, key, request_hash=fingerprint, now=self._clock()
            ):
                return None
            row = await repo.find_idempotency_key(conn, owner, key)
        assert row is not None
        if row.request_hash != fingerprint:
            raise InvalidRequestError(
                "This Idempotency-Key was used with a different request.",
                code="idempotency_key_reused",
                details={"idempotency_key": key},
            )
        if row.status != "done":
            raise ConflictError(
                "A request with this Idempotency-Key is still in progress.",
                code="request_in_progress",
                details={"idempotency_key": key},
            )
        return StoredResponse(
            status=row.response_status,
            body=row.response_body,
            thread_id=row.thread_id,
            run_id=row.run_id,
        )
