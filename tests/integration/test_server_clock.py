"""A server measures deadlines and leases with a :class:`MonotonicClock` started with it, unless
a test gives its own: a step of the machine's clock neither expires nor extends a consent's
deadline or a run's lease (``runtime/clock.py``; issue 38)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from consentry.app import create_app
from consentry.runtime.clock import MonotonicClock
from consentry.settings import Settings
from tests.lifespan import running
from tests.sse import ask_for_note_edit


async def test_a_server_keeps_time_with_a_monotonic_clock_of_its_own(db_url: str) -> None:
    settings = Settings(database_url=db_url, sample_notes=False)
    app = create_app(settings)
    async with running(app) as manager:
        services = app.state.services
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            asked_at = datetime.now(UTC)
            _, events = await ask_for_note_edit(client)

    assert isinstance(services.clock, MonotonicClock)
    consent = events[-2]
    deadline = asked_at + timedelta(seconds=settings.consent_ttl_seconds)
    assert abs((consent.expires_at - deadline).total_seconds()) < 30
