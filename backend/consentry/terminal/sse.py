"""Server-Sent Events, as the HTML standard parses them, from a stream of lines.

A frame is the fields up to a blank line: ``event:``, ``id:``, ``data:`` (several ``data:`` lines
join with ``\\n``) and ``retry:``; one space after the colon is dropped; a line starting with
``:`` is a comment (Consentry's keep-alive ``: ping`` and its reconnect hint). A frame with no
``data`` dispatches nothing, but its ``id`` and ``retry`` still count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SseFrame", "SseParser"]


@dataclass(frozen=True)
class SseFrame:
    event: str
    data: str
    id: str | None


class SseParser:
    """Feed it lines (without their line ending); it returns each complete frame.

    ``last_event_id`` is the last ``id:`` seen (send it as ``Last-Event-ID`` to rejoin);
    ``retry_ms`` the last ``retry:`` (how long to wait before rejoining), if any."""

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SseFrame | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def frames(self, lines: Iterable[str]) -> Iterator[SseFrame]:
        """Every frame of ``lines``; an unfinished last frame (no blank line) is dropped."""
        for line in lines:
            frame = self.feed(line)
            if frame is not None:
                yield frame

    def _dispatch(self) -> SseFrame | None:
        event, data = self._event or "message", self._data
        self._event, self._data = "", []
        if not data:
            return None
        return SseFrame(event=event, data="\n".join(data), id=self.last_event_id)
