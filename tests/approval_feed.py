"""Reading ``GET /v1/approvals/stream`` in tests: frame by frame, with a timeout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Feed", "Frame", "change_of", "open_feed"]

WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Frame:
    id: int
    event: str
    data: dict[str, Any]


class Feed:
    """An open approvals stream, read frame by frame."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def next(self) -> Frame:
        fields: dict[str, str] = {}
        async with asyncio.timeout(WAIT_SECONDS):
            async for line in self._lines:
                if line == "":
                    if "data" in fields:
                        return Frame(int(fields["id"]), fields["event"], json.loads(fields["data"]))
                    fields.clear()  # a comment (keep-alive) ends here
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
        raise AssertionError("the approvals stream ended")

    async def changes(self, count: int) -> list[tuple[str, str, str]]:
        """The next ``count`` approval frames as (change, approval id, status)."""
        frames = [await self.next() for _ in range(count)]
        assert {f.event for f in frames} == {"approval"}, frames
        return [change_of(f) for f in frames]

    async def until_ready(self) -> list[Frame]:
        """The frames up to and including ``ready``."""
        frames = [await self.next()]
        while frames[-1].event != "ready":
            frames.append(await self.next())
        return frames


def change_of(frame: Frame) -> tuple[str, str, str]:
    approval = frame.data["approval"]
    return frame.data["change"], approval["approval_id"], approval["status"]


@asynccontextmanager
async def open_feed(
    client: httpx.AsyncClient, headers: dict[str, str] | None = None
) -> AsyncIterator[Feed]:
    async with client.stream("GET", "/v1/approvals/stream", headers=headers or {}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Feed(response.aiter_lines())
