"""The SDK's ``messages`` mode made of LangGraph's ``messages`` chunks: a message's metadata once,
then the message so far after each token, and a whole message complete."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

from consentry.runtime.runs.execute._message_outputs import MessageAccumulator

META = {"langgraph_node": "answer", "langgraph_step": 2, "consentry_run_id": "r1"}


def test_tokens_give_the_metadata_once_then_the_message_so_far() -> None:
    messages = MessageAccumulator()

    first = messages.outputs((AIMessageChunk("Hel", id="m1"), META))
    second = messages.outputs((AIMessageChunk("lo", id="m1"), META))

    assert [mode for mode, _ in first] == ["messages/metadata", "messages/partial"]
    assert first[0][1] == {"m1": {"metadata": {"langgraph_node": "answer", "langgraph_step": 2}}}
    assert [mode for mode, _ in second] == ["messages/partial"]
    ((so_far,),) = [data for _, data in second]
    assert so_far == AIMessage("Hello", id="m1")  # a whole message, its chunks added


def test_a_whole_message_is_complete_and_one_without_an_id_is_passed_over() -> None:
    messages = MessageAccumulator()

    whole = messages.outputs((ToolMessage("42", tool_call_id="c1", id="m2"), META))
    nameless = messages.outputs((AIMessageChunk("x"), META))

    assert [mode for mode, _ in whole] == ["messages/metadata", "messages/complete"]
    assert whole[1][1] == [ToolMessage("42", tool_call_id="c1", id="m2")]
    assert nameless == []
