"""Literal types the API's wire models share with the graphs, in a module that imports nothing
heavy: a client of the API (``consentry chat``) loads the wire models without LangGraph or a
model provider's SDK."""

from __future__ import annotations

from typing import Literal

__all__ = ["Decision", "ModelFaultCode"]

Decision = Literal["approve", "edit", "reject", "answer", "respond"]
"""What a person (or a thread's policy) may decide. ``answer`` replies to a raw ``interrupt()``
with a value (the graph receives exactly that value); ``respond`` answers a reviewed tool call
in the tool's place (the ``comment`` is returned as the tool's result, the tool does not run).
A policy never answers nor responds."""

ModelFaultCode = Literal[
    "model_rate_limited",
    "model_quota_exhausted",
    "model_unavailable",
    "model_auth_failed",
    "model_rejected",
]
"""Why a model call failed, as the `error` and `model_retry` events say."""
