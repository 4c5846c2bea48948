"""A run's user messages for the transcript (``RunEventStream.take_transcript``): written with the
next stored events, forgotten only once those are sent, and never lost to a flush of events
stored before they were given (a late progress write, then the run's next input)."""

from __future__ import annotations

from datetime import UTC, datetime

from consentry.runtime.runs._event_stream import RunEventStream
from consentry.schemas.events import StepEvent
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
