"""The headers of a webhook post: its delivery id, and (with ``CONSENTRY_WEBHOOK_SECRET``) a
timestamp and an HMAC-SHA256 signature of ``<timestamp>.<delivery id>.<body>``, so that a receiver
checks who sent it, that it is not an old post replayed, and that the delivery id it dedupes on is
the one sent with that body (``docs/webhooks.md`` has the recipe)."""

from __future__ import annotations

import hashlib
import hmac

from pydantic import SecretStr

__all__ = ["DELIVERY_HEADER", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "post_headers", "signature"]

DELIVERY_HEADER = "X-Consentry-Delivery"
TIMESTAMP_HEADER = "X-Consentry-Timestamp"
SIGNATURE_HEADER = "X-Consentry-Signature"


def signature(secret: SecretStr, *, timestamp: int, delivery_id: str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256, keyed by the secret, of
    ``<timestamp>.<delivery_id>.<body>``."""
    signed = f"{timestamp}.{delivery_id}.".encode() + body
    digest = hmac.new(secret.get_secret_value().encode(), signed, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def post_headers(
    *, delivery_id: str, timestamp: int, body: bytes, secret: SecretStr | None
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
    }
    if secret is not None:
        headers[SIGNATURE_HEADER] = signature(
            secret, timestamp=timestamp, delivery_id=delivery_id, body=body
        )
    return headers
