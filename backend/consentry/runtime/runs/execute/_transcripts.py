"""A thread's transcript, and the one-time move of an older thread's messages out of its
checkpoint (threads from before the transcript table kept them only there)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from consentry.storage.transcript import TranscriptEntry
from consentry_graphs.registry import CompiledGraph

__all__ = ["checkpoint_transcript"]


async def checkpoint_transcript(graph: CompiledGraph, thread_id: str) -> list[TranscriptEntry]:
    """The user and assistant messages in the thread's newest checkpoint, in order."""
    state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    entries: list[TranscriptEntry] = []
    for message in state.values.get("messages", []):
        if isinstance(message, HumanMessage) and message.text:
            entries.append(TranscriptEntry(str(message.id), "user", message.text))
        elif isinstance(message, AIMessage) and message.text:
            entries.append(TranscriptEntry(str(message.id), "assistant", message.text))
    return entries
