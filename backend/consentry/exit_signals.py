"""How the app learns, at once, that its server was asked to stop (SIGTERM, SIGINT).

An ASGI server tells its app that it is stopping only after every open response has ended, and
event streams end only when their runs do. So the app listens to the signals itself: while it
runs, the handlers the server installed (uvicorn's ``handle_exit``, which starts the graceful
shutdown) are wrapped so that they also call ``on_exit`` on the event loop. The server's own
handling is unchanged and still comes first.

Signals can only be handled on the main thread, and only Python handlers can be wrapped: under a
server that installed none (or on another thread), nothing is wrapped, and the app learns of the
shutdown from its lifespan's end as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["forwarding_exit_signals"]

_EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_Handler = Callable[[int, FrameType | None], object]


@contextlib.contextmanager
def forwarding_exit_signals(on_exit: Callable[[], None]) -> Iterator[None]:
    """While inside, the server's exit signal handlers also call ``on_exit`` (on this loop)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    wrapped: dict[signal.Signals, tuple[_Handler, _Handler]] = {}
    for sig in _EXIT_SIGNALS:
        handler = signal.getsignal(sig)
        if not callable(handler) or handler is signal.default_int_handler:
            continue  # no server draining on this signal: nothing to add to
        forward = _forwarding(handler, on_exit, loop)
        signal.signal(sig, forward)
        wrapped[sig] = (handler, forward)
    try:
        yield
    finally:
        for sig, (handler, forward) in wrapped.items():
            if signal.getsignal(sig) is forward:  # nobody wrapped ours in the meantime
                signal.signal(sig, handler)


def _forwarding(
    handler: _Handler, on_exit: Callable[[], None], loop: asyncio.AbstractEventLoop
) -> _Handler:
    def forward(sig: int, frame: FrameType | None) -> None:
        handler(sig, frame)
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing to stop
            loop.call_soon_threadsafe(on_exit)

    return forward
