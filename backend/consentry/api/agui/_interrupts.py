"""A Consentry consent as an AG-UI interrupt (``RUN_FINISHED``'s interrupt outcome): ``id`` the
approval id (a ``resume`` entry answers it by this id), ``reason`` the kind, ``message`` the
title, ``expiresAt``, ``metadata`` the proposal, and ``responseSchema`` the payload a resolving
``resume`` entry carries:

- a raw ``interrupt()``: the interrupt's own ``response_schema`` (none: any JSON);
- a consent kit's kind: ``{"decision", "edited"?, "comment"?}``, ``decision`` one of the kind's
  allowed decisions and ``edited`` the kind's edit schema;
- a tool call under review: the same shape, ``edited`` the tool's arguments, or the
  middleware's decision (``{"type", "message"?, "edited_action"?: {"args"}}``); ``toolCallId``
  names the call, when the run told it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ag_ui.core import Interrupt

from consentry.schemas.approvals import RAW_INTERRUPT, TOOL_CALL
from consentry.schemas.events import ConsentEvent
from consentry_graphs.registry import GraphSpec

__all__ = ["Interrupts", "tool_call_key"]


class Interrupts:
    """The interrupts of one graph's consents (its kinds' schemas, built once)."""

    def __init__(self, spec: GraphSpec) -> None:
        self.spec = spec
        self._edit_schemas: dict[str, dict[str, Any] | None] = {
            name: kind.json_schemas()["edit_schema"] for name, kind in spec.consent_kinds.items()
        }

    def of(self, consent: ConsentEvent, tool_calls: Mapping[str, str]) -> Interrupt:
        tool_call_id = None
        if consent.kind == TOOL_CALL:
            name, args = consent.proposal.get("name"), consent.proposal.get("args")
            tool_call_id = tool_calls.get(tool_call_key(str(name), args))
        return Interrupt(
            id=consent.approval_id,
            reason=consent.kind,
            message=consent.title,
            tool_call_id=tool_call_id,
            response_schema=self._response_schema(consent),
            expires_at=consent.expires_at.isoformat() if consent.expires_at else None,
            metadata=consent.proposal,
        )

    def _response_schema(self, consent: ConsentEvent) -> dict[str, Any] | None:
        if consent.kind == RAW_INTERRUPT:
            return consent.response_schema
        edit = (
            consent.response_schema
            if consent.kind == TOOL_CALL
            else self._edit_schemas.get(consent.kind)
        )
        properties: dict[str, Any] = {
            "decision": {"enum": list(consent.allowed_decisions)},
            "comment": {"type": "string", "maxLength": 2000},
        }
        if "edit" in consent.allowed_decisions:
            properties["edited"] = edit or {"type": "object"}
        decision = {
            "type": "object",
            "required": ["decision"],
            "properties": properties,
            "additionalProperties": False,
        }
        if consent.kind != TOOL_CALL:
            return decision
        # A reviewed call also takes the middleware's own decision for it.
        middleware: dict[str, Any] = {
            "type": {"enum": list(consent.allowed_decisions)},
            "message": {"type": "string"},
        }
        if "edit" in consent.allowed_decisions:
            args = edit or {"type": "object"}
            middleware["edited_action"] = {"type": "object", "properties": {"args": args}}
        taken = {"type": "object", "required": ["type"], "properties": middleware}
        return {"oneOf": [decision, {**taken, "additionalProperties": False}]}


def tool_call_key(name: str, args: Any) -> str:
    """A tool call by what it asks (a review's consent names the call by its name and
    arguments, not its id)."""
    return json.dumps([name, args], sort_keys=True)
