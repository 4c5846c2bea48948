"""``consentry bench``'s progress on stderr: a bar redrawn in place on a terminal; in a log that is
not a terminal (a file, a pipe, CI), one line per finished level with its figures and no carriage
return, since every ``\\r`` redraw would stay in the log, on one endless line (issue 33, point 10).

The bench here runs for real against an address that refuses every connection: each
conversation is an error at once, and the progress is what a real run shows."""

from __future__ import annotations

import io
import re
import socket
from collections.abc import Iterator

import pytest

from consentry_tools.bench.progress import ProgressLine
from consentry_tools.bench.run import Target, run_bench


class TerminalStream(io.StringIO):
    """What stderr is when it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """An address where every connection is refused: a bound port nobody listens on."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"


async def test_a_log_that_is_not_a_terminal_gets_one_line_per_level_without_carriage_returns(
    refusing_url: str,
) -> None:
    log = io.StringIO()

    await run_bench(
        [Target("server", refusing_url)],
        levels=[1, 2],
        conversations=3,
        approve_ratio=0.5,
        progress=log,
    )

    assert "\r" not in log.getvalue()
    assert re.sub(r"in \d+\.\d s", "in <t> s", log.getvalue()).splitlines() == [
        "server C=1: 3 conversations in <t> s, 3 errors",
        "server C=2: 3 conversations in <t> s, 3 errors",
    ]


async def test_a_terminal_gets_the_bar_redrawn_in_place_at_every_level(refusing_url: str) -> None:
    terminal = TerminalStream()

    await run_bench(
        [Target("server", refusing_url)],
        levels=[1, 2],
        conversations=3,
        approve_ratio=0.5,
        progress=terminal,
    )

    def drawn(level: int) -> str:
        return "".join(
            f"\r    server C={level:<5} [{'#' * (done * 10) + '.' * (30 - done * 10)}] {done}/3"
            for done in (1, 2, 3)
        )

    assert terminal.getvalue() == drawn(1) + "\n" + drawn(2) + "\n"


def test_a_long_task_is_redrawn_about_fifty_times_and_always_at_its_end() -> None:
    terminal = TerminalStream()
    line = ProgressLine(terminal, server="server", task="thread", total=1001)

    for done in range(1, 1002):
        line.advance(done)
    line.finish("1001 turns in 9.9 s")

    drawings = terminal.getvalue().split("\r")[1:]
    assert [drawing.rsplit(" ", 1)[1].strip() for drawing in drawings] == [
        *(f"{done}/1001" for done in range(20, 1001, 20)),
        "1001/1001",
    ]
    assert terminal.getvalue().endswith(f"\r    server thread  [{'#' * 30}] 1001/1001\n")


def test_a_log_gets_nothing_until_the_task_ends() -> None:
    log = io.StringIO()
    line = ProgressLine(log, server="server", task="thread", total=1000)

    for done in range(1, 1001):
        line.advance(done)
    assert log.getvalue() == ""
    line.finish("1000 turns in 9.9 s")

    assert log.getvalue() == "server thread: 1000 turns in 9.9 s\n"
