"""The LangGraph SDK's ``messages`` stream mode, made from LangGraph's ``messages`` chunks as the
Agent Server makes it (``messages-tuple`` is those chunks as they are):

- a message's first chunk → ``messages/metadata`` ``{message id: {"metadata": ...}}`` (the model
  call's metadata, ``_graph_outputs.message_metadata``);
- each token chunk → ``messages/partial`` ``[the message so far]`` (its chunks added with
  LangChain's ``+``, as a whole message: ``type`` ``ai``);
- a whole message (one a node wrote whose tokens were not streamed) →
  ``messages/complete`` ``[the message]``.

A message without an id (LangChain gives every model call's one) is passed over: it cannot be
told apart from the next.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, message_chunk_to_message

from consentry.runtime.runs.execute._graph_outputs import message_metadata

__all__ = ["COMPLETE", "MESSAGE_MODES", "METADATA", "PARTIAL", "MessageAccumulator"]

METADATA, PARTIAL, COMPLETE = "messages/metadata", "messages/partial", "messages/complete"
MESSAGE_MODES = (METADATA, PARTIAL, COMPLETE)
"""The outputs (and frames) of the ``messages`` stream mode."""


class MessageAccumulator:
    """The ``messages`` mode's outputs of one run (or of one of its subgraphs)."""

    def __init__(self) -> None:
        self._so_far: dict[str, BaseMessage] = {}

    def outputs(self, chunk: tuple[BaseMessage, dict[str, Any]]) -> list[tuple[str, Any]]:
        """``(mode, data)`` for one of LangGraph's ``messages`` chunks."""
        message, metadata = chunk
        key = message.id
        if key is None:
            return []
        shown: list[tuple[str, Any]] = []
        so_far = self._so_far.get(key)
        if so_far is None:
            shown.append((METADATA, {key: {"metadata": message_metadata(metadata)}}))
            so_far = message
        elif isinstance(so_far, BaseMessageChunk) and isinstance(message, BaseMessageChunk):
            so_far = so_far + message
        else:
            so_far = message
        self._so_far[key] = so_far
        if isinstance(message, BaseMessageChunk):
            return [*shown, (PARTIAL, [message_chunk_to_message(so_far)])]
        return [*shown, (COMPLETE, [so_far])]
