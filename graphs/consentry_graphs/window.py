"""A bounded conversation window for a graph's ``messages``.

A checkpoint stores the whole state, so a state that keeps every message makes each step of a
long thread write (and each model call send) the whole conversation again: turn 1000 would cost
a hundred times turn 10. Graphs keep the last messages instead. The full transcript is kept by
the server (``GET /v1/threads/{id}/messages``), not in the graph's state.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage

__all__ = ["DEFAULT_CONVERSATION_WINDOW", "outside_window"]

DEFAULT_CONVERSATION_WINDOW = 40
"""Messages a served graph keeps in its state (``CONSENTRY_CONVERSATION_WINDOW``)."""


def outside_window(messages: Sequence[AnyMessage], keep: int) -> list[RemoveMessage]:
    """The removals that leave at most the last ``keep`` messages, starting at a user message
    (so an assistant's tool call is never kept without the turn that asked for it, nor a tool
    result without its call). Return them as a node's ``messages`` update (``add_messages``)."""
    if len(messages) <= keep:
        return []
    start = len(messages) - keep
    while start < len(messages) and not isinstance(messages[start], HumanMessage):
        start += 1
    return [RemoveMessage(id=str(message.id)) for message in messages[:start] if message.id]
