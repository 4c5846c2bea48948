"""Show a consent and ask the person for one of its ``allowed_decisions``.

- The consent kit's kinds: approve, edit (in their editor) or reject. An edit starts from what is
  proposed: for ``note_edit`` the ``proposed_content``, for ``note_create`` the ``content`` (both
  sent back as ``{"content": …}``); for any other kind the proposal as JSON, cut down to the
  fields of the kind's edit schema (``GET /v1/consent-kinds``), and the saved JSON object is sent
  as it is. An edit left unchanged, emptied, or whose editor failed sends nothing: one line
  ``Nothing sent: …`` says why, and the decision is asked again (``editor``).
- A raw ``interrupt(value)`` (kind ``interrupt``): the value as indented JSON, and a line typed as
  the answer: parsed as JSON, or sent as text when it is not JSON (``Lisbon`` is ``"Lisbon"``,
  ``30`` is the number 30). The interrupt's ``response_schema`` is shown as a hint; the server
  checks the answer against it (a 422 ``invalid_answer`` is shown, and the question asked again).
  A yes/no question (the schema is one boolean) is its question in words, asked with
  ``(yes/no)``: ``yes``, ``no``, ``y``, ``n``, ``true`` or ``false``, in any case.
- A reviewed tool call (kind ``tool_call``, LangChain's human-in-the-loop middleware): the tool
  and its arguments; approve, edit (the editor on the arguments as JSON; the saved object is
  sent), reject (an optional reason, told to the model) or respond (a reply the model reads as
  the tool's result; the tool does not run). The calls of one review share an ``interrupt_id``
  and are asked in turn, then sent together (:meth:`ConsentPrompt.ask_review`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TextIO

from pydantic import JsonValue

from consentry.schemas.approvals import RAW_INTERRUPT
from consentry.schemas.chat import ResumeDecision
from consentry.schemas.events import ConsentEvent
from consentry.terminal.answers import is_yes_no, parse_answer, parse_yes_no, question_of
from consentry.terminal.api_client import build_request
from consentry.terminal.editor import Unsent, edit_json, edit_text
from consentry.terminal.errors import InvalidInputError
from consentry.terminal.render import (
    Palette,
    describe_answer_schema,
    format_expiry,
    render_proposal,
    render_yes_no,
)

__all__ = [
    "TOOL_CALL",
    "ConsentPrompt",
    "LineReader",
    "how_to_decide_later",
    "same_review",
]

LineReader = Callable[[str], str | None]
"""Show a prompt, return the line typed (without its newline), or ``None`` at end of input."""
EditFields = Callable[[str], list[str] | None]
"""The fields of a consent kind's edit schema, if the server publishes them."""
TOOL_CALL = "tool_call"
"""The kind of a tool call reviewed by LangChain's human-in-the-loop middleware."""
_CHOICES = {
    "approve": ("a", "[a]pprove"),
    "edit": ("e", "[e]dit"),
    "reject": ("r", "[r]eject"),
    "respond": ("s", "re[s]pond"),
}
"""Each decision a person can type: its key and how the question names it."""
ANSWER_PROMPT = "answer> "
YES_NO = "(yes/no) "
"""Ends the question of a yes/no interrupt, where the answer is typed."""


def same_review(one: ConsentEvent, other: ConsentEvent) -> bool:
    """Both are tool calls of one review, decided together in one request."""
    return (
        one.kind == other.kind == TOOL_CALL
        and bool(one.interrupt_id)
        and one.interrupt_id == other.interrupt_id
    )


def how_to_decide_later(consent: ConsentEvent) -> str:
    """What to run to decide a consent left pending."""
    later = f"`consentry chat --thread {consent.thread_id}`"
    if consent.kind == RAW_INTERRUPT:
        value = "true|false" if is_yes_no(consent.response_schema) else "JSON"
        now = f"`consentry approvals answer {consent.approval_id} --value {value}`"
    elif consent.kind == TOOL_CALL and consent.interrupt_id:
        return f"consent {consent.approval_id} is still pending: decide it with {later}"
    else:
        now = f"`consentry approvals approve|reject {consent.approval_id}`"
    return f"consent {consent.approval_id} is still pending: decide it with {now} or {later}"


class ConsentPrompt:
    def __init__(
        self,
        *,
        palette: Palette,
        out: TextIO,
        err: TextIO,
        read_line: LineReader,
        editor_command: list[str],
        edit_fields: EditFields,
    ) -> None:
        self._palette = palette
        self._out = out
        self._err = err
        self._read_line = read_line
        self._editor = editor_command
        self._edit_fields = edit_fields

    def show(self, consent: ConsentEvent) -> None:
        p = self._palette
        self._print(f"{p.bold(p.yellow('consent'))} {p.bold(consent.title)}")
        if _asks_yes_no(consent):  # the question is asked where the answer is typed
            said = render_yes_no(_value_of(consent), title=consent.title)
            if said:
                self._print(said)
        else:
            self._print(render_proposal(consent.kind, consent.proposal, p))
            if consent.kind == RAW_INTERRUPT:
                self._print(p.dim(describe_answer_schema(consent.response_schema)))
        expiry = format_expiry(consent.expires_at)
        self._print(p.dim(f"{consent.kind} · {expiry} · approval {consent.approval_id}"))

    def ask(self, consent: ConsentEvent) -> ResumeDecision | None:
        """The person's decision, or ``None`` when the input ends first (it stays pending)."""
        if _asks_yes_no(consent):
            return self._ask_yes_no(consent)
        if consent.kind == RAW_INTERRUPT:
            return self._ask_answer(consent)
        allowed = [d for d in _CHOICES if d in consent.allowed_decisions]
        question = " / ".join(_CHOICES[d][1] for d in allowed) + "? "
        while True:
            line = self._read_line(question)
            if line is None:
                return None
            choice = _choose(line, allowed)
            if choice is None:
                said = " or ".join(f"{_CHOICES[d][0]} ({d})" for d in allowed)
                self._print(f"please answer {said}")
                continue
            decision: dict[str, Any] = {"approval_id": consent.approval_id, "decision": choice}
            if choice == "reject":
                asked = "reason (optional, told to the model; Enter for none): "
                comment = self._read_line(
                    asked if consent.kind == TOOL_CALL else "comment (optional, Enter for none): "
                )
                decision["comment"] = comment.strip() if comment and comment.strip() else None
            elif choice == "respond":
                reply = self._ask_reply()
                if reply is None:
                    return None
                decision["comment"] = reply
            elif choice == "edit":
                edited = self._edit(consent)
                if edited is None:
                    continue
                decision["edited"] = edited
            try:
                return build_request(ResumeDecision, decision)
            except InvalidInputError as exc:
                self._error(f"error: {exc.code}: {exc.message}")

    def ask_review(self, consents: Sequence[ConsentEvent]) -> list[ResumeDecision] | None:
        """The tool calls of one review, each shown and asked in turn: their decisions, sent
        together; ``None`` when the input ends first (they all stay pending)."""
        self._print(
            self._palette.bold(
                f"{len(consents)} tool calls to review together: decide each, "
                "then the decisions are sent at once"
            )
        )
        decisions = []
        for number, consent in enumerate(consents, start=1):
            self._print(self._palette.dim(f"({number} of {len(consents)})"))
            self.show(consent)
            decision = self.ask(consent)
            if decision is None:
                return None
            decisions.append(decision)
        return decisions

    def _ask_answer(self, consent: ConsentEvent) -> ResumeDecision | None:
        while True:
            line = self._read_line(ANSWER_PROMPT)
            if line is None:
                return None
            if not line.strip():
                self._print("please type an answer (JSON, or text)")
                continue
            fields = {"approval_id": consent.approval_id, "decision": "answer"}
            # `value` may be null (the JSON `null`): given, never dropped as "not set"
            return ResumeDecision.model_validate({**fields, "value": parse_answer(line)})

    def _ask_yes_no(self, consent: ConsentEvent) -> ResumeDecision | None:
        question = question_of(_value_of(consent)) or _description(consent) or consent.title
        while True:
            line = self._read_line(f"{' '.join(question.split())} {YES_NO}")
            if line is None:
                return None
            answer = parse_yes_no(line)
            if answer is None:
                self._print("please answer yes or no (y or n)")
                continue
            fields = {"approval_id": consent.approval_id, "decision": "answer", "value": answer}
            return ResumeDecision.model_validate(fields)

    def _ask_reply(self) -> str | None:
        while True:
            reply = self._read_line("reply (the model reads it as the tool's result): ")
            if reply is None:
                return None
            if reply.strip():
                return reply.strip()
            self._print("a reply is needed: the tool does not run, the model reads this instead")

    def _edit(self, consent: ConsentEvent) -> dict[str, Any] | None:
        """The edit to send; ``None`` when there is nothing to send (said in one line)."""
        proposal = consent.proposal
        start = proposal.get("proposed_content" if consent.kind == "note_edit" else "content")
        edited: dict[str, Any] | Unsent
        if consent.kind in ("note_edit", "note_create") and isinstance(start, str):
            saved = edit_text(start, command=self._editor)
            edited = saved if isinstance(saved, Unsent) else {"content": saved}
        elif consent.kind == TOOL_CALL:
            args = proposal.get("args")
            edited = edit_json(args if isinstance(args, dict) else {}, command=self._editor)
        else:
            fields = self._edit_fields(consent.kind)
            shown = {k: v for k, v in proposal.items() if fields is None or k in fields}
            edited = edit_json(shown, command=self._editor)
        if not isinstance(edited, Unsent):
            return edited
        if edited.failed:
            self._error(edited.line)
        else:
            self._print(edited.line)
        return None

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def _error(self, text: str) -> None:
        print(self._palette.red(text), file=self._err, flush=True)


def _value_of(consent: ConsentEvent) -> JsonValue:
    """The value a raw interrupt asks with (also in its proposal, as ``{"value": …}``)."""
    if consent.value is not None:
        return consent.value
    value: JsonValue = consent.proposal.get("value")
    return value


def _asks_yes_no(consent: ConsentEvent) -> bool:
    return consent.kind == RAW_INTERRUPT and is_yes_no(consent.response_schema)


def _description(consent: ConsentEvent) -> str | None:
    said = (consent.response_schema or {}).get("description")
    return said if isinstance(said, str) and said.strip() else None


def _choose(line: str, allowed: Sequence[str]) -> str | None:
    answer = line.strip().lower()
    for decision in allowed:
        if answer and (answer == decision or answer == _CHOICES[decision][0]):
            return decision
    return None
