"""The server's clock (``runtime.clock.MonotonicClock``): the wall-clock time read at its start,
advanced by a monotonic clock, so that a step of the machine's clock neither expires nor extends
a deadline or a lease (issue 38)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from consentry.runtime.clock import MonotonicClock

START = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
DAY = 86_400.0


class MachineClocks:
    """A machine's wall clock, which an operator or NTP may step, and its monotonic clock."""

    def __init__(self) -> None:
        self.wall_seconds = START.timestamp()
        self.monotonic_seconds = 1_000.0

    def wall(self) -> float:
        return self.wall_seconds

    def monotonic(self) -> float:
        return self.monotonic_seconds

    def pass_time(self, seconds: float) -> None:
        self.wall_seconds += seconds
        self.monotonic_seconds += seconds


def test_it_starts_at_the_wall_clock_and_follows_the_time_that_passes() -> None:
    machine = MachineClocks()
    clock = MonotonicClock(wall=machine.wall, elapsed=machine.monotonic)
    assert clock() == START

    machine.pass_time(90.5)

    assert clock() == START + timedelta(seconds=90.5)
    assert clock().tzinfo is UTC


def test_a_step_of_the_wall_clock_forward_or_back_does_not_move_it() -> None:
    machine = MachineClocks()
    clock = MonotonicClock(wall=machine.wall, elapsed=machine.monotonic)
    machine.pass_time(60)

    machine.wall_seconds += 2 * DAY  # a consent's whole TTL and more, at once
    forward = clock()
    machine.wall_seconds -= 5 * DAY
    back = clock()

    assert forward == back == START + timedelta(seconds=60)
    machine.pass_time(30)
    assert clock() == START + timedelta(seconds=90)


def test_the_default_clock_counts_real_time() -> None:
    clock = MonotonicClock()
    first = clock()
    second = clock()

    assert second >= first
    assert abs((first - datetime.now(UTC)).total_seconds()) < 5
