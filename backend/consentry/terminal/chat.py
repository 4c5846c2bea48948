"""``consentry chat``: talk to a graph from the terminal, and decide its consents there.

Each line typed is a message (``POST /v1/chat``); the run's events show as they come: token
deltas as the answer grows, steps as dim progress lines, errors on stderr. A run that stops at
a consent shows the proposal and asks for a decision, which goes back as ``resume`` with a fresh
``Idempotency-Key``; its run is shown the same way. End of input or ``/quit`` ends the session.
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Iterable
from typing import Any, TextIO

from consentry.schemas.chat import ChatRequest, ResumeDecision
from consentry.schemas.events import ConsentEvent, Event, FinalEvent, TokenEvent
from consentry.terminal.api_client import ConsentryClient, build_request, new_idempotency_key
from consentry.terminal.consent_prompt import (
    ConsentPrompt,
    LineReader,
    how_to_decide_later,
    same_review,
)
from consentry.terminal.errors import ApiError, ClientError, InvalidInputError
from consentry.terminal.render import Palette
from consentry.terminal.run_view import RunView

__all__ = ["ChatSession", "read_stdin_line"]

QUIT_COMMANDS = ("/quit", "/exit")
HOW_TO_QUIT = "type a message and Enter; /quit or Ctrl-D to leave"


def read_stdin_line(prompt: str) -> str | None:
    """``input()``; when stdin is not a terminal the line is echoed, so a transcript reads well."""
    try:
        line = input(prompt)
    except EOFError:
        print(flush=True)  # end the prompt's line
        return None
    if not sys.stdin.isatty():
        print(line, flush=True)
    return line


class ChatSession:
    """One person's conversation on one thread (new, or ``thread_id`` to go on with one)."""

    def __init__(
        self,
        client: ConsentryClient,
        *,
        palette: Palette,
        editor_command: list[str],
        thread_id: str | None = None,
        note_id: str | None = None,
        project_id: str | None = None,
        graph: str | None = None,
        read_line: LineReader = read_stdin_line,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
    ) -> None:
        self._client = client
        self._p = palette
        self._view = RunView(palette=palette, out=out, err=err, speaker=graph or "assistant")
        self._read_line = read_line
        self.thread_id = thread_id
        self._note_id = note_id
        self._new_thread = {"note_id": note_id, "project_id": project_id, "graph": graph}
        self._edit_schemas: dict[str, dict[str, Any] | None] | None = None
        self._prompt = ConsentPrompt(
            palette=palette,
            out=out,
            err=err,
            read_line=read_line,
            editor_command=editor_command,
            edit_fields=self._edit_fields,
        )

    def run(self) -> int:
        """Until end of input or ``/quit``: 0. Errors of the server's reach propagate."""
        if self._note_id is not None:
            note = self._client.note(self._note_id)  # an unknown note fails here, at start-up
            self._view.line(
                self._p.dim(f"chat about the note “{note.title}” (version {note.version})")
            )
        elif self.thread_id is None:
            self._client.check_access()
        if self.thread_id is None:
            self._view.line(self._p.dim(HOW_TO_QUIT))
        elif not self._resume_thread(self.thread_id):
            return 0
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())
        while True:
            line = self._read_line("you> ")
            if line is None or line.strip() in QUIT_COMMANDS:
                return 0
            if line.strip() and not self._send_message(line.strip()):
                return 0

    def _resume_thread(self, thread_id: str) -> bool:
        detail = self._client.thread(thread_id)
        self._view.speaker = detail.graph
        self._view.line(
            self._p.dim(f"thread {thread_id} ({detail.title or detail.graph}): {detail.status}")
        )
        self._view.line(self._p.dim(HOW_TO_QUIT))
        if detail.status == "running":
            self._view.line(
                self._p.dim("a run is in progress on this thread; send when it is over")
            )
        return self._decide_all(detail.pending_consents)

    def _send_message(self, text: str) -> bool:
        """Send a message and follow its run; ``False`` if the input ended at a consent."""
        fields = {"thread_id": self.thread_id, "message": text, **self._new_thread}
        try:
            request = build_request(ChatRequest, fields)
            consents = self._follow(self._client.run(request))
        except (ApiError, InvalidInputError) as exc:
            self._view.error(exc)
            if exc.code == "consent_pending":
                self._view.line("decide the pending consent first: consentry approvals list")
            return True
        return self._decide_all(consents)

    def _decide_all(self, consents: Iterable[ConsentEvent]) -> bool:
        """Ask for each consent in turn (and for those its resumed run asks); the tool calls of
        one review are asked together and sent in one request."""
        queue = deque(consents)
        seen = {consent.approval_id for consent in queue}
        while queue:
            consent = queue.popleft()
            review = [consent, *(c for c in queue if same_review(consent, c))]
            for other in review[1:]:
                queue.remove(other)
            if len(review) == 1:
                self._prompt.show(consent)
            while True:
                decision = (
                    self._prompt.ask(consent)
                    if len(review) == 1
                    else self._prompt.ask_review(review)
                )
                if decision is None:
                    self._view.line(how_to_decide_later(consent))
                    return False
                try:
                    asked = self._send_decision(consent.thread_id, decision)
                except ApiError as exc:
                    self._view.error(exc)
                    if exc.status == 422:  # a wrong edit or answer: the consent is still pending
                        continue
                    break
                queue.extend(c for c in asked if c.approval_id not in seen)
                seen.update(c.approval_id for c in asked)
                break
        return True

    def _send_decision(
        self, thread_id: str, decision: ResumeDecision | list[ResumeDecision]
    ) -> list[ConsentEvent]:
        request = ChatRequest(thread_id=thread_id, resume=decision)
        return self._follow(self._client.run(request, idempotency_key=new_idempotency_key()))

    def _follow(self, events: Iterable[Event]) -> list[ConsentEvent]:
        """Show a run's events; the consents it stopped at (those a person must decide)."""
        asking: list[ConsentEvent] = []
        waiting: list[ConsentEvent] = []
        for event in events:
            if self.thread_id is None:
                self.thread_id = event.thread_id
                self._view.line(
                    self._p.dim(
                        f"thread {event.thread_id} (go on with it later: "
                        f"consentry chat --thread {event.thread_id})"
                    )
                )
            if not isinstance(event, ConsentEvent | TokenEvent | FinalEvent):
                for consent in asking:  # followed by more of the run: the policy decided it
                    self._view.line(
                        self._p.dim(f"consent “{consent.title}”: decided by the thread's policy")
                    )
                asking = []
            if isinstance(event, ConsentEvent):
                asking.append(event)
                continue
            self._view.show(event)
            if isinstance(event, FinalEvent):
                # after a takeover a rejoined stream goes on with the run that continues it
                waiting, asking = (asking if event.reason == "interrupted" else []), []
        return waiting

    def _edit_fields(self, kind: str) -> list[str] | None:
        if self._edit_schemas is None:
            try:
                kinds = self._client.consent_kinds()
            except ClientError:
                kinds = []
            self._edit_schemas = {k.kind: k.edit_schema for k in kinds}
        properties = (self._edit_schemas.get(kind) or {}).get("properties")
        return list(properties) if isinstance(properties, dict) else None
