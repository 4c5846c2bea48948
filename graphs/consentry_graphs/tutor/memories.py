"""What the tutor remembers of a person across conversations, in the Store (LangGraph's
``runtime.store``; Consentry's, kept in its database, docs/memory.md).

"Remember that I prefer short answers" keeps the words after "remember (that)" under the person's
namespace, ``("tutor", "memories", "<tenant>/<user>")``, keyed by the message's id (so a step run
again writes the same item again, once); every later answer, in any of the person's threads, gets
them in its prompt (the offline model repeats them at the end of its answer, a real model is asked
to honour them). A graph run without a Store (a test of the graph alone) remembers nothing and says
so.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from consentry_graphs.services import graph_services
from consentry_graphs.store_labels import person_label
from consentry_graphs.tutor.replies import say_outcome
from consentry_graphs.tutor.state import TutorState

__all__ = ["MEMORIES", "memories_block", "remember_preference", "remembered"]

MEMORIES = ("tutor", "memories")
"""The namespace of every person's memories; the person's own is this and their user id."""
RECALLED = 5
"""The most memories an answer is given (the most recent)."""
LONGEST = 500
"""The most characters of one memory (a longer request is cut)."""

log = logging.getLogger(__name__)


async def remember_preference(state: TutorState, runtime: Runtime[Any]) -> dict[str, Any]:
    """Keep what the person asked to be remembered, and say what was kept."""
    what = " ".join(state.get("query", "").split())[:LONGEST]
    message = next(
        (m for m in reversed(state.get("messages", [])) if isinstance(m, HumanMessage)), None
    )
    if not what or message is None:
        return {"messages": [say_outcome("Tell me what to remember, in a sentence.")]}
    if runtime.store is None:
        return {"messages": [say_outcome("I can't remember things between conversations here.")]}
    # Keyed by the message: the step run again (a recovery) writes the same item again.
    key = message.id or hashlib.sha256(message.text.encode()).hexdigest()
    await runtime.store.aput(_namespace(), str(key), {"text": what})
    return {"messages": [say_outcome(f"I'll remember: \u201c{what}\u201d.")]}


async def remembered(runtime: Runtime[Any]) -> list[str]:
    """The person's most recent memories (none without a Store, or when it cannot be read: an
    answer does not fail for them)."""
    if runtime.store is None:
        return []
    try:
        found = await runtime.store.asearch(_namespace(), limit=RECALLED)
    except Exception:
        log.exception("the person's memories could not be read; answering without them")
        return []
    return [str(item.value.get("text", "")) for item in found if item.value.get("text")]


def _namespace() -> tuple[str, ...]:
    """The person's namespace: ``("tutor", "memories", "<tenant>/<user>")``, their id as one
    label (``store_labels.person_label``)."""
    return (*MEMORIES, person_label(graph_services().user))


def memories_block(memories: list[str]) -> str:
    """The memories as the answer prompt's ``<memories>`` lines, one line each."""
    return "".join(f"- {' '.join(memory.split())}\n" for memory in memories)
