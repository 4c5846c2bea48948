"""Listening to model calls: a callback handler that hears nothing else, and the tokens a call
used as its provider reported them (``usage_metadata``)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.outputs import LLMResult

__all__ = ["ModelCallHandler", "model_name", "reported_usage"]


class ModelCallHandler(AsyncCallbackHandler):
    """A handler of model calls only: LangChain then skips it for every chain (each node and
    runnable of a graph), agent, retriever, retry and custom event. Awaited in line (no task per
    callback) unless a subclass says otherwise."""

    run_inline = True
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True


def model_name(metadata: dict[str, Any] | None) -> str:
    """The model a call went to, from the callback's metadata (``ls_model_name``: the
    provider's model name, or the offline model's)."""
    return str((metadata or {}).get("ls_model_name") or "unknown")


def reported_usage(response: LLMResult) -> tuple[int, int]:
    """``(input_tokens, output_tokens)`` over every generation of ``response`` (0 when the
    provider reported none)."""
    prompt = completion = 0
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                prompt += int(usage.get("input_tokens", 0))
                completion += int(usage.get("output_tokens", 0))
    return prompt, completion
