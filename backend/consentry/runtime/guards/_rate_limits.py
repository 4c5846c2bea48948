"""Per-principal rate limits: a token bucket per (principal, kind), kept in this process.

A bucket holds up to ``burst`` tokens and gains ``per_minute / 60`` tokens a second. Each request
of its kind takes one token; a request that finds less than one is refused with 429
``rate_limited`` and ``Retry-After``: the whole seconds until a token is back. Nothing runs in
the background: a bucket is refilled when it is next used, from the time that passed (lazy
refill), by the app's clock.

Memory stays bounded. A bucket left alone until it would be full again is the same as no bucket,
so such idle buckets are dropped as requests come (the least recently used first, a few per
request); and past ``max_buckets`` per kind the least recently used is dropped even if it is not
full, which can only let that principal through sooner.

The buckets live in one replica: with N replicas behind a balancer a principal gets up to N times
the rate, so give each replica ``rate / N`` (docs/limits.md).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from consentry.errors import TooManyRequestsError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.settings import Settings

__all__ = ["MAX_BUCKETS", "Rate", "RateKind", "RateLimiter", "rate_limiter"]

RateKind = Literal["messages", "decisions"]
"""``messages``: requests that start a run (a chat message, a retry). ``decisions``: a decision
on a consent (a chat ``resume`` or ``POST /v1/approvals/{id}/decision``)."""

MAX_BUCKETS = 100_000
"""Buckets kept per kind at most (a bucket is a few hundred bytes)."""
_EVICTIONS_PER_CALL = 4


@dataclass(frozen=True, slots=True)
class Rate:
    per_minute: int
    """Tokens gained per minute; 0 turns the limit off."""
    burst: int
    """Tokens a bucket holds at most (and starts with)."""
    setting: str
    """The setting that names the rate, for error details (``rate_limit_messages_per_minute``)."""

    @property
    def per_second(self) -> float:
        return self.per_minute / 60.0

    @property
    def seconds_to_fill(self) -> float:
        return self.burst / self.per_second


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self, rates: Mapping[RateKind, Rate], *, clock: Clock, max_buckets: int = MAX_BUCKETS
    ) -> None:
        self._rates = {kind: rate for kind, rate in rates.items() if rate.per_minute > 0}
        self._clock = clock
        self._max_buckets = max_buckets
        self._buckets: dict[RateKind, OrderedDict[Principal, _Bucket]] = {
            kind: OrderedDict() for kind in self._rates
        }

    def __len__(self) -> int:
        """Buckets kept, of every kind."""
        return sum(len(buckets) for buckets in self._buckets.values())

    def charge(self, owner: Principal, kind: RateKind) -> None:
        """Take one token from ``owner``'s bucket of ``kind``, or raise 429 ``rate_limited``."""
        rate = self._rates.get(kind)
        if rate is None:
            return
        buckets = self._buckets[kind]
        now = self._clock().timestamp()
        self._evict(buckets, rate, now)
        bucket = buckets.pop(owner, None)
        if bucket is None:
            bucket = _Bucket(tokens=float(rate.burst), updated=now)
        elapsed = max(0.0, now - bucket.updated)  # a clock set back refills nothing
        bucket.tokens = min(float(rate.burst), bucket.tokens + elapsed * rate.per_second)
        bucket.updated = now
        buckets[owner] = bucket  # the most recently used go last
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return
        retry_after = math.ceil((1.0 - bucket.tokens) / rate.per_second)
        raise TooManyRequestsError(
            f"Too many {kind} from you: at most {rate.per_minute} a minute (bursts of "
            f"{rate.burst}). Try again in {retry_after} s.",
            retry_after=retry_after,
            details={
                "limit": rate.setting,
                "max": rate.per_minute,
                "burst": rate.burst,
                "retry_after": retry_after,
            },
        )

    def _evict(self, buckets: OrderedDict[Principal, _Bucket], rate: Rate, now: float) -> None:
        """Drop a few buckets that would be full again (the same as none), and the least recently
        used one past ``max_buckets``."""
        for _ in range(_EVICTIONS_PER_CALL):
            if not buckets:
                return
            owner, oldest = next(iter(buckets.items()))
            if len(buckets) < self._max_buckets and now - oldest.updated < rate.seconds_to_fill:
                return
            del buckets[owner]


def rate_limiter(settings: Settings, clock: Clock) -> RateLimiter:
    """The limiter of ``CONSENTRY_RATE_LIMIT_*``."""
    return RateLimiter(
        {
            "messages": Rate(
                settings.rate_limit_messages_per_minute,
                settings.rate_limit_messages_burst,
                "rate_limit_messages_per_minute",
            ),
            "decisions": Rate(
                settings.rate_limit_decisions_per_minute,
                settings.rate_limit_decisions_burst,
                "rate_limit_decisions_per_minute",
            ),
        },
        clock=clock,
    )
