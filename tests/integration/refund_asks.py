"""A consent asked from outside the node's own module (``undeclared_kind_graphs.hidden``)."""

from __future__ import annotations

from typing import Any

from consentry_graphs.examples.refund_consent import REFUND, RefundProposal


def ask_for_refund() -> dict[str, Any]:
    proposal = RefundProposal(order_id="A-1", amount_cents=500)
    return REFUND.ask(title="Refund order A-1?", proposal=proposal).to_state()
