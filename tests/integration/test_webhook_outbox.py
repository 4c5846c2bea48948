"""The webhook outbox and its sender on both databases, below the SDK (rows planted in the
outbox, a sender made by the test with an in-process transport): any error of an attempt is a
retry its window bounds, one attempt failing never stops the others, a row found due past its
window is given up without an attempt, a URL planted past the start's check is refused, and the
expiry sweeper prunes the settled rows past the event retention, in batches (docs/webhooks.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

import httpx
import pytest
import sqlalchemy as sa

from consentry.runtime.consents import _expiry
from consentry.runtime.webhooks import WebhookHosts, WebhookSender
from consentry.storage.tables import webhook_deliveries
from tests.conftest import ManualClock

WINDOW_SECONDS = 60.0


async def _quiet(services: Any) -> Any:
    """``services`` with its own sender and sweeper stopped: what the test calls is all that
    touches the outbox."""
    await services.webhooks.stop()
    await services.expiry.stop()
    return services


async def _plant(services: Any, *, url: str, ended: datetime, **fields: Any) -> str:
    """A delivery in the outbox as a run's closing transaction queues it, due at once."""
    delivery_id = str(uuid4())
    row = {
        "id": delivery_id,
        "run_id": str(uuid4()),
        "thread_id": str(uuid4()),
        "tenant": "local",
        "url": url,
        "graph": "city",
        "run_started_at": ended - timedelta(seconds=1),
        "run_ended_at": ended,
        "reason": "completed",
        "error_code": None,
        "metadata": {},
        "run_values": {"answer": 42},
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": ended,
        "created_at": ended,
        "updated_at": ended,
    }
    async with services.db.write() as conn:
        await conn.execute(webhook_deliveries.insert().values(**(row | fields)))
    return delivery_id


async def _rows(services: Any) -> dict[str, dict[str, Any]]:
    async with services.db.read() as conn:
        rows = await conn.execute(sa.select(webhook_deliveries))
        return {str(row.id): dict(row._mapping) for row in rows}


def _sender(
    services: Any,
    clock: ManualClock,
    answer: Callable[[httpx.Request], httpx.Response],
    *,
    hosts: str | WebhookHosts = "127.0.0.1",
    timeout_seconds: float = 5.0,
) -> WebhookSender:
    return WebhookSender(
        db=services.db,
        clock=clock,
        metrics=services.metrics,
        hosts=WebhookHosts(hosts.split(",")) if isinstance(hosts, str) else hosts,
        secret=None,
        retry_seconds=WINDOW_SECONDS,
        timeout_seconds=timeout_seconds,
        owner="test-sender",
        transport=httpx.MockTransport(answer),
    )


def _raising(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/raises":
        raise RuntimeError("a bug of the transport")
    return httpx.Response(200)


async def test_any_error_of_an_attempt_is_a_retry_that_never_stops_the_other_attempts(
    open_client: Any, clock: ManualClock
) -> None:
    async with open_client() as client:
        services = await _quiet(client.services)
        sender = _sender(services, clock, _raising)
        ended = clock()
        raising = await _plant(services, url="http://127.0.0.1:9/raises", ended=ended)
        fine = await _plant(services, url="http://127.0.0.1:9/fine", ended=ended)
        assert await sender.send_due() == 2
        rows = await _rows(services)
        clock.advance(seconds=1)  # the backoff
        assert await sender.send_due() == 1  # it raises again: a retry again
        clock.advance(seconds=WINDOW_SECONDS)
        assert await sender.send_due() == 0  # its window is over: given up, not tried
        given_up = await _rows(services)

    assert (rows[raising]["status"], rows[raising]["last_error"]) == ("pending", "RuntimeError")
    assert (rows[raising]["lease_owner"], rows[raising]["run_values"]) == (None, {"answer": 42})
    assert (rows[fine]["status"], rows[fine]["run_values"]) == ("delivered", None)
    assert (given_up[raising]["status"], given_up[raising]["attempts"]) == ("failed", 2)
    assert (given_up[raising]["last_error"], given_up[raising]["run_values"]) == (
        "RuntimeError",
        None,
    )


async def test_the_hosts_check_and_the_post_share_one_timeout_within_the_lease(
    open_client: Any, clock: ManualClock
) -> None:
    async def hanging(host: str) -> list[str]:  # a name server that never answers
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async with open_client() as client:
        services = await _quiet(client.services)
        hosts = WebhookHosts(["*.example.com"], resolve=hanging)
        sender = _sender(services, clock, _raising, hosts=hosts, timeout_seconds=0.2)
        planted = await _plant(services, url="https://hooks.example.com/", ended=clock())
        async with asyncio.timeout(sender.lease_seconds):
            assert await sender.send_due() == 1
        rows = await _rows(services)

    assert (rows[planted]["status"], rows[planted]["last_error"]) == ("pending", "TimeoutError")
    assert rows[planted]["lease_owner"] is None  # recorded, not left to its lease


async def test_a_url_planted_past_the_starts_check_is_refused_and_failed_not_retried(
    open_client: Any, clock: ManualClock
) -> None:
    async with open_client() as client:
        services = await _quiet(client.services)
        sender = _sender(services, clock, _raising, hosts="*.example.com,127.0.0.1")
        ended = clock()
        planted = {
            url: await _plant(services, url=url, ended=ended)
            for url in (
                "http://a..example.com/hook",  # IDNA refuses it (UnicodeError)
                f"http://{'a' * 64}.example.com/hook",
                "http://127.0.0.1:9/\x7f",  # httpx refuses it (InvalidURL)
            )
        }
        assert await sender.send_due() == 3
        rows = await _rows(services)

    outcomes = {url: (rows[id_]["status"], rows[id_]["last_error"]) for url, id_ in planted.items()}
    assert outcomes == dict.fromkeys(planted, ("failed", "webhook_invalid"))


async def test_a_row_found_due_past_its_window_is_given_up_without_an_attempt(
    open_client: Any, clock: ManualClock
) -> None:
    posted: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        posted.append(request)
        return httpx.Response(200)

    async with open_client() as client:
        services = await _quiet(client.services)
        sender = _sender(services, clock, answer)
        long_ago = clock() - timedelta(seconds=2 * WINDOW_SECONDS)
        # Its last attempt never recorded an outcome (its process died, say): due once its lease
        # expired, past the window by then.
        tried = await _plant(
            services, url="http://127.0.0.1:9/hook", ended=long_ago, attempts=3, lease_owner="x"
        )
        late = await _plant(services, url="http://127.0.0.1:9/hook", ended=long_ago)
        assert await sender.send_due() == 1
        rows = await _rows(services)

    assert (rows[tried]["status"], rows[tried]["attempts"]) == ("failed", 3)
    assert (rows[tried]["lease_owner"], rows[tried]["run_values"]) == (None, None)
    assert rows[tried]["last_error"] == "retry_window_over"
    # Never tried (no server ran for as long as the window): it gets its first attempt.
    assert (rows[late]["status"], rows[late]["attempts"]) == ("delivered", 1)
    assert len(posted) == 1


async def test_the_expiry_sweeper_prunes_settled_posts_past_the_event_retention_in_batches(
    open_client: Any, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_expiry, "PRUNE_BATCH", 2)
    async with open_client(event_retention_hours=24) as client:
        services = await _quiet(client.services)
        old = clock() - timedelta(hours=25)
        settled = [
            await _plant(services, url="http://127.0.0.1:9/", ended=old, status=status)
            for status in ("delivered", "failed", "delivered", "failed", "delivered")
        ]
        pending = await _plant(services, url="http://127.0.0.1:9/", ended=old)  # (not settled)
        recent = await _plant(
            services, url="http://127.0.0.1:9/", ended=clock(), status="delivered"
        )
        assert await services.expiry.prune_webhook_deliveries() == len(settled)
        assert await services.expiry.prune_webhook_deliveries() == 0
        rows = await _rows(services)

    assert set(rows) == {pending, recent}
