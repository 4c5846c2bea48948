"""Chat-model factory: the offline model by default, or any OpenAI-compatible server."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from pydantic import SecretStr

from consentry_graphs.models.faults import ModelFault, ModelFaultCode, classify_fault
from consentry_graphs.models.offline import OFFLINE_MODEL_NAME, OfflineChatModel
from consentry_graphs.models.retrying import MODEL_RETRY_EVENT, RetryingChatModel, RetryPolicy

__all__ = [
    "MODEL_RETRY_EVENT",
    "OFFLINE_MODEL_NAME",
    "ModelFault",
    "ModelFaultCode",
    "OfflineChatModel",
    "RetryPolicy",
    "RetryingChatModel",
    "build_chat_model",
    "classify_fault",
    "json_mode",
]


def build_chat_model(
    *,
    base_url: str | None,
    api_key: SecretStr | None,
    model: str,
    timeout_seconds: float,
    retry: RetryPolicy,
    json_mode: bool = True,
) -> BaseChatModel:
    """``ChatOpenAI`` behind the retry layer when a server or key is configured, else the offline
    model. The client itself never retries: ``RetryingChatModel`` is the only layer that does."""
    if base_url is None and api_key is None:
        return OfflineChatModel()
    import httpx
    from langchain_openai import ChatOpenAI

    provider = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key or SecretStr("not-needed"),
        # An httpx.Timeout, not a float: langchain-openai then builds this model its own HTTP
        # client instead of sharing one cached per (URL, timeout) by the whole process, whose
        # pooled connections belong to the event loop that opened them.
        timeout=httpx.Timeout(timeout_seconds),
        max_retries=0,
        stream_usage=True,
    )
    return RetryingChatModel(model=provider, policy=retry, json_mode=json_mode)


def json_mode(model: BaseChatModel) -> Runnable[LanguageModelInput, BaseMessage]:
    """``model`` asked to answer with one JSON object, where its provider supports JSON mode
    (the offline model always answers a classification as JSON)."""
    if isinstance(model, RetryingChatModel) and model.json_mode:
        return model.bind(response_format={"type": "json_object"})
    return model
