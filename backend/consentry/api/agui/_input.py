"""AG-UI's ``RunAgentInput`` as the run service's request (``ChatRequest``).

- ``resume`` (non-empty): one decision per entry, on the consent whose approval id is its
  ``interruptId``: ``resolved`` with its ``payload`` as the answer (``api.consent_answers``),
  ``cancelled`` a rejection. The run continues the thread; its ``messages`` are not read.
- otherwise the new messages: those after the conversation's last ``assistant`` message (AG-UI
  sends the whole conversation every time; the thread keeps what came before), its ``user``
  messages and ``tool`` messages (a frontend tool's result), as the graph's ``messages`` input.
  A run may also start with no new message, from ``state`` alone (CopilotKit's ``runAgent()``
  after ``setState``, for a graph whose input is not a conversation).
  ``system``, ``developer``, ``activity`` and ``reasoning`` messages are not the graph's input
  (it keeps its own prompts). Only text is taken: other content parts are refused.
- ``state``: its keys that are input fields of the graph (messages fields aside) go to the graph
  with the messages; the others (a state snapshot a client sends back has every channel) are not
  input. ``tools`` and ``context`` go as the graph's ``tools`` and ``context`` input when its
  input has those fields.
- ``forwardedProps``: ``project_id``, ``note_id``, ``consent_policy`` and ``on_pending_consent``
  are the ``/v1/chat`` request's fields of those names; other props are the client's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import RunAgentInput, TextPart
from pydantic import ValidationError

from consentry.api.chat_requests import chat_request, not_a_run_request
from consentry.api.consent_answers import decision_on
from consentry.errors import InvalidRequestError
from consentry.schemas.chat import ChatRequest, ResumeDecision
from consentry.schemas.events import ConsentEvent
from consentry_graphs.registry import GraphSpec

__all__ = ["message_request", "resume_request", "state_input"]

_FORWARDED = ("project_id", "note_id", "consent_policy", "on_pending_consent")
_CONVERSATION_ROLES = frozenset({"user", "tool"})
_NAMED = frozenset({*_FORWARDED, "tools", "context"})
"""Input fields the request names by fields of their own: never taken from ``state``."""


def message_request(
    body: RunAgentInput, spec: GraphSpec, current: Mapping[str, Any] | None = None
) -> ChatRequest:
    """The request of a run that starts with the input's new messages, and the values of
    ``state_input`` that differ from the thread's ``current`` state."""
    given = state_input(body, spec)
    graph_input: dict[str, Any] = {
        name: value
        for name, value in given.items()
        if current is None or name not in current or current[name] != value
    }
    new = _new_messages(body)
    if new:
        graph_input["messages"] = new
    elif not graph_input:
        raise InvalidRequestError(
            "The input has nothing new to run: a user message (or a tool's result) after the "
            "conversation's last assistant message, a `resume`, or a `state` whose input "
            "fields differ from the thread's.",
            code="no_new_message",
        )
    for name in ("tools", "context"):
        given = getattr(body, name)
        if given and _takes(spec, name):
            graph_input[name] = [item.model_dump(mode="json") for item in given]
    fields = {"thread_id": body.thread_id, "graph": spec.name, "input": graph_input}
    return chat_request({**fields, **_props(body)})


def resume_request(
    body: RunAgentInput, spec: GraphSpec, pending: list[ConsentEvent]
) -> ChatRequest:
    """The request of a run that continues the thread with the answers of ``body.resume``."""
    by_id = {consent.approval_id: consent for consent in pending}
    decisions: list[ResumeDecision] = []
    try:
        for entry in body.resume or []:
            consent = by_id.get(entry.interrupt_id)
            if entry.status == "cancelled":
                decisions.append(ResumeDecision(approval_id=entry.interrupt_id, decision="reject"))
            elif consent is not None:
                decisions.append(decision_on(consent, entry.payload))
            else:  # no longer pending (decided, expired) or unknown: the consent gate says which
                decisions.append(_unlisted(entry.interrupt_id, entry.payload))
        return ChatRequest(thread_id=body.thread_id, graph=spec.name, resume=decisions)
    except ValidationError as exc:  # an id longer than any approval's, too many entries...
        raise not_a_run_request(exc) from None


def _unlisted(approval_id: str, payload: Any) -> ResumeDecision:
    fields = payload if isinstance(payload, dict) and "decision" in payload else {"value": payload}
    try:
        return ResumeDecision.model_validate({**fields, "approval_id": approval_id})
    except ValidationError:  # the gate's answer for the consent (decided, expired) comes first
        return ResumeDecision(approval_id=approval_id, decision="answer", value=None)


def _new_messages(body: RunAgentInput) -> list[dict[str, Any]]:
    trailing: list[Any] = []
    for message in reversed(body.messages):
        if message.role == "assistant":
            break
        trailing.append(message)
    return [_message(m) for m in reversed(trailing) if m.role in _CONVERSATION_ROLES]


def _message(message: Any) -> dict[str, Any]:
    converted = {"role": message.role, "content": _text(message), "id": message.id}
    if message.role == "tool":
        converted["tool_call_id"] = message.tool_call_id
        if message.error:  # the tool failed on the page: the graph reads why, as the result
            said = converted["content"]
            converted["content"] = f"{said}\nError: {message.error}" if said else message.error
    return converted


def _text(message: Any) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = message.content
    if not all(isinstance(part, TextPart) for part in parts):
        kinds = sorted({part.type for part in parts if not isinstance(part, TextPart)})
        raise InvalidRequestError(
            "Only text is taken: this message has other content parts.",
            code="unsupported_content",
            details={"message_id": message.id, "types": kinds},
        )
    return "".join(part.text for part in parts)


def state_input(body: RunAgentInput, spec: GraphSpec) -> dict[str, Any]:
    """What of the input's ``state`` may be the graph's input: its input fields, but for its
    messages and the fields the request names otherwise (``forwardedProps``, ``tools``,
    ``context``). A client sends back the state it was last sent: only what differs from the
    thread's state is input (``message_request``), or a field with a reducer would get its value
    again every turn."""
    io = spec.io
    if not isinstance(body.state, dict) or io is None or io.input_fields is None:
        return {}
    return {
        name: value
        for name, value in body.state.items()
        if name in io.input_fields and name not in io.message_fields and name not in _NAMED
    }


def _takes(spec: GraphSpec, name: str) -> bool:
    io = spec.io
    return io is not None and io.input_fields is not None and name in io.input_fields


def _props(body: RunAgentInput) -> dict[str, Any]:
    props = body.forwarded_props
    if not isinstance(props, dict):
        return {}
    return {name: props[name] for name in _FORWARDED if name in props}
