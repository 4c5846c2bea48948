"""The webhook sender: posts the runs' ends the outbox holds (``storage.webhooks``), one lifespan
task per process.

It is woken right after a transaction that queued a delivery commits (on SQLite by this
process's own notice; on PostgreSQL by the ``consentry_webhooks`` notification, which every
replica gets), and otherwise sleeps until the first pending delivery is due: no polling. Each
due delivery is taken with a lease (one replica sends each attempt), its host checked and posted
with httpx (no redirects followed, no proxy from the environment), the check and the post bounded
together by ``CONSENTRY_WEBHOOK_TIMEOUT_SECONDS``, and marked: a 2xx is ``delivered``; anything
else (a status, any exception of the attempt) is tried again after a backoff that doubles from
:data:`FIRST_BACKOFF_SECONDS` up to :data:`MAX_BACKOFF_SECONDS`, until the next attempt would fall
past ``CONSENTRY_WEBHOOK_RETRY_SECONDS`` after the run's end (``failed`` then; a due row already
past it is failed when due rows are taken). A process killed mid-send leaves the lease to expire
(:meth:`WebhookSender.lease_seconds`), and the post is sent again, under the same delivery id.
Every attempt is logged and counted (``consentry_webhook_attempts_total{outcome}``).

At most :data:`IN_FLIGHT` attempts of a process run at once: each takes its row and records its
outcome in a write transaction of its own, so a burst of due posts holds that many write
transactions at most (on SQLite they queue for its one writer), not one per due row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

import httpx
from pydantic import SecretStr

from consentry.observability.metrics import Metrics, WebhookOutcome
from consentry.runtime.assistants import assistant_uuid
from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock, utc_now
from consentry.runtime.webhooks._hosts import WebhookHosts
from consentry.runtime.webhooks._signing import post_headers
from consentry.schemas.sdk_runs import WebhookPayload, ended_status
from consentry.storage import webhooks as webhooks_repo
from consentry.storage.db.database import Database
from consentry.storage.webhooks import Delivery, DeliveryStatus

__all__ = ["FIRST_BACKOFF_SECONDS", "IN_FLIGHT", "MAX_BACKOFF_SECONDS", "WebhookSender"]

log = logging.getLogger(__name__)

FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 600.0
MAX_SLEEP_SECONDS = 3600.0
FAILED_PASS_RETRY_SECONDS = 5.0
"""After a pass that failed (the database away), when to look again."""
BATCH = 50
IN_FLIGHT = 4
"""Attempts of one process under way at once (each takes its row, then records its outcome)."""
LEASE_MARGIN_SECONDS = 5.0
"""What an attempt's lease holds beyond its timeout: room to take its row and record it."""
STOP_WAIT_SECONDS = 5.0


_STATUS: dict[WebhookOutcome, DeliveryStatus] = {
    "delivered": "delivered",
    "retry": "pending",
    "gave_up": "failed",
    "refused": "failed",
}


def payload(delivery: Delivery, *, sent_at: datetime) -> WebhookPayload:
    """The body of ``delivery``'s post: the run's record, as ``runs.get`` reads it, and what
    the Agent Server adds to it."""
    return WebhookPayload.model_validate(
        {
            "run_id": delivery.run_id,
            "thread_id": delivery.thread_id,
            "assistant_id": assistant_uuid(delivery.graph),
            "created_at": delivery.run_started_at,
            "updated_at": delivery.run_ended_at,
            "status": ended_status(delivery.reason),
            "metadata": delivery.metadata or {},
            "reason": delivery.reason,
            "error_code": delivery.error_code,
            "run_started_at": delivery.run_started_at,
            "run_ended_at": delivery.run_ended_at,
            "webhook_sent_at": sent_at,
            "values": delivery.run_values,
            "error": delivery.error_code,
        }
    )


class WebhookSender(BackgroundLoop):
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        metrics: Metrics,
        hosts: WebhookHosts,
        secret: SecretStr | None,
        retry_seconds: float,
        timeout_seconds: float,
        owner: str,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``owner``: who holds this process's leases. ``transport``: httpx's (tests)."""
        self._db = db
        self._clock = clock
        self._metrics = metrics
        self._hosts = hosts
        self._secret = secret
        self._window = timedelta(seconds=retry_seconds)
        self._timeout = timeout_seconds
        self._owner = owner
        self._transport = transport
        self._wake = asyncio.Event()
        self._in_flight = asyncio.Semaphore(IN_FLIGHT)
        self._task: asyncio.Task[None] | None = None

    @property
    def lease_seconds(self) -> float:
        """How long an attempt holds its delivery: its timeout (the host's check and the post
        together), and room to take and record it."""
        return self._timeout + LEASE_MARGIN_SECONDS

    def wake(self, delivery_id: str = "") -> None:
        """A delivery was queued (a notification): look now."""
        self._wake.set()

    async def send_due(self) -> int:
        """Send every delivery due now that this process gets (:data:`IN_FLIGHT` at a time);
        how many attempts it made. Due deliveries already past their window are given up."""
        now = self._clock()
        async with self._db.read() as conn:
            due = await webhooks_repo.due_deliveries(conn, now=now, limit=BATCH)
        if not due:
            return 0  # (no write transaction for nothing)
        async with self._db.write() as conn:
            expired = await webhooks_repo.fail_expired_deliveries(
                conn, ended_before=now - self._window, now=now
            )
        for delivery_id in expired:
            self._metrics.webhook_attempted("gave_up")
            log.warning(
                "webhook given up past its retry window",
                extra={"delivery_id": delivery_id, "outcome": "gave_up"},
            )
        due = [delivery_id for delivery_id in due if delivery_id not in expired]
        if not due:
            return 0
        async with httpx.AsyncClient(
            transport=self._transport,
            timeout=self._timeout,
            follow_redirects=False,
            trust_env=False,  # no proxy (nor its credentials) from the environment
        ) as http:
            done = await asyncio.gather(
                *(self._attempt(http, id_) for id_ in due), return_exceptions=True
            )
        for result in done:
            if isinstance(result, Exception):  # (the database, taking or recording a row)
                log.error("a webhook attempt failed", exc_info=result)
        return sum(result for result in done if isinstance(result, int))

    async def _attempt(self, http: httpx.AsyncClient, delivery_id: str) -> int:
        async with self._in_flight:
            now = self._clock()
            lease_until = now + timedelta(seconds=self.lease_seconds)
            async with self._db.write() as conn:
                delivery = await webhooks_repo.take_delivery(
                    conn, delivery_id, owner=self._owner, now=now, lease_until=lease_until
                )
            if delivery is None:
                return 0  # another replica has it, or it ended
            try:
                async with asyncio.timeout(self._timeout):
                    outcome, error = await self._post(http, delivery)
            except Exception as exc:  # (a timeout, a URL httpx refuses...): its window applies
                outcome, error = "retry", type(exc).__name__
            await self._record(delivery, outcome, error)
            return 1

    async def _post(
        self, http: httpx.AsyncClient, delivery: Delivery
    ) -> tuple[WebhookOutcome, str | None]:
        """POST the delivery once: ``delivered``, or ``retry`` with why (``refused`` when the
        URL may no longer be posted to: not retried). An exception is the caller's retry."""
        refusal = await self._hosts.refusal(delivery.url)
        if refusal == "host_not_resolved":  # (the name server may answer later)
            return "retry", refusal
        if refusal is not None:
            return "refused", refusal
        # The machine's wall clock, not the server's (``runtime.clock``): the receiver checks the
        # signed timestamp against its own wall clock.
        sent_at = utc_now()
        body = payload(delivery, sent_at=sent_at).model_dump_json().encode()
        headers = post_headers(
            delivery_id=delivery.id,
            timestamp=int(sent_at.timestamp()),
            body=body,
            secret=self._secret,
        )
        response = await http.post(delivery.url, content=body, headers=headers)
        if response.is_success:
            return "delivered", None
        return "retry", f"HTTP {response.status_code}"

    async def _record(self, delivery: Delivery, outcome: WebhookOutcome, error: str | None) -> None:
        now = self._clock()
        backoff = min(FIRST_BACKOFF_SECONDS * 2 ** (delivery.attempts - 1), MAX_BACKOFF_SECONDS)
        next_at = now + timedelta(seconds=backoff)
        if outcome == "retry" and next_at > delivery.run_ended_at + self._window:
            outcome = "gave_up"
        status = _STATUS[outcome]
        async with self._db.write() as conn:
            kept = await webhooks_repo.record_attempt(
                conn,
                delivery,
                owner=self._owner,
                status=status,
                next_attempt_at=next_at if status == "pending" else None,
                error=error,
                now=now,
            )
        self._metrics.webhook_attempted(outcome)
        log.log(
            logging.INFO if outcome == "delivered" else logging.WARNING,
            "webhook attempt %s",
            outcome,
            extra={
                "delivery_id": delivery.id,
                "run_id": delivery.run_id,
                "thread_id": delivery.thread_id,
                "attempt": delivery.attempts,
                "outcome": outcome,
                "error": error,
                "recorded": kept,
            },
        )

    async def _seconds_to_next_due(self) -> float:
        async with self._db.read() as conn:
            due = await webhooks_repo.next_attempt_due(conn)
        if due is None:
            return MAX_SLEEP_SECONDS
        return min(max((due - self._clock()).total_seconds(), 0.0), MAX_SLEEP_SECONDS)

    async def _run(self) -> None:
        async def one_pass() -> float:
            self._wake.clear()  # a delivery queued from now on wakes the next wait
            await self.send_due()
            return await self._seconds_to_next_due()

        async def wait(delay: float) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay)

        await self._passes(
            one_pass,
            wait=wait,
            retry_seconds=FAILED_PASS_RETRY_SECONDS,
            failure="sending webhooks failed; retrying",
        )

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="webhook-sender")

    async def stop(self) -> None:
        """Stop between statements, as the expiry sweeper does (up to ``STOP_WAIT_SECONDS``):
        an attempt cut after that is sent again once its lease expires."""
        await self._stop_between_passes(STOP_WAIT_SECONDS)
        self._task = None
