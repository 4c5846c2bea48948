"""``consentry.exit_signals.forwarding_exit_signals``: while inside, the Python handlers installed
for SIGINT and SIGTERM (a server's ``handle_exit``) also schedule ``on_exit`` on the event loop,
after doing what they did before; leaving puts them back.

Real signals (``signal.raise_signal``) reach a stand-in for the server's handler that records its
calls. A Python handler runs on the main thread before ``raise_signal`` returns, so what it did is
known at once; what it scheduled on the loop has run once the loop has run every callback it had
(``_loop_ran_callbacks_scheduled_so_far``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from consentry.exit_signals import forwarding_exit_signals

WAIT_SECONDS = 5.0
EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_Handler = Callable[[int, FrameType | None], Any] | int | None


@contextlib.contextmanager
def _installed(handler: _Handler) -> Iterator[None]:
    """``handler`` for both exit signals; whatever was there before comes back afterwards."""
    before = {sig: signal.getsignal(sig) for sig in EXIT_SIGNALS}
    try:
        for sig in EXIT_SIGNALS:
            signal.signal(sig, handler)
        yield
    finally:
        for sig, previous in before.items():
            signal.signal(sig, previous)


def _handlers() -> dict[signal.Signals, _Handler]:
    return {sig: signal.getsignal(sig) for sig in EXIT_SIGNALS}


async def _loop_ran_callbacks_scheduled_so_far() -> None:
    """Returns once the loop has run every callback scheduled before this call (in order)."""
    loop = asyncio.get_running_loop()
    turn = loop.create_future()
    loop.call_soon(turn.set_result, None)
    await turn


@pytest.fixture
def calls() -> list[str]:
    """What happened, in order: the server's handler and ``on_exit`` append to it."""
    return []


@pytest.fixture
def handle_exit(calls: list[str]) -> Iterator[Callable[[int, FrameType | None], None]]:
    """A server's Python handler for both exit signals (it only records that it ran)."""

    def handle_exit(sig: int, frame: FrameType | None) -> None:
        calls.append(f"server handled {signal.Signals(sig).name}")

    with _installed(handle_exit):
        yield handle_exit


@pytest.mark.parametrize("sig", EXIT_SIGNALS, ids=lambda sig: sig.name)
async def test_an_exit_signal_runs_the_servers_handler_then_on_exit_as_a_loop_callback(
    sig: signal.Signals, calls: list[str], handle_exit: Callable[[int, FrameType | None], None]
) -> None:
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()

    def on_exit() -> None:
        calls.append("on_exit" if asyncio.get_running_loop() is loop else "on_exit off the loop")
        exited.set()

    with forwarding_exit_signals(on_exit):
        assert signal.getsignal(sig) is not handle_exit  # wrapped
        signal.raise_signal(sig)
        # Not run inside the signal handler (which may interrupt the loop anywhere): scheduled.
        assert calls == [f"server handled {sig.name}"]
        async with asyncio.timeout(WAIT_SECONDS):
            await exited.wait()

    assert calls == [f"server handled {sig.name}", "on_exit"]


@pytest.mark.parametrize(
    "handler",
    [signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler],
    ids=["SIG_DFL", "SIG_IGN", "default_int_handler"],
)
async def test_signals_without_a_servers_python_handler_are_not_wrapped(
    handler: _Handler, calls: list[str]
) -> None:
    with _installed(handler), forwarding_exit_signals(lambda: calls.append("on_exit")):
        assert _handlers() == {signal.SIGINT: handler, signal.SIGTERM: handler}
    assert calls == []


async def test_a_keyboard_interrupt_stays_a_keyboard_interrupt_without_on_exit(
    calls: list[str],
) -> None:
    with (
        _installed(signal.default_int_handler),
        forwarding_exit_signals(lambda: calls.append("on_exit")),
    ):
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        await _loop_ran_callbacks_scheduled_so_far()
    assert calls == []


async def test_leaving_puts_the_servers_handler_back(
    calls: list[str], handle_exit: Callable[[int, FrameType | None], None]
) -> None:
    with forwarding_exit_signals(lambda: calls.append("on_exit")):
        assert _handlers() != {signal.SIGINT: handle_exit, signal.SIGTERM: handle_exit}
    assert _handlers() == {signal.SIGINT: handle_exit, signal.SIGTERM: handle_exit}

    signal.raise_signal(signal.SIGTERM)
    await _loop_ran_callbacks_scheduled_so_far()
    assert calls == ["server handled SIGTERM"]


async def test_leaving_keeps_a_handler_that_was_installed_over_ours_meanwhile(
    calls: list[str], handle_exit: Callable[[int, FrameType | None], None]
) -> None:
    with forwarding_exit_signals(lambda: calls.append("on_exit")):
        ours = signal.getsignal(signal.SIGTERM)
        assert callable(ours)

        def someone_elses(sig: int, frame: FrameType | None) -> None:
            calls.append("someone else handled SIGTERM")
            ours(sig, frame)

        signal.signal(signal.SIGTERM, someone_elses)

    assert _handlers() == {signal.SIGINT: handle_exit, signal.SIGTERM: someone_elses}
    signal.raise_signal(signal.SIGTERM)
    assert calls == ["someone else handled SIGTERM", "server handled SIGTERM"]


def test_a_signal_after_the_loop_closed_still_reaches_the_server_and_raises_nothing(
    calls: list[str], handle_exit: Callable[[int, FrameType | None], None]
) -> None:
    async def enter(stack: contextlib.ExitStack) -> None:
        stack.enter_context(forwarding_exit_signals(lambda: calls.append("on_exit")))

    with contextlib.ExitStack() as stack:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(enter(stack))
        finally:
            loop.close()
        assert signal.getsignal(signal.SIGTERM) is not handle_exit  # ours, still installed

        signal.raise_signal(signal.SIGTERM)

        assert calls == ["server handled SIGTERM"]


async def test_off_the_main_thread_nothing_is_wrapped(
    calls: list[str], handle_exit: Callable[[int, FrameType | None], None]
) -> None:
    async def handlers_while_inside() -> dict[signal.Signals, _Handler]:
        with forwarding_exit_signals(lambda: calls.append("on_exit")):
            return _handlers()

    def in_a_thread_with_its_own_loop() -> dict[signal.Signals, _Handler]:
        return asyncio.run(handlers_while_inside())

    inside = await asyncio.to_thread(in_a_thread_with_its_own_loop)

    assert inside == {signal.SIGINT: handle_exit, signal.SIGTERM: handle_exit}
    assert _handlers() == {signal.SIGINT: handle_exit, signal.SIGTERM: handle_exit}
    assert calls == []
