"""Token usage and budgets: every run counts its model tokens, and with a thread or tenant budget
set, checks it before each model call.

The budget is checked *before* a call: a run whose thread or tenant has used its budget stops
before the next model call (final reason ``budget_exhausted``), not after it. Usage is counted
from what each call's provider reported (``usage_metadata``; ``stream_usage`` for streamed
answers) and stored once, when the run ends (no write per call).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.outputs import LLMResult

from consentry.observability.usage import ModelCallHandler, reported_usage
from consentry.schemas.events import TokenUsage

__all__ = ["BudgetExhaustedError", "TokenMeter"]


class BudgetExhaustedError(Exception):
    """A token budget is used up; the run stops before the next model call."""


class TokenMeter(ModelCallHandler):
    """Counts a run's tokens and refuses a model call once a budget is reached."""

    raise_error = True

    def __init__(
        self,
        *,
        thread_used: int,
        tenant_used: int,
        thread_budget: int | None,
        tenant_budget: int | None,
    ) -> None:
        self.thread_used = thread_used
        self.tenant_used = tenant_used
        self.thread_budget = thread_budget
        self.tenant_budget = tenant_budget
        self.input_tokens = 0
        self.output_tokens = 0
        # Without a budget, awaited in line: no task per callback event (every streamed token is
        # one). With one, concurrently with the other handlers, as LangChain expects of a handler
        # that raises (an inline one that raises leaves the others' coroutines never awaited).
        self.run_inline = not self.limited

    @property
    def limited(self) -> bool:
        return self.thread_budget is not None or self.tenant_budget is not None

    @property
    def run_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def usage(self) -> TokenUsage:
        return TokenUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)

    def _check(self) -> None:
        if (
            self.thread_budget is not None
            and self.thread_used + self.run_tokens >= self.thread_budget
        ):
            raise BudgetExhaustedError("thread")
        if (
            self.tenant_budget is not None
            and self.tenant_used + self.run_tokens >= self.tenant_budget
        ):
            raise BudgetExhaustedError("tenant")

    async def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        if self.limited:
            self._check()

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt, completion = reported_usage(response)
        self.input_tokens += prompt
        self.output_tokens += completion
