"""The token buckets behind `429 rate_limited`: a burst, then one request per refill interval,
`Retry-After` in whole seconds, nothing refilled by a clock set back, one bucket per principal and
kind, and memory bounded however many principals come by."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from consentry.errors import TooManyRequestsError
from consentry.principal import Principal
from consentry.runtime.guards import RateLimiter
from consentry.runtime.guards._rate_limits import Rate

ALICE = Principal("acme", "alice")
BOB = Principal("acme", "bob")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _limiter(clock: Clock, *, per_minute: int = 60, burst: int = 3, **kw: int) -> RateLimiter:
    return RateLimiter(
        {
            "messages": Rate(per_minute=per_minute, burst=burst, setting="messages_setting"),
            "decisions": Rate(per_minute=600, burst=1, setting="decisions_setting"),
        },
        clock=clock,
        **kw,
    )


def _refused(limiter: RateLimiter, owner: Principal, kind: str = "messages") -> int:
    with pytest.raises(TooManyRequestsError) as refused:
        limiter.charge(owner, kind)  # type: ignore[arg-type]
    assert refused.value.code == "rate_limited"
    assert refused.value.headers == {"Retry-After": str(refused.value.retry_after)}
    return refused.value.retry_after


def test_a_burst_passes_then_requests_are_refused_until_a_token_is_back() -> None:
    clock = Clock()
    limiter = _limiter(clock, per_minute=30, burst=3)  # a token every 2 s

    for _ in range(3):
        limiter.charge(ALICE, "messages")
    assert _refused(limiter, ALICE) == 2
    clock.advance(1.5)
    assert _refused(limiter, ALICE) == 1  # half a second left: rounded up, never 0
    clock.advance(0.5)
    limiter.charge(ALICE, "messages")
    assert _refused(limiter, ALICE) == 2


def test_a_refused_request_takes_nothing_from_the_bucket() -> None:
    clock = Clock()
    limiter = _limiter(clock, per_minute=60, burst=1)
    limiter.charge(ALICE, "messages")

    for _ in range(50):
        _refused(limiter, ALICE)
    clock.advance(1)

    limiter.charge(ALICE, "messages")


def test_the_bucket_never_holds_more_than_the_burst() -> None:
    clock = Clock()
    limiter = _limiter(clock, per_minute=60, burst=2)
    clock.advance(3600)

    limiter.charge(ALICE, "messages")
    limiter.charge(ALICE, "messages")
    _refused(limiter, ALICE)


def test_a_clock_set_back_refills_nothing() -> None:
    clock = Clock()
    limiter = _limiter(clock, per_minute=60, burst=1)
    limiter.charge(ALICE, "messages")
    clock.advance(-3600)

    _refused(limiter, ALICE)
    clock.advance(3601)
    limiter.charge(ALICE, "messages")


def test_each_principal_and_each_kind_has_its_own_bucket() -> None:
    clock = Clock()
    limiter = _limiter(clock, burst=1)
    limiter.charge(ALICE, "messages")
    _refused(limiter, ALICE)

    limiter.charge(BOB, "messages")
    limiter.charge(ALICE, "decisions")
    _refused(limiter, ALICE, "decisions")


def test_the_error_names_the_setting_and_the_numbers() -> None:
    limiter = _limiter(Clock(), per_minute=6, burst=1)
    limiter.charge(ALICE, "messages")

    with pytest.raises(TooManyRequestsError) as refused:
        limiter.charge(ALICE, "messages")

    assert refused.value.status_code == 429
    assert refused.value.details == {
        "limit": "messages_setting",
        "max": 6,
        "burst": 1,
        "retry_after": 10,
    }
    assert "6 a minute" in refused.value.message


def test_a_rate_of_zero_turns_the_limit_off() -> None:
    limiter = _limiter(Clock(), per_minute=0, burst=1)

    for _ in range(1000):
        limiter.charge(ALICE, "messages")
    assert len(limiter) == 0


def test_idle_buckets_are_dropped_once_they_would_be_full_again() -> None:
    clock = Clock()
    limiter = _limiter(clock, per_minute=60, burst=3)  # full again 3 s after its last use
    for n in range(20):
        limiter.charge(Principal("acme", f"user-{n}"), "messages")
    assert len(limiter) == 20

    clock.advance(2.9)
    limiter.charge(ALICE, "messages")
    assert len(limiter) == 21  # none would be full yet: all kept
    clock.advance(0.1)  # the 20 would be full now, ALICE's not
    for n in range(5):  # each request drops up to 4 of the idle ones
        limiter.charge(Principal("other", f"user-{n}"), "messages")

    assert len(limiter) == 1 + 5
    limiter.charge(ALICE, "messages")
    limiter.charge(ALICE, "messages")
    _refused(limiter, ALICE)  # ALICE's bucket was kept: one token of 3 used


def test_memory_is_bounded_however_many_principals_come_by() -> None:
    clock = Clock()
    limiter = _limiter(clock, burst=1, max_buckets=100)

    for n in range(10_000):
        limiter.charge(Principal("acme", f"user-{n}"), "messages")

    assert len(limiter) == 100
    # The most recent ones are kept: they are still refused.
    _refused(limiter, Principal("acme", "user-9999"))
