"""A LangChain agent whose tool calls a person reviews: ``create_agent`` with LangChain's own
``HumanInTheLoopMiddleware`` over two tools, driven by a deterministic tool-calling chat model.
No Consentry import: Consentry reads the middleware's interrupts natively (one ``tool_call``
consent per reviewed call; approve, edit the args, reject with a message, or respond in the
tool's place).

Served with ``CONSENTRY_GRAPHS=agent=consentry_graphs.examples.tool_review_agent:graph``
(one review per model turn, every call of the turn in it) or ``...:per_call_graph`` (one review
per call, whose edits are checked against the tool's args schema). Needs ``langchain`` (the
``examples`` extra): the server itself does not.

The model: asked about a city, it calls ``get_weather`` and ``send_email`` together in one turn
(both reviewed); given the tools' results it answers with one sentence quoting them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool

__all__ = [
    "TripPlannerModel",
    "build_agent",
    "get_weather",
    "graph",
    "per_call_graph",
    "send_email",
]

_CITY = re.compile(r"\b(?:in|to|for)\s+([A-Z][a-z]+)")


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21°C."


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email."""
    return f"Email to {to} sent: {subject}."


class TripPlannerModel(BaseChatModel):
    """Deterministic: a new question asks for both tools at once; tool results are quoted."""

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    @property
    def _llm_type(self) -> str:
        return "trip-planner"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = len(messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            results = [m for m in messages if isinstance(m, ToolMessage)]
            said = " ".join(m.text for m in results[-2:])
            reply = AIMessage(f"Done. {said}", id=f"reply-{turn}")
        else:
            question = last.text if isinstance(last, HumanMessage) else ""
            found = _CITY.search(question)
            city = found.group(1) if found else "Lisbon"
            reply = AIMessage(
                "",
                id=f"plan-{turn}",
                tool_calls=[
                    {"name": "get_weather", "args": {"city": city}, "id": f"weather-{turn}"},
                    {
                        "name": "send_email",
                        "args": {
                            "to": "team@example.com",
                            "subject": f"Trip to {city}",
                            "body": f"Let's go to {city}.",
                        },
                        "id": f"email-{turn}",
                    },
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_agent(*, per_call: bool = False) -> Any:
    """The agent, compiled without a checkpointer (the server attaches its own)."""
    tools: list[BaseTool] = [get_weather, send_email]
    review = HumanInTheLoopMiddleware(
        interrupt_on={
            "send_email": True,  # approve, edit, reject
            "get_weather": {"allowed_decisions": ["approve", "reject", "respond"]},
        },
        interrupt_mode="per_call" if per_call else "batched",
    )
    return create_agent(model=TripPlannerModel(), tools=tools, middleware=[review])


graph = build_agent()
per_call_graph = build_agent(per_call=True)
