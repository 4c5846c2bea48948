"""A LangGraph SDK run's options from its assistant: the ``context`` and ``configurable``
values it runs with, and what its thread names as its assistant."""

from __future__ import annotations

from typing import Any

from consentry.runtime.assistants import Assistant
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["run_options", "stored_id"]


def stored_id(assistant: Assistant) -> str | None:
    """What the thread names as its assistant (``metadata.assistant_id``): one of the owner's,
    or None for a graph's own."""
    return assistant.assistant_id if assistant.stored else None


def run_options(body: RunCreate, assistant: Assistant) -> dict[str, Any]:
    """The run's ``context`` and ``configurable`` values as the run service takes them: the
    assistant's, the run's own winning key by key. A resume that sends none sends nothing: the
    consent is answered under the options it was asked under, which the thread keeps."""
    options: dict[str, Any] = {}
    if body.command is not None and body.context is None and body.config is None:
        return options
    if assistant.context or body.context is not None:
        options["context"] = {**assistant.context, **(body.context or {})}
    configurable = (body.config or {}).get("configurable")
    kept = assistant.config.get("configurable") or {}
    if kept or configurable is not None:
        options["configurable"] = {**kept, **(configurable or {})}
    return options
