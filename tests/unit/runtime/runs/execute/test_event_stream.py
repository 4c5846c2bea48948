"""``RunEventStream``: a run's user messages for the transcript (``take_transcript``) are written
with the next stored events, forgotten only once those are sent, and never lost to a flush of
events stored before they were given (a late progress write, then the run's next input); and
LangGraph's outputs after each step (``record_graph_output``) go only to the listeners that asked
for their mode, never stored, never caught up with, numbered as the event before them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.schemas.events import FinalEvent, MessageEvent, StepEvent, TokenEvent
from consentry.storage.transcript import TranscriptEntry

FIRST = TranscriptEntry("msg-1", "user", "Approve it")
SECOND = TranscriptEntry("msg-2", "user", "And what is RAG?")


def _events() -> RunEventStream:
    return RunEventStream(
        thread_id="t", run_id="r", last_seq=0, reserved_until=100, clock=lambda: datetime.now(UTC)
    )


def test_a_message_given_while_a_store_was_in_flight_is_kept_for_the_next_one() -> None:
    events = _events()
    events.transcript.append(FIRST)
    events.record(events.make(StepEvent, node="a", label="A"))
    rows = events.take_durable()
    assert events.take_transcript() == [FIRST]  # written by this store

    events.transcript.append(SECOND)  # the run's next input, while the store was in flight
    events.flush(through=rows[-1].seq)

    assert events.take_transcript() == [SECOND]


def test_a_failed_store_gives_its_messages_again() -> None:
    events = _events()
    events.transcript.append(FIRST)
    events.record(events.make(StepEvent, node="a", label="A"))
    rows = events.take_durable()
    assert events.take_transcript() == [FIRST]

    events.restore_durable(rows)  # the store failed
    events.flush(through=0)

    assert events.take_transcript() == [FIRST]


def test_a_flush_without_a_store_keeps_the_messages() -> None:
    events = _events()
    events.transcript.append(FIRST)

    events.flush()  # tokens only: nothing was stored

    assert events.take_transcript() == [FIRST]
    events.flush()  # now written and sent
    assert events.take_transcript() == []


async def _received(events: AsyncIterator[OutgoingEvent]) -> list[tuple[int, str]]:
    """What a listener got, to the run's end."""
    async with asyncio.timeout(5):
        return [(event.seq, event.type) async for event in events]


def _record_a_step(events: RunEventStream) -> None:
    events.record(events.make(StepEvent, node="answer", label="Answering"))
    events.record_graph_output("tasks", '{"chunk": {"name": "answer"}}')
    events.record(events.make(TokenEvent, message_id="m1", delta="Hi"))
    events.record(events.make(MessageEvent, message_id="m1", content="Hi"))
    events.record_graph_output("updates", '{"chunk": {"answer": {}}}')
    events.record_graph_output("values", '{"chunk": {"messages": []}}')


def _end(events: RunEventStream) -> None:
    events.record(events.make(FinalEvent, reason="completed"))
    events.flush()
    events.close()


async def test_graph_outputs_go_only_to_the_listeners_that_asked_for_their_mode() -> None:
    events = _events()
    main = events.listen()  # a /v1 stream: asks for none
    assert events.graph_modes == frozenset()
    events.record(events.make(StepEvent, node="analyze", label="Reading"))
    events.flush()
    joiner = events.join(after_seq=0, graph_modes=frozenset({"values"}))
    assert (await anext(joiner)).type == "step"  # it follows the run from now on
    _record_a_step(events)
    events.flush()
    _end(events)

    assert events.graph_modes == {"values"}
    assert await _received(main) == [
        (1, "step"),
        (2, "step"),
        (2, "token"),
        (3, "message"),
        (4, "final"),
    ]
    assert await _received(joiner) == [
        (2, "step"),
        (2, "token"),
        (3, "message"),
        (3, "graph:values"),
        (4, "final"),
    ]
    assert events.graph_modes == {"values"}  # sticky for the run when its listener has gone


async def test_a_wish_asked_by_listen_holds_from_the_first_step_for_what_a_run_gives() -> None:
    events = _events()
    main = events.listen(graph_modes=frozenset({"tasks", "updates", "unknown"}))
    assert events.graph_modes == {"tasks", "updates"}  # registered at the call, not at a read
    _record_a_step(events)
    events.flush()
    _end(events)

    assert await _received(main) == [
        (1, "step"),
        (1, "graph:tasks"),
        (1, "token"),
        (2, "message"),
        (2, "graph:updates"),
        (3, "final"),
    ]


async def test_graph_outputs_are_never_stored_nor_caught_up_with() -> None:
    events = _events()
    events.listen(graph_modes=frozenset({"values", "updates", "tasks"}))
    _record_a_step(events)

    assert [(row.seq, row.type) for row in events.take_durable()] == [(1, "step"), (2, "message")]
    events.flush()
    _end(events)
    joiner = events.join(after_seq=0, graph_modes=frozenset({"values", "updates", "tasks"}))
    assert await _received(joiner) == [(1, "step"), (2, "message"), (3, "final")]


def test_a_failed_store_gives_out_the_numbers_again_whatever_graph_outputs_came_before() -> None:
    events = _events()
    events.record(events.make(StepEvent, node="a", label="A"))
    events.flush()
    events.record_graph_output("values", "{}")  # numbered 1, as the step before it
    events.record(events.make(StepEvent, node="b", label="B"))

    events.discard_unsent()  # the store of step b failed

    assert events.make(StepEvent, node="b", label="B").seq == 2


def test_graph_outputs_wait_with_progress_and_alone_do_not_wait() -> None:
    events = _events()
    events.record(events.make(StepEvent, node="a", label="A"))
    events.record_graph_output("tasks", "{}")
    assert events.unsent_waits_for_a_write  # no write of their own: they go with the step
    events.flush()
    events.record_graph_output("values", "{}")
    assert not events.unsent_waits_for_a_write  # nothing to store: sent at once


def test_progress_waits_with_a_steps_results_but_not_before_a_token() -> None:
    events = _events()
    events.record(events.make(StepEvent, node="a", label="A"))
    events.record(events.make(MessageEvent, message_id="m", content="held"))
    assert events.unsent_waits_for_a_write  # all of it goes with the step's checkpoint
    events.record(events.make(TokenEvent, message_id="m2", delta="t"))
    assert not events.unsent_waits_for_a_write  # a token waits for nothing but the progress


async def test_a_subgraphs_outputs_go_only_to_the_listeners_that_asked_for_the_subgraphs() -> None:
    events = _events()
    graph_only = events.listen(graph_modes=frozenset({"values"}))
    events.record(events.make(StepEvent, node="plan", label="Planning"))
    events.flush()
    nested = events.join(after_seq=0, graph_modes=frozenset({"values", "subgraphs:values"}))
    assert (await anext(nested)).type == "step"  # it follows the run from now on
    events.record_graph_output("values", '{"run_id": "r", "chunk": {}}')
    events.record_graph_output("subgraphs:values", '{"run_id": "r", "chunk": {}, "ns": ["p:1"]}')
    events.flush()
    _end(events)

    assert events.subgraph_modes == {"values"}  # what the graph streams its subgraphs for
    assert await _received(graph_only) == [(1, "step"), (1, "graph:values"), (2, "final")]
    assert await _received(nested) == [
        (1, "graph:values"),
        (1, "graph:subgraphs:values"),
        (2, "final"),
    ]


async def test_kept_outputs_go_with_the_next_durable_event_and_back_to_a_joiner() -> None:
    events = _events()
    main = events.listen(graph_modes=frozenset({"values", "tasks"}), kept=True)
    _record_a_step(events)  # values and tasks are kept, updates nobody asked for
    durable = events.take_durable()
    events.flush()
    # Joiners read once the run has ended (a join subscribes at its first read), from its
    # history: from its first event, what was kept...
    from_start = events.join(after_seq=0, graph_modes=frozenset({"values"}))
    # ...and after frame 1 (a client that may have had the outputs numbered 1): not those again.
    after_one = events.join(after_seq=1, graph_modes=frozenset({"values", "tasks"}))
    _end(events)

    assert events.kept_modes == {"values", "tasks"}
    assert [(e.seq, e.type, e.outputs) for e in durable] == [
        (1, "step", None),
        (2, "message", 'graph:tasks {"chunk": {"name": "answer"}}'),
    ]
    assert await _received(main) == [
        (1, "step"),
        (1, "graph:tasks"),
        (1, "token"),
        (2, "message"),
        (2, "graph:values"),
        (3, "final"),
    ]
    # The outputs recorded after the last durable event go with the run's final.
    assert await _received(from_start) == [
        (1, "step"),
        (2, "message"),
        (2, "graph:values"),
        (3, "final"),
    ]
    assert await _received(after_one) == [(2, "message"), (2, "graph:values"), (3, "final")]


def test_outputs_of_a_step_that_is_not_stored_are_not_kept() -> None:
    events = _events()
    events.listen(graph_modes=frozenset({"values"}), kept=True)
    events.record_graph_output("values", '{"chunk": {}}')
    events.discard_unsent()  # the step's store failed: it runs again

    events.record(events.make(StepEvent, node="answer", label="Answering"))

    assert [row.outputs for row in events.take_durable()] == [None]


async def test_a_joiner_mid_run_gets_the_kept_outputs_sent_before_their_event_is() -> None:
    """Kept outputs go out as they come, and into storage with the next durable event: a
    client that joins in between (a page reloaded mid-answer) gets them from the stream."""
    events = _events()
    main = events.listen(graph_modes=frozenset({"messages"}), kept=True)
    events.record(events.make(StepEvent, node="answer", label="Answering"))
    events.flush()
    events.record_graph_output("messages", '{"chunk": "He"}')
    events.record_graph_output("messages", '{"chunk": "llo"}')
    events.flush()  # sent: the message that carries them is not recorded yet
    joiner = events.join(after_seq=0, graph_modes=frozenset({"messages"}))
    assert (await anext(joiner)).type == "step"  # it follows the run from now on
    events.record_graph_output("messages", '{"chunk": "!"}')
    events.record(events.make(MessageEvent, message_id="m1", content="Hello!"))
    _end(events)

    expected = [
        (1, "step"),
        (1, "graph:messages"),
        (1, "graph:messages"),
        (1, "graph:messages"),
        (2, "message"),
        (3, "final"),
    ]
    assert await _received(main) == expected
    assert await _received(joiner) == expected[1:]  # every token once, then the rest


_AWKWARD_TEXTS = (
    " word",
    'a "quoted" \\ back\\slash',
    "line\nbreak\r\nand\ttab\x00nul\x1f",
    "é 😀 \u2028 \u2029 \x7f \x85",
    "",
)


def test_a_token_is_recorded_as_its_model_would_serialize_it() -> None:
    """``record_token`` writes its JSON without the model: the same text, whatever the delta (a
    microsecond or none, escapes, line separators, astral characters), numbered like a token."""
    for ts in (datetime(2026, 12, 7, 9, 22, 40, 764462, UTC), datetime(2026, 12, 7, tzinfo=UTC)):
        events = RunEventStream(
            thread_id="t-1", run_id="r-1", last_seq=4, reserved_until=100, clock=lambda ts=ts: ts
        )
        for delta in _AWKWARD_TEXTS:
            events.emit(TokenEvent, {"message_id": "msg-é", "delta": delta})
            expected = TokenEvent(
                thread_id="t-1", run_id="r-1", seq=4, ts=ts, message_id="msg-é", delta=delta
            )
            (sent,) = events._unsent
            assert sent == OutgoingEvent(4, "token", expected.model_dump_json())
            events._unsent.clear()
        assert not events.has_unstored  # never stored


def test_an_event_other_than_a_token_is_made_by_its_model() -> None:
    events = _events()
    events.emit(StepEvent, {"node": "a", "label": "A"})
    (stored,) = events.take_durable()
    assert StepEvent.model_validate_json(stored.data).label == "A"
    assert stored.seq == 1
