"""Attempts never multiply: the provider's client makes one attempt per request, no graph node
retries, and the retry layer is the only one (``graphs/consentry_graphs/models/retrying.py``)."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import SecretStr

from consentry.services import chat_model
from consentry.settings import Settings
from consentry_graphs.models import (
    OfflineChatModel,
    RetryingChatModel,
    RetryPolicy,
    build_chat_model,
)
from consentry_graphs.registry import load_graphs


def test_a_configured_server_gets_chat_openai_behind_the_retry_layer_with_client_retries_off() -> (
    None
):
    model = chat_model(Settings(llm_base_url="http://127.0.0.1:9/v1", llm_max_attempts=3))
    assert isinstance(model, RetryingChatModel)
    assert model.policy.max_attempts == 3
    assert isinstance(model.model, ChatOpenAI)
    assert model.model.max_retries == 0
    assert model.model.stream_usage is True


def test_without_model_settings_the_offline_model_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CONSENTRY_LLM_API_KEY", raising=False)
    monkeypatch.delenv("CONSENTRY_LLM_BASE_URL", raising=False)
    assert isinstance(chat_model(Settings()), OfflineChatModel)


def test_no_node_of_a_served_graph_has_a_retry_policy_of_its_own() -> None:
    model = build_chat_model(
        base_url="http://127.0.0.1:9/v1",
        api_key=SecretStr("sk-test"),
        model="stub",
        timeout_seconds=1,
        retry=RetryPolicy(),
    )
    specs = load_graphs(
        {
            "refund": "consentry_graphs.examples.refund_consent:graph_spec",
            "parallel": "consentry_graphs.examples.parallel_consents:graph_spec",
        }
    )
    assert len(specs) >= 3
    for spec in specs.values():
        graph = spec.build(model, InMemorySaver())
        nodes = graph.builder.nodes
        assert nodes, spec.name
        assert {name: node.retry_policy for name, node in nodes.items()} == dict.fromkeys(nodes), (
            spec.name
        )
