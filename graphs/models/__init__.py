"""Chat-model factory: the offline model by default, or any OpenAI-compatible server."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from graphs.models.offline import OFFLINE_MODEL_NAME, OfflineChatModel

__all__ = ["OFFLINE_MODEL_NAME", "OfflineChatModel", "build_chat_model"]


def build_chat_model(
    *,
    base_url: str | None,
    api_key: SecretStr | None,
    model: str,
    timeout_seconds: float,
    max_retries: int,
) -> BaseChatModel:
    """Return ``ChatOpenAI`` when a server or key is configured, else the offline model."""
    if base_url is None and api_key is None:
        return OfflineChatModel()
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key or SecretStr("not-needed"),
        timeout=timeout_seconds,
        max_retries=max_retries,
        stream_usage=True,
    )
