"""A cron's schedule: its expression (read by croniter, the parser the Agent Server uses too) in
its time zone, and its next tick after a moment.

Five fields (minute, hour, day of month, month, day of week), six with seconds last (croniter's
reading), or a nickname (``@hourly``, ``@daily``, ``@weekly``, ``@monthly``, ``@yearly``). A
tick falls on the wall clock of the time zone (``0 9 * * *`` in ``Europe/Paris`` is 9:00 there,
summer and winter; a time that comes twice when the clocks go back ticks twice, as croniter and
the Agent Server read it); it is kept in UTC. croniter's random fields (``R``) are refused: a
schedule means the same times wherever it is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from consentry.errors import InvalidRequestError

__all__ = ["Schedule"]

_RANDOM = re.compile(r"(^|[,/])R($|[(,])", re.IGNORECASE)
"""croniter's random value of a field (``R``, ``R(1-5)``), which it picks anew each reading."""
_NICKNAMES = frozenset(
    {"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"}
)


@dataclass(frozen=True, slots=True)
class Schedule:
    expression: str
    zone: tzinfo

    @classmethod
    def of(cls, expression: str, timezone: str | None) -> Schedule:
        """The schedule, checked: 422 ``invalid_schedule`` or ``invalid_timezone``."""
        fields = expression.split()
        nickname = len(fields) == 1 and fields[0].lower() in _NICKNAMES
        random = any(_RANDOM.search(field) for field in fields)
        valid = len(fields) in (5, 6) and not random and croniter.is_valid(expression)
        if not nickname and not valid:
            raise InvalidRequestError(
                "The schedule is not a cron expression of five fields (minute hour "
                "day-of-month month day-of-week), six with seconds last, or a nickname such "
                "as `@daily`.",
                code="invalid_schedule",
                details={"schedule": expression},
            )
        return cls(expression, _zone(timezone))

    def ticks_between(self, start: datetime, end: datetime, *, at_most: int) -> int:
        """How many ticks fall after ``start`` and by ``end`` (counted up to ``at_most``)."""
        count, moment = 0, start
        while count < at_most:
            following = self.next_after(moment)
            if following is None or following > end:
                break
            count, moment = count + 1, following
        return count

    def next_after(self, moment: datetime) -> datetime | None:
        """The first tick strictly after ``moment``, in UTC (None: there is none, as for
        February 30th)."""
        try:
            ticks = croniter(self.expression, moment.astimezone(self.zone))
            following: datetime = ticks.get_next(datetime)
        except CroniterError:  # (croniter gives up after years without a match)
            return None
        return following.astimezone(UTC)


def _zone(timezone: str | None) -> tzinfo:
    if timezone is None:
        return UTC
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):  # (ValueError: a path, an empty name)
        raise InvalidRequestError(
            "Not an IANA time zone (such as `Europe/Paris` or `UTC`).",
            code="invalid_timezone",
            details={"timezone": timezone},
        ) from None
