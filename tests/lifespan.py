"""An app's lifespan in a test (``async with running(app) as manager``), with room for a busy
machine and a report when a start or a stop stalls.

A start imports and compiles the graphs the app serves, migrates the database and connects its
listeners; a stop waits for the runs it stops (``SHUTDOWN_GRACE_SECONDS``). On a machine busy
with the rest of the suite either can take several seconds, so a phase may take up to
:data:`PHASE_SECONDS`. One that takes longer than :data:`STALL_REPORT_SECONDS` writes every task
of the loop with its stack to stderr (pytest shows it under the failing test): what it waits for
is named, not guessed at. A phase that times out raises :class:`AppStalledError`, whose message
is the last report: a CI log that keeps only a failure's head still names what the app waited on.
"""

from __future__ import annotations

import asyncio
import gc
import io
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import AsyncGeneratorType, FrameType

from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp

__all__ = ["PHASE_SECONDS", "STALL_REPORT_SECONDS", "AppStalledError", "running"]

PHASE_SECONDS = 120.0
STALL_REPORT_SECONDS = 30.0


class AppStalledError(AssertionError):
    """A start or a stop took longer than :data:`PHASE_SECONDS`; the message names its tasks."""


@asynccontextmanager
async def running(app: ASGIApp) -> AsyncIterator[LifespanManager]:
    manager = LifespanManager(app, startup_timeout=PHASE_SECONDS, shutdown_timeout=PHASE_SECONDS)
    with _stall_report("start-up"):
        await manager.__aenter__()
    try:
        yield manager
    except BaseException as exc:
        with _stall_report("shutdown"):
            if not await manager.__aexit__(type(exc), exc, exc.__traceback__):
                raise
    else:
        with _stall_report("shutdown"):
            await manager.__aexit__(None, None, None)


@contextmanager
def _stall_report(phase: str) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    timer = loop.call_later(STALL_REPORT_SECONDS, lambda: reports.append(_report_tasks(phase)))
    try:
        yield
    except TimeoutError:
        # The lifespan's task is cancelled by now: the report taken while it waited names why.
        raise AppStalledError(
            f"The app's {phase} did not end within {PHASE_SECONDS:.0f} s.\n"
            + (reports[-1] if reports else _report_tasks(phase))
        ) from None
    finally:
        timer.cancel()


def _report_tasks(phase: str) -> str:
    out = io.StringIO()
    out.write(f"The app's {phase} has taken over {STALL_REPORT_SECONDS:.0f} s; its tasks:\n")
    for task in asyncio.all_tasks():
        out.write(f"--- {task.get_name()}\n{_where(task.get_coro())}")
    # A context manager made of an async generator (a lifespan, ``open_services``) hides what
    # it awaits from its task's chain: each one suspended at an await, from its own frame.
    out.write("Async generators at an await:\n")
    for held in gc.get_objects():
        if isinstance(held, AsyncGeneratorType) and held.ag_await is not None:
            out.write(f"--- {held.__qualname__}\n{_where(held)}")
    sys.stderr.write(out.getvalue())
    return out.getvalue()


def _where(awaitable: object) -> str:
    return "".join(
        f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}\n"
        for frame in _awaited_frames(awaitable)
    )


def _awaited_frames(awaitable: object) -> Iterator[FrameType]:
    """The frames of a coroutine and of what it awaits, down to where it waits (as far as
    Python shows them: an async generator's step hides what the generator awaits)."""
    while awaitable is not None:
        for name in ("cr_frame", "gi_frame", "ag_frame"):
            frame = getattr(awaitable, name, None)
            if frame is not None:
                yield frame
                break
        awaitable = next(
            (
                getattr(awaitable, name)
                for name in ("cr_await", "gi_yieldfrom", "ag_await")
                if getattr(awaitable, name, None) is not None
            ),
            None,
        )
