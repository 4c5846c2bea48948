"""Guards: what a request or a run may not exceed or repeat: per-principal rate limits and open
streams, per-tenant active runs, token budgets, and ``Idempotency-Key``. (The limits a request
meets before any route parses it, body size, JSON shape and unstorable text in its URL, are ASGI
middleware: ``api.http``.)"""

from __future__ import annotations

from consentry.runtime.guards._budgets import BudgetExhaustedError, TokenMeter
from consentry.runtime.guards._idempotency import (
    KEY_RETENTION,
    IdempotencyGuard,
    KeyHold,
    StoredResponse,
    request_fingerprint,
)
from consentry.runtime.guards._rate_limits import RateKind, RateLimiter, rate_limiter
from consentry.runtime.guards._streams import OpenStreams, StreamSlots
from consentry.runtime.guards._tenant_runs import refuse_if_tenant_at_cap

__all__ = [
    "KEY_RETENTION",
    "BudgetExhaustedError",
    "IdempotencyGuard",
    "KeyHold",
    "OpenStreams",
    "RateKind",
    "RateLimiter",
    "StoredResponse",
    "StreamSlots",
    "TokenMeter",
    "rate_limiter",
    "refuse_if_tenant_at_cap",
    "request_fingerprint",
]
