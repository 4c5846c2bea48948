"""A face's request made the run service's (``ChatRequest``): a body the model refuses is the one
422 ``request_invalid`` every face answers with, naming where (``details.errors``)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from consentry.errors import InvalidRequestError
from consentry.schemas.chat import ChatRequest

__all__ = ["chat_request", "not_a_run_request"]


def chat_request(fields: dict[str, Any]) -> ChatRequest:
    """``ChatRequest`` of these fields, or 422 ``request_invalid``."""
    try:
        return ChatRequest.model_validate(fields)
    except ValidationError as exc:
        raise not_a_run_request(exc) from None


def not_a_run_request(exc: ValidationError) -> InvalidRequestError:
    return InvalidRequestError(
        "The input does not make a run request.",
        code="request_invalid",
        details={"errors": exc.errors(include_url=False, include_context=False)},
    )
