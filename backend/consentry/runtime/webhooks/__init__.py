"""Webhooks: a run's end posted to the URL its client named (the LangGraph SDK's ``webhook=``).

The URL is checked at the run's start (``_hosts``: 422 before anything is stored), kept on the
run's row at its claim, and the post queued in the outbox in the transaction that ends the run
(``storage.webhooks``); the sender (``_sender``) posts it, signed (``_signing``), and retries it
for a bounded time. The thread's values it carries are read as JSON every database stores
(``runtime.graph_state.read_values_as_json``). ``docs/webhooks.md`` is the receiver's side."""

from __future__ import annotations

from consentry.runtime.webhooks._hosts import WebhookHosts
from consentry.runtime.webhooks._sender import WebhookSender, payload
from consentry.runtime.webhooks._signing import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)

__all__ = [
    "DELIVERY_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "WebhookHosts",
    "WebhookSender",
    "payload",
    "signature",
]
