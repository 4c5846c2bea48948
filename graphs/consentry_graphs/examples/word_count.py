"""A plain LangGraph graph whose input is not a conversation: ``{"text": ..., "min_length"?}``.
No Consentry import.

Served with ``CONSENTRY_GRAPHS=words=consentry_graphs.examples.word_count:graph`` (or its
``builder``) and started with ``POST /v1/chat {"graph": "words", "input": {"text": "..."}}``:
the server checks the input against ``WordCountInput`` (``text`` a string, no other field than
these two) and the graph answers with a message. A ``message`` is refused: this graph's input has
no ``messages``.

    count_words → END
"""

from __future__ import annotations

from typing import Annotated, NotRequired
from uuid import uuid4

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class WordCountInput(TypedDict):
    text: str
    min_length: NotRequired[int]
    """Count only the words at least this long (default 1)."""


class WordCountState(TypedDict, total=False):
    text: str
    min_length: int
    words: int
    messages: Annotated[list[AnyMessage], add_messages]


class WordCountOutput(TypedDict):
    words: int


def count_words(state: WordCountState) -> dict[str, object]:
    shortest = state.get("min_length", 1)
    words = sum(1 for word in state["text"].split() if len(word) >= shortest)
    reply = AIMessage(f"{words} word{'' if words == 1 else 's'}.", id=f"msg-{uuid4().hex}")
    return {"words": words, "messages": [reply]}


builder = StateGraph(WordCountState, input_schema=WordCountInput, output_schema=WordCountOutput)
builder.add_node(count_words)
builder.add_edge(START, "count_words")
builder.add_edge("count_words", END)

graph = builder.compile()
