"""Show a consent and ask the person: approve, edit (in their editor) or reject.

Only the consent's ``allowed_decisions`` are offered. An edit starts from what is proposed: for
``note_edit`` the ``proposed_content``, for ``note_create`` the ``content`` (both sent back as
``{"content": …}``); for any other kind the proposal as JSON, cut down to the fields of the kind's
edit schema (``GET /v1/consent-kinds``), and the saved JSON object is sent as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from consentry.schemas.chat import ResumeDecision
from consentry.schemas.events import ConsentEvent
from consentry.terminal.api_client import build_request
from consentry.terminal.editor import EditorError, edit_text
from consentry.terminal.errors import InvalidInputError
from consentry.terminal.render import Palette, format_expiry, render_proposal

__all__ = ["ConsentPrompt", "LineReader"]

LineReader = Callable[[str], str | None]
"""Show a prompt, return the line typed (without its newline), or ``None`` at end of input."""
EditFields = Callable[[str], list[str] | None]
"""The fields of a consent kind's edit schema, if the server publishes them."""
_CHOICES = {"approve": "[a]pprove", "edit": "[e]dit", "reject": "[r]eject"}


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
        self._print(render_proposal(consent.kind, consent.proposal, p))
        expiry = format_expiry(consent.expires_at)
        self._print(p.dim(f"{consent.kind} · {expiry} · approval {consent.approval_id}"))

    def ask(self, consent: ConsentEvent) -> ResumeDecision | None:
        """The person's decision, or ``None`` when the input ends first (it stays pending)."""
        allowed = [d for d in _CHOICES if d in consent.allowed_decisions]
        question = " / ".join(_CHOICES[d] for d in allowed) + "? "
        while True:
            line = self._read_line(question)
            if line is None:
                return None
            choice = _choose(line, allowed)
            if choice is None:
                self._print("please answer " + " or ".join(f"{d[0]} ({d})" for d in allowed))
                continue
            decision: dict[str, Any] = {"approval_id": consent.approval_id, "decision": choice}
            if choice == "reject":
                comment = self._read_line("comment (optional, Enter for none): ")
                decision["comment"] = comment.strip() if comment and comment.strip() else None
            elif choice == "edit":
                edited = self._edit(consent)
                if edited is None:
                    continue
                decision["edited"] = edited
            try:
                return build_request(ResumeDecision, decision)
            except InvalidInputError as exc:
                self._error(f"error: {exc.code}: {exc.message}")

    def _edit(self, consent: ConsentEvent) -> dict[str, Any] | None:
        proposal = consent.proposal
        start = proposal.get("proposed_content" if consent.kind == "note_edit" else "content")
        as_text = consent.kind in ("note_edit", "note_create") and isinstance(start, str)
        if as_text:
            text = str(start)
        else:
            fields = self._edit_fields(consent.kind)
            shown = {k: v for k, v in proposal.items() if fields is None or k in fields}
            text = json.dumps(shown, indent=2, ensure_ascii=False) + "\n"
        try:
            saved = edit_text(text, command=self._editor, suffix=".md" if as_text else ".json")
        except EditorError as exc:
            self._error(f"error: {exc}; nothing was sent")
            return None
        if as_text:
            return {"content": saved}
        try:
            edited = json.loads(saved)
        except json.JSONDecodeError as exc:
            self._error(f"error: the edit is not JSON ({exc}); nothing was sent")
            return None
        if not isinstance(edited, dict):
            self._error("error: the edit must be a JSON object; nothing was sent")
            return None
        return edited

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    def _error(self, text: str) -> None:
        print(self._palette.red(text), file=self._err, flush=True)


def _choose(line: str, allowed: Sequence[str]) -> str | None:
    answer = line.strip().lower()
    for decision in allowed:
        if answer and (answer == decision or answer == decision[0]):
            return decision
    return None
