"""The messages the tutor's nodes write themselves (not a model): ``say`` for a reply that is part
of the discussion (search results), ``say_outcome`` for what became of a request about notes (a
consent's outcome, "no note is open"), which a summary of the discussion leaves out."""

from __future__ import annotations

from uuid import uuid4

from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["is_outcome", "say", "say_outcome"]

_OUTCOME = "tutor_outcome"
"""Marks an outcome in ``additional_kwargs``: kept in checkpoints, sent to no model provider."""


def say(text: str) -> AIMessage:
    """An assistant message written by a node, with its id fixed up front."""
    return AIMessage(text, id=f"msg-{uuid4().hex}")


def say_outcome(text: str) -> AIMessage:
    """``say`` for what became of a request about notes."""
    return AIMessage(text, id=f"msg-{uuid4().hex}", additional_kwargs={_OUTCOME: True})


def is_outcome(message: BaseMessage) -> bool:
    return bool(message.additional_kwargs.get(_OUTCOME))
