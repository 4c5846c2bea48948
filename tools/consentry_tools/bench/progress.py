"""How far the bench is, on stderr: a bar redrawn in place on a terminal; in a log that is not
one (a file, a pipe, CI), one plain line per finished task and no carriage return.

A redrawn bar is ``\\r`` and the bar again, about 50 times a task: a terminal keeps the last
drawing, a log keeps them all, on one endless line.
"""

from __future__ import annotations

from typing import TextIO

__all__ = ["ProgressLine"]

_BAR_WIDTH = 30
_REDRAWS = 50
"""About how many times a task's bar is drawn, whatever its size."""


class ProgressLine:
    """One task of one server (a concurrency level ``C=10``, a long ``thread``): ``advance`` as
    it goes, ``finish`` once. ``stream`` None shows nothing."""

    def __init__(self, stream: TextIO | None, *, server: str, task: str, total: int) -> None:
        self._stream = stream
        self._server = server
        self._task = task
        self._total = max(1, total)
        self._redraw = stream is not None and stream.isatty()

    def advance(self, done: int) -> None:
        """``done`` of the total are done: redraw the bar (on a terminal)."""
        if self._stream is None or not self._redraw:
            return
        if done != self._total and done % max(1, self._total // _REDRAWS):
            return
        filled = min(done, self._total) * _BAR_WIDTH // self._total
        bar = "#" * filled + "." * (_BAR_WIDTH - filled)
        drawn = f"\r{self._server:>10} {self._task:<7} [{bar}] {done}/{self._total}"
        self._stream.write(drawn)
        self._stream.flush()

    def finish(self, outcome: str) -> None:
        """The task is over: end the bar's line on a terminal, else write ``server task: outcome``
        on a line of its own."""
        if self._stream is None:
            return
        self._stream.write("\n" if self._redraw else f"{self._server} {self._task}: {outcome}\n")
        self._stream.flush()
