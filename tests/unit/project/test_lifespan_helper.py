"""``tests.lifespan.running``: a start or a stop that stalls past the report's delay names every
task of the loop with its stack on stderr, so a stall in CI says what it waited for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from starlette.applications import Starlette

from tests import lifespan


def _slow_app(*, start: float, stop: float) -> Starlette:
    @asynccontextmanager
    async def slow_lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.sleep(start)
        yield
        await asyncio.sleep(stop)

    return Starlette(lifespan=slow_lifespan)


async def test_a_start_that_stalls_reports_the_tasks_it_waits_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lifespan, "STALL_REPORT_SECONDS", 0.05)
    async with lifespan.running(_slow_app(start=0.3, stop=0)):
        pass
    report = capsys.readouterr().err
    assert report.startswith("The app's start-up has taken over 0 s; its tasks:\n")
    assert "in slow_lifespan" in report  # what the lifespan awaits, past its generator
    assert "shutdown" not in report


async def test_a_stop_that_stalls_reports_too_and_a_quick_one_says_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lifespan, "STALL_REPORT_SECONDS", 0.05)
    async with lifespan.running(_slow_app(start=0, stop=0.3)):
        pass
    assert capsys.readouterr().err.startswith("The app's shutdown has taken over 0 s")
    async with lifespan.running(_slow_app(start=0, stop=0)):
        pass
    assert capsys.readouterr().err == ""


async def test_a_start_that_times_out_fails_with_the_report_in_its_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lifespan, "STALL_REPORT_SECONDS", 0.05)
    monkeypatch.setattr(lifespan, "PHASE_SECONDS", 0.2)
    with pytest.raises(lifespan.AppStalledError) as stalled:
        async with lifespan.running(_slow_app(start=5, stop=0)):
            pass
    message = str(stalled.value)
    assert message.startswith("The app's start-up did not end within 0 s.\n")
    assert "in slow_lifespan" in message
    assert stalled.value.__suppress_context__  # the head of the failure is the report
