"""Token budgets: per thread and per tenant, checked before every model call of a run.

The budget is checked *before* a call: a run whose thread or tenant has used its budget stops
before the next model call (final reason ``budget_exhausted``), not after it. Usage is counted
from each call's reported usage and stored once, when the run ends (no write per call).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.outputs import LLMResult

__all__ = ["BudgetExhaustedError", "TokenBudget"]


class BudgetExhaustedError(Exception):
    """A token budget is used up; the run stops before the next model call."""


class TokenBudget(AsyncCallbackHandler):
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
        self.run_tokens = 0

    @property
    def limited(self) -> bool:
        return self.thread_budget is not None or self.tenant_budget is not None

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
        self._check()

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.run_tokens += int(usage.get("total_tokens", 0))
