"""``RetryingChatModel`` used directly, as a backend developer's own code or graph would use it,
against the scripted OpenAI-compatible stub (``tests/openai_stub.py``) on a real port.

Every test checks how many requests the stub received, so a missing or an extra attempt shows.
Backoff waits are a few milliseconds (``POLICY``). No database is involved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import ModelError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import tool
from langchain_openai.chat_models.base import OpenAIConnectionError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import SecretStr

from consentry_graphs.models import (
    OfflineChatModel,
    RetryingChatModel,
    RetryPolicy,
    build_chat_model,
    classify_fault,
    json_mode,
)
from tests.openai_stub import OpenAIStub, words

POLICY = RetryPolicy(max_attempts=3, base_delay_seconds=0.01, max_delay_seconds=0.02)
QUESTION = "What is retrieval?"
ANSWER = "Retrieval finds the relevant documents first."
LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Search the user's notes for q.",
        "parameters": {
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "type": "object",
        },
    },
}
LOOKUP_CALL = {"name": "lookup", "args": {"q": "kana"}, "id": "call_stub_1", "type": "tool_call"}

Graph = CompiledStateGraph[Any, Any, Any, Any]
StreamItem = tuple[str, Any]


@tool
def lookup(q: str) -> str:
    """Search the user's notes for q."""
    return q


def _model(
    stub: OpenAIStub,
    *,
    timeout_seconds: float = 10.0,
    policy: RetryPolicy = POLICY,
    json_mode: bool = True,
) -> RetryingChatModel:
    model = build_chat_model(
        base_url=stub.base_url,
        api_key=SecretStr("sk-test"),
        model="stub",
        timeout_seconds=timeout_seconds,
        retry=policy,
        json_mode=json_mode,
    )
    assert isinstance(model, RetryingChatModel)
    return model


def _graph(model: Runnable[LanguageModelInput, BaseMessage], answers: list[BaseMessage]) -> Graph:
    """One async node asking ``model`` about the conversation; each answer is kept in
    ``answers`` (the graph has no checkpointer to read it back from)."""

    async def ask(state: MessagesState) -> dict[str, list[BaseMessage]]:
        answer = await model.ainvoke(state["messages"])
        answers.append(answer)
        return {"messages": [answer]}

    return StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").compile()


def _sync_graph(
    model: Runnable[LanguageModelInput, BaseMessage], answers: list[BaseMessage]
) -> Graph:
    def ask(state: MessagesState) -> dict[str, list[BaseMessage]]:
        answer = model.invoke(state["messages"])
        answers.append(answer)
        return {"messages": [answer]}

    return StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").compile()


async def _stream(graph: Graph, items: list[StreamItem]) -> None:
    """Run ``graph`` on one question, keeping what its messages and custom streams show."""
    async for mode, chunk in graph.astream(
        {"messages": [HumanMessage(QUESTION)]}, stream_mode=["messages", "custom"]
    ):
        items.append((mode, chunk))


def _timeline(items: list[StreamItem]) -> list[tuple[str, Any, Any]]:
    """Text chunks as ``("text", message id, text)``, announcements as ``("retry", ...)``."""
    timeline: list[tuple[str, Any, Any]] = []
    for mode, chunk in items:
        if mode == "custom":
            announcement = dict(chunk)
            announcement.pop("retry_in_seconds")
            timeline.append(("retry", announcement["attempt"], announcement))
        else:
            message, metadata = chunk
            assert isinstance(message, AIMessageChunk)
            assert metadata["langgraph_node"] == "ask"
            if message.text:
                timeline.append(("text", message.id, message.text))
    return timeline


def _client_view(items: list[StreamItem]) -> dict[str, AIMessageChunk]:
    """What a client following the streams ends up with: chunks merged per message id, with the
    chunks of a message dropped whenever an announcement names it (``discard_message_id``)."""
    view: dict[str, AIMessageChunk] = {}
    for mode, chunk in items:
        if mode == "custom":
            if chunk.get("discard_message_id") is not None:
                view.pop(chunk["discard_message_id"], None)
            continue
        message = chunk[0]
        assert isinstance(message, AIMessageChunk)
        assert message.id is not None
        view[message.id] = view[message.id] + message if message.id in view else message
    return view


def _retry(
    attempt: int, discard_message_id: str | None, *, model: str = "stub"
) -> tuple[str, int, dict[str, Any]]:
    announcement = {
        "event": "model_retry",
        "model": model,  # the provider's model name (metrics count retries by it)
        "code": "model_unavailable",
        "attempt": attempt,
        "max_attempts": 3,
        "discard_message_id": discard_message_id,
    }
    return ("retry", attempt, announcement)


def _usage(usage: Any) -> tuple[int, int, int]:
    assert usage is not None
    return (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"])


# --- plain calls, outside any graph -----------------------------------------------------------


async def test_a_plain_call_asks_without_streaming_and_returns_the_reply(stub: OpenAIStub) -> None:
    stub.reply(ANSWER)

    answer = await _model(stub).ainvoke("hi")

    assert isinstance(answer, AIMessage)
    assert answer.content == ANSWER
    stub.assert_calls(1)
    assert not stub.requests[0].get("stream")
    assert stub.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert "response_format" not in stub.requests[0]
    assert _usage(answer.usage_metadata) == (10, len(words(ANSWER)), 10 + len(words(ANSWER)))


async def test_a_500_is_retried_and_the_second_attempts_reply_returned(stub: OpenAIStub) -> None:
    """The retry is announced with no stream writer around (no graph): that must not fail."""
    stub.fail(500)
    stub.reply(ANSWER)

    answer = await _model(stub).ainvoke("hi")

    assert answer.content == ANSWER
    stub.assert_calls(2)
    assert stub.requests[0] == stub.requests[1]  # the same request, sent again


async def test_a_400_is_raised_at_once_as_a_model_error(stub: OpenAIStub) -> None:
    stub.fail(400)
    stub.reply(ANSWER)  # never asked for

    with pytest.raises(ModelError) as raised:
        await _model(stub).ainvoke("hi")

    fault = classify_fault(raised.value)
    assert fault is not None
    assert (fault.code, fault.retryable) == ("model_rejected", False)
    assert len(stub.requests) == 1
    assert len(stub.script) == 1


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (401, None, "model_auth_failed"),
        (403, None, "model_auth_failed"),
        (404, None, "model_rejected"),
        (422, None, "model_rejected"),
        (429, "insufficient_quota", "model_quota_exhausted"),
    ],
)
async def test_a_fault_another_attempt_cannot_fix_is_raised_after_one_request(
    stub: OpenAIStub, status: int, code: str | None, expected: str
) -> None:
    stub.fail(status, code=code, retry_after="1" if status == 429 else None)
    stub.reply(ANSWER)  # never asked for

    with pytest.raises(openai.APIStatusError) as raised:
        await _model(stub).ainvoke("hi")

    assert raised.value.status_code == status
    fault = classify_fault(raised.value)
    assert fault is not None
    assert (fault.code, fault.retryable) == (expected, False)
    assert len(stub.requests) == 1
    assert len(stub.script) == 1


async def test_a_model_failing_every_attempt_is_raised_after_exactly_three_requests(
    stub: OpenAIStub,
) -> None:
    for _ in range(3):
        stub.fail(500)
    stub.reply(ANSWER)  # a fourth attempt would get it

    with pytest.raises(ModelError) as raised:
        await _model(stub).ainvoke("hi")

    assert isinstance(raised.value, openai.InternalServerError)
    assert len(stub.requests) == 3
    assert len(stub.script) == 1


async def test_one_max_attempt_means_a_single_request(stub: OpenAIStub) -> None:
    stub.fail(503)
    stub.reply(ANSWER)  # never asked for

    with pytest.raises(ModelError):
        await _model(stub, policy=RetryPolicy(max_attempts=1)).ainvoke("hi")

    assert len(stub.requests) == 1


async def test_a_429_waits_as_long_as_retry_after_asks(stub: OpenAIStub) -> None:
    stub.fail(429, retry_after="0.3")
    stub.reply(ANSWER)

    answer = await _model(stub).ainvoke("hi")

    assert answer.content == ANSWER
    stub.assert_calls(2)
    assert stub.arrivals[1] - stub.arrivals[0] >= 0.3  # the backoff alone is at most 0.01 s


async def test_a_huge_retry_after_is_capped(stub: OpenAIStub) -> None:
    stub.fail(429, retry_after="3600")
    stub.reply(ANSWER)
    policy = RetryPolicy(
        base_delay_seconds=0.01, max_delay_seconds=0.02, retry_after_cap_seconds=0.05
    )

    answer = await asyncio.wait_for(_model(stub, policy=policy).ainvoke("hi"), timeout=10)

    assert answer.content == ANSWER
    stub.assert_calls(2)
    assert stub.arrivals[1] - stub.arrivals[0] >= 0.05


async def test_a_hung_request_times_out_and_is_retried(stub: OpenAIStub) -> None:
    stub.hold(ANSWER)  # never released: like hang(), but the stub can still stop at teardown
    stub.reply(ANSWER)

    # The timeout also bounds the reply that must arrive in time: 2 s, not less, so a loaded CI
    # machine cannot make that reply late too.
    answer = await _model(stub, timeout_seconds=2.0).ainvoke("hi")

    assert answer.content == ANSWER
    stub.assert_calls(2)
    assert stub.arrivals[1] - stub.arrivals[0] >= 2.0


async def test_a_retry_inside_a_langchain_chain_outside_any_graph_does_not_fail(
    stub: OpenAIStub,
) -> None:
    """A runnable context without LangGraph's runtime: the announcement goes nowhere."""
    model = _model(stub)
    prompt = ChatPromptTemplate.from_messages([("human", "{question}")])

    async def ask(question: str) -> BaseMessage:
        return await model.ainvoke(question)

    stub.fail(500)
    stub.reply(ANSWER)
    stub.fail(502)
    stub.reply(ANSWER)

    via_prompt = await (prompt | model).ainvoke({"question": QUESTION})
    via_lambda = await RunnableLambda(ask).ainvoke(QUESTION)

    assert (via_prompt.content, via_lambda.content) == (ANSWER, ANSWER)
    stub.assert_calls(4)


# --- the sync API -----------------------------------------------------------------------------


async def test_a_sync_invoke_retries_a_500_too(stub: OpenAIStub) -> None:
    """Run in a thread: the stub serves on this test's event loop."""
    model = _model(stub)
    stub.fail(500)
    stub.reply(ANSWER)

    answer = await asyncio.to_thread(model.invoke, "hi")

    assert answer.content == ANSWER
    stub.assert_calls(2)
    assert not stub.requests[1].get("stream")


async def test_a_sync_invoke_raises_a_400_at_once(stub: OpenAIStub) -> None:
    model = _model(stub)
    stub.fail(400)
    stub.reply(ANSWER)  # never asked for

    with pytest.raises(ModelError):
        await asyncio.to_thread(model.invoke, "hi")

    assert len(stub.requests) == 1


async def test_a_sync_invoke_gives_up_after_three_requests(stub: OpenAIStub) -> None:
    model = _model(stub)
    for _ in range(3):
        stub.fail(503)
    stub.reply(ANSWER)  # a fourth attempt would get it

    with pytest.raises(openai.InternalServerError):
        await asyncio.to_thread(model.invoke, "hi")

    assert len(stub.requests) == 3


async def test_a_retry_inside_a_sync_langchain_chain_does_not_fail(stub: OpenAIStub) -> None:
    model = _model(stub)
    stub.fail(500)
    stub.reply(ANSWER)

    def ask(question: str) -> BaseMessage:
        return model.invoke(question)

    answer = await asyncio.to_thread(RunnableLambda(ask).invoke, QUESTION)

    assert answer.content == ANSWER
    stub.assert_calls(2)


# --- tools ------------------------------------------------------------------------------------


async def test_bound_tools_are_sent_on_every_attempt_and_the_tool_call_returned(
    stub: OpenAIStub,
) -> None:
    stub.fail(500)
    stub.tool_call("lookup", {"q": "kana"})

    answer = await _model(stub).bind_tools([lookup]).ainvoke("find my kana notes")

    assert isinstance(answer, AIMessage)
    assert answer.tool_calls == [LOOKUP_CALL]
    stub.assert_calls(2)
    assert [request["tools"] for request in stub.requests] == [[LOOKUP_TOOL], [LOOKUP_TOOL]]
    assert not stub.requests[1].get("stream")


async def test_a_tool_choice_reaches_the_provider(stub: OpenAIStub) -> None:
    stub.tool_call("lookup", {"q": "kana"})

    answer = await _model(stub).bind_tools([lookup], tool_choice="lookup").ainvoke("kana?")

    assert isinstance(answer, AIMessage)
    assert answer.tool_calls == [LOOKUP_CALL]
    stub.assert_calls(1)
    assert stub.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}


async def test_a_streamed_tool_call_in_a_graph_is_retried_and_returned_whole(
    stub: OpenAIStub,
) -> None:
    stub.fail(500)
    stub.tool_call("lookup", {"q": "kana"})
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    await _stream(_graph(_model(stub).bind_tools([lookup]), answers), items)

    [answer] = answers
    assert isinstance(answer, AIMessage)
    assert answer.tool_calls == [LOOKUP_CALL]
    assert _timeline(items) == [_retry(1, None)]
    assert answer.id is not None
    assert _client_view(items)[answer.id].tool_calls == [LOOKUP_CALL]
    stub.assert_calls(2)
    assert [(r["stream"], r["tools"]) for r in stub.requests] == [(True, [LOOKUP_TOOL])] * 2


# --- streaming inside a LangGraph graph -------------------------------------------------------


async def test_a_stream_cut_mid_answer_is_discarded_and_streamed_again_under_the_same_id(
    stub: OpenAIStub,
) -> None:
    stub.cut(ANSWER, words_sent=2)
    stub.reply(ANSWER)
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    await _stream(_graph(_model(stub), answers), items)

    [answer] = answers
    message_id = answer.id
    assert isinstance(answer, AIMessage)
    assert isinstance(message_id, str)
    assert _timeline(items) == [
        ("text", message_id, "Retrieval "),
        ("text", message_id, "finds "),
        _retry(1, message_id),
        *[("text", message_id, word) for word in words(ANSWER)],
    ]
    assert answer.content == ANSWER  # the retry's answer alone, not the partial one too
    assert _usage(answer.usage_metadata) == (10, len(words(ANSWER)), 10 + len(words(ANSWER)))
    view = _client_view(items)
    assert list(view) == [message_id]  # every chunk of both attempts under the one id
    assert view[message_id].content == ANSWER
    stub.assert_calls(2)
    assert stub.requests[0] == stub.requests[1]
    assert stub.requests[0]["stream"] is True
    assert stub.requests[0]["stream_options"] == {"include_usage": True}


async def test_a_retry_before_any_text_was_streamed_discards_nothing(stub: OpenAIStub) -> None:
    stub.fail(503)
    stub.fail(500)
    stub.reply(ANSWER)
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    await _stream(_graph(_model(stub), answers), items)

    [answer] = answers
    assert _timeline(items) == [
        _retry(1, None),
        _retry(2, None),
        *[("text", answer.id, word) for word in words(ANSWER)],
    ]
    waits = [chunk["retry_in_seconds"] for mode, chunk in items if mode == "custom"]
    assert 0.005 <= waits[0] <= 0.01  # equal jitter over a 0.01 s backoff
    assert 0.01 <= waits[1] <= 0.02  # then over 0.02 s
    assert answer.content == ANSWER
    stub.assert_calls(3)


async def test_a_stream_cut_on_every_attempt_raises_after_three_requests(
    stub: OpenAIStub,
) -> None:
    for _ in range(3):
        stub.cut(ANSWER, words_sent=2)
    stub.reply(ANSWER)  # a fourth attempt would get it
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    with pytest.raises(ModelError) as raised:
        await _stream(_graph(_model(stub), answers), items)

    assert isinstance(raised.value, openai.APIConnectionError)
    assert answers == []
    message_ids = {chunk[0].id for mode, chunk in items if mode == "messages"}
    assert len(message_ids) == 1
    [message_id] = message_ids
    partial = [("text", message_id, "Retrieval "), ("text", message_id, "finds ")]
    assert _timeline(items) == [
        *partial,
        _retry(1, message_id),
        *partial,
        _retry(2, message_id),
        *partial,
    ]
    assert len(stub.requests) == 3
    assert len(stub.script) == 1


async def test_a_sync_graph_streams_discards_and_retries_the_same_way(stub: OpenAIStub) -> None:
    stub.cut(ANSWER, words_sent=2)
    stub.reply(ANSWER)
    answers: list[BaseMessage] = []
    graph = _sync_graph(_model(stub), answers)

    def run() -> list[StreamItem]:
        stream = graph.stream(
            {"messages": [HumanMessage(QUESTION)]}, stream_mode=["messages", "custom"]
        )
        return [(mode, chunk) for mode, chunk in stream]

    items = await asyncio.to_thread(run)

    [answer] = answers
    assert isinstance(answer, AIMessage)
    assert _timeline(items) == [
        ("text", answer.id, "Retrieval "),
        ("text", answer.id, "finds "),
        _retry(1, answer.id),
        *[("text", answer.id, word) for word in words(ANSWER)],
    ]
    assert answer.content == ANSWER
    assert _usage(answer.usage_metadata) == (10, len(words(ANSWER)), 10 + len(words(ANSWER)))
    stub.assert_calls(2)


async def test_a_graph_not_streaming_messages_asks_without_streaming_and_still_retries(
    stub: OpenAIStub,
) -> None:
    stub.fail(500)
    stub.reply(ANSWER)
    answers: list[BaseMessage] = []

    custom = [
        chunk
        async for chunk in _graph(_model(stub), answers).astream(
            {"messages": [HumanMessage(QUESTION)]}, stream_mode="custom"
        )
    ]

    assert [(c["event"], c["attempt"], c["discard_message_id"]) for c in custom] == [
        ("model_retry", 1, None)
    ]
    assert [answer.content for answer in answers] == [ANSWER]
    stub.assert_calls(2)
    assert not stub.requests[1].get("stream")


class _ToolCallCutOnce(BaseChatModel):
    """A provider model whose first stream breaks right after its first tool-call chunk (the
    stub can only cut text), failing as ``ChatOpenAI`` reports a dropped connection."""

    attempts: int = 0

    @property
    def _llm_type(self) -> str:
        return "tool-call-cut-once"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        self.attempts += 1
        first = tool_call_chunk(name="lookup", args='{"q": ', id="call_stub_1", index=0)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[first]))
        if self.attempts == 1:
            request = httpx.Request("POST", "http://provider.test/v1/chat/completions")
            raise OpenAIConnectionError(request=request)  # type: ignore[arg-type]
        rest = tool_call_chunk(args='"kana"}', index=0)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[rest]))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop, **kwargs):
            yield chunk


async def test_a_stream_cut_mid_tool_call_names_the_partial_message_to_discard() -> None:
    """A failed attempt that streamed tool-call chunks (but no text) has streamed part of its
    answer too: unless the announcement names the message, a client merging the retry's chunks
    into the partial ones gets a garbled call (name ``lookuplookup``, args ``{"q": {"q": …``)."""
    provider = _ToolCallCutOnce()
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    await _stream(_graph(RetryingChatModel(model=provider, policy=POLICY), answers), items)

    [answer] = answers
    assert isinstance(answer, AIMessage)
    assert answer.tool_calls == [LOOKUP_CALL]
    assert provider.attempts == 2
    assert answer.id is not None
    assert _client_view(items)[answer.id].tool_calls == [LOOKUP_CALL]
    assert _timeline(items) == [_retry(1, answer.id, model="tool-call-cut-once")]


# --- JSON mode --------------------------------------------------------------------------------


async def test_json_mode_asks_the_provider_for_a_json_object_on_every_attempt(
    stub: OpenAIStub,
) -> None:
    stub.fail(500)
    stub.reply('{"intent": "answer"}')

    answer = await json_mode(_model(stub)).ainvoke("classify this")

    assert answer.content == '{"intent": "answer"}'
    stub.assert_calls(2)
    assert [r["response_format"] for r in stub.requests] == [{"type": "json_object"}] * 2


async def test_json_mode_streamed_in_a_graph_asks_for_a_json_object_too(stub: OpenAIStub) -> None:
    stub.cut('{"intent": "answer", "query": "kana"}', words_sent=2)
    stub.reply('{"intent": "answer", "query": "kana"}')
    answers: list[BaseMessage] = []
    items: list[StreamItem] = []

    await _stream(_graph(json_mode(_model(stub)), answers), items)

    [answer] = answers
    assert answer.content == '{"intent": "answer", "query": "kana"}'
    assert answer.id is not None
    assert _client_view(items)[answer.id].content == answer.content
    stub.assert_calls(2)
    assert [(r["stream"], r["response_format"]) for r in stub.requests] == [
        (True, {"type": "json_object"})
    ] * 2


async def test_json_mode_leaves_a_model_whose_provider_lacks_it_unchanged(
    stub: OpenAIStub,
) -> None:
    model = _model(stub, json_mode=False)
    stub.reply('{"intent": "answer"}')

    assert json_mode(model) is model
    await json_mode(model).ainvoke("classify this")
    assert "response_format" not in stub.requests[0]


def test_json_mode_leaves_the_offline_model_unchanged() -> None:
    model = OfflineChatModel()

    assert json_mode(model) is model
