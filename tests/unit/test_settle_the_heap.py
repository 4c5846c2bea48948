"""``consentry serve``, once started, freezes what start-up made and collects the youngest
generation less often (``serve.settle_the_heap``; the figures are in its docstring)."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

import consentry.serve
from consentry.serve import YOUNG_COLLECTION_THRESHOLD, settle_the_heap


@pytest.fixture
def heap_restored() -> Iterator[None]:
    """The test process's collector as it was (a frozen heap is never collected)."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_the_heap_is_frozen_and_the_young_collected_less_often(heap_restored: None) -> None:
    gc.unfreeze()
    _, older, oldest = gc.get_threshold()

    settle_the_heap()

    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, older, oldest)


@pytest.mark.parametrize("started", [True, False])
async def test_the_server_settles_the_heap_once_it_has_started(
    monkeypatch: pytest.MonkeyPatch, started: bool
) -> None:
    settled: list[bool] = []

    async def uvicorns_startup(self: uvicorn.Server, sockets: list[socket.socket] | None) -> None:
        self.started = started

    monkeypatch.setattr(uvicorn.Server, "startup", uvicorns_startup)
    monkeypatch.setattr(consentry.serve, "settle_the_heap", lambda: settled.append(True))
    server: Any = consentry.serve._AnnouncedServer(uvicorn.Config(app=None), summary=[])
    server.servers = []

    await server.startup()

    assert settled == ([True] if started else [])
