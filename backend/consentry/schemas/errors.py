"""The one error body every failing request returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ErrorBody", "ErrorDetail"]


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. `thread_not_found`.")
    message: str = Field(description="What went wrong, for people.")
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(BaseModel):
    error: ErrorDetail
