"""``consentry_graphs.models.build_chat_model``: what the factory gives each app."""

from __future__ import annotations

from typing import Any

from consentry_graphs.models import RetryingChatModel, RetryPolicy, build_chat_model


def _model() -> Any:
    model = build_chat_model(
        base_url="http://127.0.0.1:9/v1",
        api_key=None,
        model="m",
        timeout_seconds=5,
        retry=RetryPolicy(),
    )
    assert isinstance(model, RetryingChatModel)
    return model.model


def test_two_models_of_one_server_do_not_share_an_http_client() -> None:
    """Regression: langchain-openai caches one HTTP client per (URL, timeout) for the whole
    process. Two apps on one model server (tests, one after the other, each on its own event
    loop) then shared pooled connections opened on a loop already closed: `Event loop is
    closed` failed the second app's first model call."""
    first, second = _model(), _model()

    assert first.root_async_client._client is not second.root_async_client._client
    assert first.root_async_client.timeout.read == 5
