"""Guards: what a request or a run may not exceed or repeat: request limits (body size, JSON
shape, unstorable text), per-principal rate limits and open streams, per-tenant active runs,
token budgets, and ``Idempotency-Key``."""

from __future__ import annotations

from consentry.runtime.guards._body_limit import RequestBodyLimits
from consentry.runtime.guards._budgets import BudgetExhaustedError, TokenMeter
from consentry.runtime.guards._idempotency import (
    KEY_RETENTION,
    IdempotencyGuard,
    KeyHold,
    StartsRun,
    StoredResponse,
    request_fingerprint,
)
from consentry.runtime.guards._rate_limits import RateKind, RateLimiter, rate_limiter
from consentry.runtime.guards._streams import OpenStreams, StreamSlots
from consentry.runtime.guards._tenant_runs import refuse_if_tenant_at_cap
from consentry.runtime.guards._url_text import UnstorableTextInUrl

__all__ = [
    "KEY_RETENTION",
    "BudgetExhaustedError",
    "IdempotencyGuard",
    "KeyHold",
    "OpenStreams",
    "RateKind",
    "RateLimiter",
    "RequestBodyLimits",
    "StartsRun",
    "StoredResponse",
    "StreamSlots",
    "TokenMeter",
    "UnstorableTextInUrl",
    "rate_limiter",
    "refuse_if_tenant_at_cap",
    "request_fingerprint",
]
