"""How a run's events look in the terminal, as they come.

Token deltas grow the answer's line after ``<graph>> `` and its ``message`` completes it (with
whatever the tokens had not brought: after a rejoin the rest comes with the ``message`` only);
steps are dim progress lines, and so is each tool call and each tool's result (its first line,
shortened, with the whole size when there is more); a ``model_retry`` is a notice (and voids the
text streamed so far for its message); a ``note`` says its new version; ``error`` events go to
stderr.
"""

from __future__ import annotations

from typing import TextIO

from consentry.schemas.events import (
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    ModelRetryEvent,
    NoteEvent,
    ResyncEvent,
    RunStartedEvent,
    StepEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from consentry.terminal.errors import ClientError
from consentry.terminal.render import (
    Palette,
    describe_tool_call,
    describe_tool_result,
    format_error,
)

__all__ = ["RunView"]


class RunView:
    """Writes events to ``out`` (errors to ``err``), keeping the answer line being streamed."""

    def __init__(self, *, palette: Palette, out: TextIO, err: TextIO, speaker: str) -> None:
        self._p = palette
        self._out, self._err = out, err
        self.speaker = speaker
        self._open_line: str | None = None  # the message whose tokens end the current line
        self._streamed: dict[str, str] = {}

    def show(self, event: Event) -> None:
        p = self._p
        if isinstance(event, RunStartedEvent):
            self.speaker = event.graph
        elif isinstance(event, StepEvent):
            self.line(p.dim(f"  · {event.label}"))
        elif isinstance(event, TokenEvent):
            if self._open_line != event.message_id:
                self.end_line()
                self._write(self._prefix())
                self._open_line = event.message_id
            streamed = self._streamed.get(event.message_id, "")
            self._streamed[event.message_id] = streamed + event.delta
            self._write(event.delta)
        elif isinstance(event, MessageEvent):
            self._complete(event)
        elif isinstance(event, ToolCallEvent):
            self.line(p.dim(f"  · {describe_tool_call(event)}"))
        elif isinstance(event, ToolResultEvent):
            self.line(p.dim(f"  · {describe_tool_result(event)}"))
        elif isinstance(event, ModelRetryEvent):
            if event.discard_message_id is not None:
                self._streamed.pop(event.discard_message_id, None)
            void = "; the text above is void" if event.discard_message_id else ""
            self.line(
                p.yellow(
                    f"the model is busy ({event.code}): attempt {event.attempt} of "
                    f"{event.max_attempts} failed, retrying in {event.retry_in_seconds:.1f} s{void}"
                )
            )
        elif isinstance(event, NoteEvent):
            self.line(p.green(f"note “{event.title}” is now version {event.version}"))
        elif isinstance(event, ErrorEvent):
            again = " (retryable)" if event.retryable else ""
            self.error_line(f"error: {event.code}: {event.message}{again}")
        elif isinstance(event, ResyncEvent):
            self.line(p.dim("(some earlier events of this thread are no longer stored)"))
        elif isinstance(event, FinalEvent):
            self.end_line()
            if event.reason not in ("completed", "interrupted"):
                self.line(p.dim(f"(the run ended: {event.reason})"))

    def line(self, text: str) -> None:
        """A line of its own (ending the answer line first, if one is open)."""
        self.end_line()
        print(text, file=self._out, flush=True)

    def error_line(self, text: str) -> None:
        self.end_line()
        print(self._p.red(text), file=self._err, flush=True)

    def error(self, error: ClientError) -> None:
        self.error_line(format_error(error))

    def end_line(self) -> None:
        if self._open_line is not None:
            self._write("\n")
            self._open_line = None

    def _complete(self, message: MessageEvent) -> None:
        streamed = self._streamed.pop(message.message_id, None)
        continued = self._open_line == message.message_id
        if continued and streamed is not None and message.content.startswith(streamed):
            self._write(message.content[len(streamed) :])
            self.end_line()
        else:
            self.line(self._prefix() + message.content)

    def _prefix(self) -> str:
        return self._p.bold(self._p.cyan(f"{self.speaker}> "))

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()
