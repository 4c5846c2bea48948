"""LangChain's human-in-the-loop request shape (``HITLRequest``: ``action_requests`` and
``review_configs``, answered by ``{"decisions": [...]}``), which a consent kit's request carries
beside its own fields: a client that draws the middleware's reviews (Agent Chat UI, an agent
inbox) shows and answers a kit's consent as one reviewed action.

The action is named after the kind; its ``args`` are what an ``edit`` may change, named as the
kind's edit model names them (so an edited action's ``args`` are the edit as it is); its
``description`` is the request's title (and whatever the kind adds, such as a diff); the review
allows the kind's decisions, with the edit model's JSON Schema as ``args_schema``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from consentry_graphs.wire_types import Decision

__all__ = ["ActionRequest", "ReviewConfig"]


class ActionRequest(BaseModel):
    """One action a person reviews (LangChain's ``ActionRequest``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any]
    description: str | None = None


class ReviewConfig(BaseModel):
    """What a person may decide on an action (LangChain's ``ReviewConfig``)."""

    model_config = ConfigDict(extra="forbid")

    action_name: str
    allowed_decisions: list[Decision] = Field(min_length=1)
    args_schema: dict[str, Any] | None = None
