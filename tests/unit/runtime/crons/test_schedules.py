"""A cron's schedule read as croniter reads it, in its time zone, checked when it is stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from consentry.errors import InvalidRequestError
from consentry.runtime.crons import CronPlan, Schedule

NOON = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_tick_falls_on_the_wall_clock_of_its_time_zone_summer_and_winter() -> None:
    paris = Schedule.of("0 9 * * *", "Europe/Paris")

    assert paris.next_after(NOON) == datetime(2026, 1, 2, 8, 0, tzinfo=UTC)  # UTC+1
    assert paris.next_after(datetime(2026, 7, 1, tzinfo=UTC)) == datetime(
        2026, 7, 1, 7, 0, tzinfo=UTC
    )  # UTC+2


def test_a_time_the_clocks_go_back_over_ticks_twice_as_croniter_reads_it() -> None:
    night = Schedule.of("30 2 * * *", "Europe/Paris")
    first = night.next_after(datetime(2026, 10, 24, 12, 0, tzinfo=UTC))
    assert first is not None
    second = night.next_after(first)

    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert second == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "after"),
    [
        ("*/15 * * * *", datetime(2026, 1, 1, 12, 15, tzinfo=UTC)),
        ("* * * * * */10", datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC)),
        ("@hourly", datetime(2026, 1, 1, 13, 0, tzinfo=UTC)),
        ("@daily", datetime(2026, 1, 2, 0, 0, tzinfo=UTC)),
        ("0 9 * * MON-FRI", datetime(2026, 1, 2, 9, 0, tzinfo=UTC)),  # Friday
    ],
)
def test_five_fields_six_with_seconds_last_and_nicknames_are_schedules(
    expression: str, after: datetime
) -> None:
    assert Schedule.of(expression, None).next_after(NOON) == after


@pytest.mark.parametrize(
    "expression",
    ["every day", "* * * *", "* * * * * * 2030", "61 * * * *", "R R * * *", "0 R(1-5) * * *", ""],
)
def test_what_is_not_a_fixed_five_or_six_field_schedule_is_refused(expression: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        Schedule.of(expression, None)
    assert refused.value.code == "invalid_schedule"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", "", "Europe/"])
def test_an_unknown_time_zone_is_refused(zone: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        Schedule.of("0 9 * * *", zone)
    assert refused.value.code == "invalid_timezone"


def test_a_plan_that_names_no_time_that_comes_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as refused:
        CronPlan("0 0 30 2 *", None, None, enabled=True).check(NOON)
    assert refused.value.code == "invalid_schedule"


def test_a_plan_has_no_tick_disabled_or_past_its_end() -> None:
    hourly = CronPlan("@hourly", None, None, enabled=True)
    ending = CronPlan("@hourly", None, NOON + timedelta(minutes=59), enabled=True)
    at_its_end = CronPlan("@hourly", None, NOON + timedelta(hours=1), enabled=True)

    assert hourly.next_tick(NOON) == NOON + timedelta(hours=1)
    assert CronPlan("@hourly", None, None, enabled=False).next_tick(NOON) is None
    assert ending.next_tick(NOON) is None
    assert at_its_end.next_tick(NOON) == NOON + timedelta(hours=1)


def test_the_ticks_missed_between_two_moments_are_counted_up_to_a_bound() -> None:
    every_second = Schedule.of("* * * * * *", None)

    assert every_second.ticks_between(NOON, NOON + timedelta(seconds=30), at_most=100) == 30
    assert every_second.ticks_between(NOON, NOON + timedelta(hours=1), at_most=100) == 100
    assert every_second.ticks_between(NOON, NOON, at_most=100) == 0
