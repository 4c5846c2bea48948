"""A thread that runs the calls it is handed, in order, for the event loop: one per SQLite
connection, for the work that must not hold the loop up (``sqlite_connection``).

A call costs one hop each way: the job goes on a queue the thread blocks on, and its result
comes back through one future woken by ``call_soon_threadsafe``. An async driver such as
aiosqlite makes a hop like this for every cursor operation (about three per statement).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["SqliteThread"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

_Job = tuple[Callable[[], Any], "asyncio.Future[Any] | None", "asyncio.AbstractEventLoop | None"]


class SqliteThread:
    """Runs calls on one thread, in the order they were handed over."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._handed = 0  # jobs handed over (counted on the caller's side)
        self._finished = 0  # jobs finished (counted on the thread)

    @property
    def busy(self) -> bool:
        """Whether a job handed over has not finished yet (one a cancelled caller left, say)."""
        return self._handed != self._finished

    def start(self) -> None:
        self._thread.start()

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the thread and wait for what it returns (or raises).

        A caller cancelled while waiting does not stop the call: it still runs, in its turn."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._handed += 1
        self._jobs.put((lambda: fn(*args, **kwargs), future, loop))
        return await future

    def post(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the thread after what is queued, without waiting for it."""
        self._handed += 1
        self._jobs.put((fn, None, None))

    def post_then(
        self, fn: Callable[[], object], loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]
    ) -> None:
        """Like :meth:`post`, and ``done`` gets its result (None) once ``fn`` ran, even if it
        failed (which is logged): for a caller that must not start before it, whoever waits."""

        def run_then_tell() -> None:
            try:
                fn()
            finally:
                _hand_back(loop, _succeed, done, None)

        self.post(run_then_tell)

    async def stop(self) -> None:
        """Run what is queued, then end the thread."""
        if self._thread.is_alive():
            self._jobs.put(None)
            await asyncio.to_thread(self._thread.join)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future, loop = job
            try:
                result = fn()
            except BaseException as exc:  # handed to the caller, or logged when nobody waits
                self._finished += 1
                if future is None or loop is None:
                    logger.warning("sqlite: a call nobody waits for failed: %r", exc)
                else:
                    _hand_back(loop, _fail, future, exc)
            else:
                self._finished += 1
                if future is not None and loop is not None:
                    _hand_back(loop, _succeed, future, result)


def _hand_back(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[asyncio.Future[Any], Any], None],
    future: asyncio.Future[Any],
    outcome: Any,
) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody to tell
        loop.call_soon_threadsafe(settle, future, outcome)


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
