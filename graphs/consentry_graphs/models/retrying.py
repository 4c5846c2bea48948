"""The one retry layer of every model call: a chat model that wraps the provider's model.

The provider's client makes a single attempt (``max_retries=0``) and no graph node has a LangGraph
``RetryPolicy``, so attempts never multiply: a call is tried at most ``RetryPolicy.max_attempts``
times in all. Between attempts it waits with exponential backoff and jitter, or as long as the
provider's ``Retry-After`` asks (capped). Faults that another attempt cannot fix (400, 401, 403,
404, a 429 whose quota is exhausted) are raised at once; see ``consentry_graphs.models.faults``.

Inside a graph, each retry is announced on LangGraph's custom stream as ``{"event":
"model_retry", ...}`` before the wait, so a UI can explain the delay. When the failed attempt had
already streamed part of its answer, the announcement names that message
(``discard_message_id``): the client drops the partial text, and the next attempt streams the
answer again under the same message id. Only the answer of the attempt that succeeded becomes the
call's result, so the graph stores one complete message.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.utils import LC_ID_PREFIX
from langgraph.config import get_stream_writer
from pydantic import ConfigDict

from consentry_graphs.models.faults import ModelFault, classify_fault

__all__ = ["MODEL_RETRY_EVENT", "RetryPolicy", "RetryingChatModel"]

log = logging.getLogger(__name__)

MODEL_RETRY_EVENT = "model_retry"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    """Attempts per model call, the first one included."""
    base_delay_seconds: float = 0.5
    """The wait after the first failed attempt; it doubles after each further one."""
    max_delay_seconds: float = 8.0
    """The longest backoff wait (before jitter)."""
    retry_after_cap_seconds: float = 30.0
    """The longest wait a provider's ``Retry-After`` can impose."""

    def delay(self, failed_attempt: int, fault: ModelFault) -> float:
        """Seconds to wait after attempt number ``failed_attempt`` failed with ``fault``.

        Backoff with "equal jitter" (half fixed, half random, so that clients that failed
        together spread out); a ``Retry-After`` is honoured up to its cap."""
        growth = 2.0 ** (failed_attempt - 1)
        backoff = min(self.max_delay_seconds, self.base_delay_seconds * growth)
        wait = backoff / 2 + random.uniform(0, backoff / 2)
        if fault.retry_after is not None:
            wait = max(wait, min(fault.retry_after, self.retry_after_cap_seconds))
        return wait


class RetryingChatModel(BaseChatModel):
    """``model`` with Consentry's retry layer; see the module docstring."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: BaseChatModel
    """The provider's model, with its own retries turned off."""
    policy: RetryPolicy = RetryPolicy()
    json_mode: bool = True
    """Whether the provider accepts ``response_format={"type": "json_object"}``."""

    @property
    def _llm_type(self) -> str:
        return self.model._llm_type

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {**self.model._identifying_params, "max_attempts": self.policy.max_attempts}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The provider's model and name (``ls_model_name``: metrics, traces), not this
        wrapper's."""
        return self.model._get_ls_params(stop=stop, **kwargs)

    @property
    def model_name(self) -> str:
        """The provider's model name, as callbacks see it (``ls_model_name``)."""
        return str(self._get_ls_params().get("ls_model_name") or self.model._llm_type)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Tools as the provider's model formats them, sent through the retry layer."""
        bound = self.model.bind_tools(tools, tool_choice=tool_choice, **kwargs)
        return self.bind(**getattr(bound, "kwargs", {}))

    def _message_id(self, run_manager: Any) -> str:
        run_id = run_manager.run_id if run_manager is not None else uuid4()
        return f"{LC_ID_PREFIX}-{run_id}"

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message_id = self._message_id(run_manager)
        streaming = self.model._should_stream(async_api=True, run_manager=run_manager, **kwargs)
        attempt = 1
        while True:
            chunks: list[ChatGenerationChunk] = []
            try:
                if not streaming:
                    return _with_id(
                        await self.model._agenerate(messages, stop=stop, **kwargs), message_id
                    )
                async for chunk in self.model._astream(messages, stop=stop, **kwargs):
                    chunk.message.id = message_id
                    chunks.append(chunk)
                    if run_manager is not None:
                        await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                return generate_from_stream(iter(chunks))
            except Exception as exc:
                delay = self._retry_delay(exc, attempt, partial=_partial(chunks, message_id))
                if delay is None:
                    raise
            await asyncio.sleep(delay)
            attempt += 1

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message_id = self._message_id(run_manager)
        streaming = self.model._should_stream(async_api=False, run_manager=run_manager, **kwargs)
        attempt = 1
        while True:
            chunks: list[ChatGenerationChunk] = []
            try:
                if not streaming:
                    return _with_id(self.model._generate(messages, stop=stop, **kwargs), message_id)
                for chunk in self.model._stream(messages, stop=stop, **kwargs):
                    chunk.message.id = message_id
                    chunks.append(chunk)
                    if run_manager is not None:
                        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                return generate_from_stream(iter(chunks))
            except Exception as exc:
                delay = self._retry_delay(exc, attempt, partial=_partial(chunks, message_id))
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1

    def _retry_delay(self, exc: Exception, attempt: int, *, partial: str | None) -> float | None:
        """How long to wait before the next attempt (announcing it), or None to give up."""
        fault = classify_fault(exc)
        if fault is None or not fault.retryable or attempt >= self.policy.max_attempts:
            return None
        delay = self.policy.delay(attempt, fault)
        log.warning(
            "model call failed (%s), attempt %d of %d; retrying in %.2f s",
            fault.code,
            attempt,
            self.policy.max_attempts,
            delay,
        )
        _stream_writer()(
            {
                "event": MODEL_RETRY_EVENT,
                "model": self.model_name,
                "code": fault.code,
                "attempt": attempt,
                "max_attempts": self.policy.max_attempts,
                "retry_in_seconds": round(delay, 3),
                "discard_message_id": partial,
            }
        )
        return delay


def _partial(chunks: list[ChatGenerationChunk], message_id: str) -> str | None:
    """The id of the message a failed attempt had started streaming, if it streamed any text or
    part of a tool call (a client merging chunks by id must drop those too)."""
    for chunk in chunks:
        if chunk.text or getattr(chunk.message, "tool_call_chunks", None):
            return message_id
    return None


def _with_id(result: ChatResult, message_id: str) -> ChatResult:
    for generation in result.generations:
        generation.message.id = generation.message.id or message_id
    return result


def _stream_writer() -> Callable[[Any], None]:
    """LangGraph's custom stream inside a graph; outside one, announcements go nowhere."""
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError, AttributeError):  # outside a runnable, or not in a graph
        return lambda _: None
