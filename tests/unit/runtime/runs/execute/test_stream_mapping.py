"""``ChunkMapper`` in a run that continues another (a recovery, a retry): what the runs it
continues told already is not told again, whether LangGraph replays a node's stored writes or an
effect node runs again and reports its recorded outcome."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.types import Interrupt

from consentry.runtime.runs.execute._stream_mapping import ChunkMapper
from consentry_graphs.registry import BUILTIN_GRAPHS

NOTE: dict[str, Any] = {
    "event": "note",
    "note_id": "n1",
    "project_id": "p1",
    "title": "RAG",
    "version": 2,
    "content": "Retrieval.\n",
}


def _told(mapper: ChunkMapper, mode: str, chunk: Any) -> list[str]:
    return [event_type.model_fields["type"].default for event_type, _ in mapper.map(mode, chunk)]


def test_a_message_or_note_told_before_is_not_told_again() -> None:
    said = frozenset({("message", "m1"), ("note", "n1", "2")})
    mapper = ChunkMapper(BUILTIN_GRAPHS["tutor"], said=said)

    replayed = {"answer_question": {"messages": [AIMessage("Hi", id="m1")]}}
    assert _told(mapper, "updates", replayed) == []
    assert _told(mapper, "custom", NOTE) == []
    fresh = {"answer_question": {"messages": [AIMessage("Again", id="m2")]}}
    assert _told(mapper, "updates", fresh) == ["message"]
    assert _told(mapper, "custom", {**NOTE, "version": 3}) == ["note"]


def test_a_run_that_continues_nothing_tells_everything() -> None:
    mapper = ChunkMapper(BUILTIN_GRAPHS["tutor"])

    assert _told(mapper, "updates", {"n": {"messages": [AIMessage("Hi", id="m1")]}}) == ["message"]
    assert _told(mapper, "custom", NOTE) == ["note"]


def test_a_values_chunk_tells_nothing_even_at_an_interrupt() -> None:
    """The run streams ``values`` for the listeners that ask for LangGraph's state; LangGraph
    puts the interrupt into the state it streams at one, and the mapper takes interrupts from
    ``updates`` only, once."""
    mapper = ChunkMapper(BUILTIN_GRAPHS["tutor"])
    asked = Interrupt(value={"question": "Which city?"}, id="i1")

    assert _told(mapper, "values", {"messages": [AIMessage("Hi", id="m1")]}) == []
    assert _told(mapper, "values", {"messages": [], "__interrupt__": (asked,)}) == []
    assert mapper.interrupts == []
    assert _told(mapper, "updates", {"__interrupt__": (asked,)}) == []
    assert mapper.interrupts == [asked]
