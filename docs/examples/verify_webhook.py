"""Verifying a Consentry webhook post on the receiver's side (docs/webhooks.md): the signature
over ``<timestamp>.<delivery id>.<raw body>`` with the shared secret, and the timestamp's age.
Standard library only; tests/integration/test_sdk_webhooks.py runs it against real posts."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

TOLERANCE_SECONDS = 300


def verify_post(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE_SECONDS,
) -> bool:
    """Whether a post is Consentry's, signed with ``secret``, sent within ``tolerance`` seconds
    of ``now``. ``headers``: lower-case names; ``body``: the raw bytes, before any JSON parsing.
    The delivery id a receiver dedupes on (``x-consentry-delivery``) is signed too."""
    timestamp = headers.get("x-consentry-timestamp", "")
    delivery_id = headers.get("x-consentry-delivery", "")
    signature = headers.get("x-consentry-signature", "")
    if not (timestamp.isascii() and timestamp.isdigit()) or not signature.isascii():
        return False
    if not signature.startswith("sha256="):
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False  # an old post replayed
    signed = f"{timestamp}.{delivery_id}.".encode() + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(signature.removeprefix("sha256=").encode(), expected.encode())
