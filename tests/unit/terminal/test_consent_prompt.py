"""``consentry chat`` asks a raw ``interrupt()`` for an answer (the value as indented JSON, the
``response_schema`` as a hint, a typed line sent as JSON or else as text, asked again on a 422
``invalid_answer`` with its messages; a yes/no question in words, answered yes or no) and a
reviewed tool call for a decision (the tool and its arguments; approve, edit in the editor on the
arguments, reject with a reason, respond with a reply); the calls of one review are asked in turn
and sent together, in one request. An edit the person did not make (the editor quit without
saving) sends nothing and the decision is asked again."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from consentry.schemas.chat import ResumeDecision
from consentry.schemas.events import ConsentEvent
from consentry.terminal.api_client import ConsentryClient
from consentry.terminal.chat import ChatSession
from consentry.terminal.consent_prompt import (
    ConsentPrompt,
    how_to_decide_later,
    same_review,
)
from consentry.terminal.errors import ApiError
from consentry.terminal.palette import Palette
from consentry.terminal.render import format_error

ENVELOPE: dict[str, Any] = {
    "thread_id": "t1",
    "run_id": "r1",
    "seq": 3,
    "ts": datetime(2026, 1, 1, tzinfo=UTC),
}
AGE_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 150}


def interrupt(
    value: Any, *, schema: dict[str, Any] | None = None, title: str = "Which city?"
) -> ConsentEvent:
    return ConsentEvent(
        **ENVELOPE,
        approval_id="a1",
        kind="interrupt",
        title=title,
        proposal={"value": value},
        allowed_decisions=["answer"],
        value=value,
        response_schema=schema,
        expires_at=None,
    )


def tool_call(
    approval_id: str = "c1",
    *,
    name: str = "send_email",
    args: dict[str, Any] | None = None,
    allowed: tuple[str, ...] = ("approve", "edit", "reject", "respond"),
    interrupt_id: str = "review-1",
) -> ConsentEvent:
    return ConsentEvent(
        **ENVELOPE,
        approval_id=approval_id,
        kind="tool_call",
        title=f"Run {name}?",
        proposal={
            "name": name,
            "args": {"to": "ada@example.com", "cc": ["bob"]} if args is None else args,
            "description": "Tool execution requires approval",
        },
        allowed_decisions=list(allowed),
        interrupt_id=interrupt_id,
        expires_at=None,
    )


def note_edit() -> ConsentEvent:
    return ConsentEvent(
        **ENVELOPE,
        approval_id="n1",
        kind="note_edit",
        title="Add a summary to your note “Kana”?",
        proposal={
            "title": "Kana",
            "base_version": 1,
            "base_content": "Kana.\n",
            "proposed_content": "Kana.\n- hiragana\n",
        },
        allowed_decisions=["approve", "edit", "reject"],
        expires_at=None,
    )


class Typed:
    """Lines a person types, one per prompt; the prompts they answered."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        return self.lines.pop(0) if self.lines else None


def prompt_for(
    typed: Typed, *, editor: list[str] | None = None
) -> tuple[ConsentPrompt, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    prompt = ConsentPrompt(
        palette=Palette(False),
        out=out,
        err=err,
        read_line=typed,
        editor_command=editor or ["false"],
        edit_fields=lambda _: None,
    )
    return prompt, out, err


def sent(decision: ResumeDecision | None) -> dict[str, Any]:
    assert decision is not None
    body: dict[str, Any] = decision.model_dump(mode="json", exclude_unset=True)
    return body


# ---- raw interrupts ----


def test_a_raw_interrupt_shows_its_value_as_indented_json_the_schema_and_no_deadline() -> None:
    prompt, out, _ = prompt_for(Typed())

    prompt.show(interrupt({"question": "How old are you?"}, schema=AGE_SCHEMA))

    assert out.getvalue() == (
        "consent Which city?\n"
        '{\n  "question": "How old are you?"\n}\n'
        'answer with JSON that fits {"type": "integer", "minimum": 0, "maximum": 150}\n'
        "interrupt · no deadline · approval a1\n"
    )


def test_without_a_schema_any_json_or_text_is_an_answer() -> None:
    prompt, out, _ = prompt_for(Typed())

    prompt.show(interrupt({"question": "Which city?"}))

    assert "answer with any JSON; a line that is not JSON is sent as text\n" in out.getvalue()


def test_the_typed_line_is_the_answer_and_an_empty_line_asks_again() -> None:
    typed = Typed("", "Lisbon")
    prompt, out, _ = prompt_for(typed)

    decision = prompt.ask(interrupt({"question": "Which city?"}))

    assert sent(decision) == {"approval_id": "a1", "decision": "answer", "value": "Lisbon"}
    assert typed.prompts == ["answer> ", "answer> "]
    assert out.getvalue() == "please type an answer (JSON, or text)\n"


def test_the_end_of_input_at_the_answer_leaves_the_interrupt_pending() -> None:
    prompt, _, _ = prompt_for(Typed())

    assert prompt.ask(interrupt({"question": "Which city?"})) is None
    assert how_to_decide_later(interrupt("?")) == (
        "consent a1 is still pending: decide it with `consentry approvals answer a1 --value "
        "JSON` or `consentry chat --thread t1`"
    )


def test_an_answer_that_misfits_the_schema_is_shown_with_the_servers_messages() -> None:
    refused = ApiError(
        422,
        code="invalid_answer",
        message="The answer does not fit the schema the graph asked for; "
        "the consent is still pending.",
        details={
            "errors": [
                {"path": [], "message": "200 is greater than the maximum of 150"},
                {"path": ["trip", "city"], "message": "'city' is a required property"},
            ]
        },
    )

    assert format_error(refused) == (
        "error: invalid_answer: The answer does not fit the schema the graph asked for; the "
        "consent is still pending.\n"
        "  200 is greater than the maximum of 150\n"
        "  trip.city: 'city' is a required property"
    )


# ---- yes/no questions ----

YES_NO = {"type": "boolean"}
WEEKLY = {"question": "Send the weekly report to Ada now?", "report": "weekly.pdf"}


def weekly_report() -> ConsentEvent:
    return interrupt(WEEKLY, schema=YES_NO, title="Send the weekly report to Ada now?")


def test_a_yes_no_question_shows_what_else_the_graph_sent_and_asks_yes_or_no() -> None:
    typed = Typed()
    prompt, out, _ = prompt_for(typed)

    prompt.show(weekly_report())
    prompt.ask(weekly_report())

    assert out.getvalue() == (
        "consent Send the weekly report to Ada now?\n"  # the question, said once
        '  report: "weekly.pdf"\n'
        "interrupt · no deadline · approval a1\n"
    )
    assert typed.prompts == ["Send the weekly report to Ada now? (yes/no) "]


def test_a_yes_no_question_shows_its_question_when_the_title_does_not_say_it() -> None:
    prompt, out, _ = prompt_for(Typed())

    prompt.show(interrupt("Delete the draft?", schema=YES_NO, title="Confirm"))

    assert out.getvalue() == (
        "consent Confirm\nDelete the draft?\ninterrupt · no deadline · approval a1\n"
    )


@pytest.mark.parametrize(
    ("line", "answer"), [("yes", True), ("Y", True), ("TRUE", True), ("no", False), ("n", False)]
)
def test_yes_or_no_is_the_answer_true_or_false(line: str, answer: bool) -> None:
    prompt, _, _ = prompt_for(Typed(line))

    decision = prompt.ask(weekly_report())

    assert sent(decision) == {"approval_id": "a1", "decision": "answer", "value": answer}


def test_another_line_to_a_yes_no_question_asks_again() -> None:
    typed = Typed("maybe", "", "yes")
    prompt, out, _ = prompt_for(typed)

    decision = prompt.ask(weekly_report())

    assert sent(decision) == {"approval_id": "a1", "decision": "answer", "value": True}
    assert typed.prompts == ["Send the weekly report to Ada now? (yes/no) "] * 3
    assert out.getvalue() == "please answer yes or no (y or n)\n" * 2


def test_a_yes_no_question_left_pending_says_to_answer_true_or_false() -> None:
    assert how_to_decide_later(weekly_report()) == (
        "consent a1 is still pending: decide it with `consentry approvals answer a1 --value "
        "true|false` or `consentry chat --thread t1`"
    )


# ---- tool calls ----


def test_a_tool_call_shows_its_tool_and_its_arguments_one_per_line() -> None:
    prompt, out, _ = prompt_for(Typed())

    prompt.show(tool_call(args={"to": "ada@example.com", "cc": ["bob", "eve"], "urgent": True}))

    assert out.getvalue() == (
        "consent Run send_email?\n"
        "tool send_email\n"
        '  to:     "ada@example.com"\n'
        "  cc:     [\n"
        '            "bob",\n'
        '            "eve"\n'
        "          ]\n"
        "  urgent: true\n"
        "Tool execution requires approval\n"
        "tool_call · no deadline · approval c1\n"
    )


def test_the_middlewares_default_description_is_not_shown_twice() -> None:
    consent = tool_call(args={"city": "Rome"})
    consent.proposal["description"] = (
        "Tool execution requires approval\n\nTool: send_email\nArgs: {'city': 'Rome'}"
    )
    prompt, out, _ = prompt_for(Typed())

    prompt.show(consent)

    assert "tool send_email\n" in out.getvalue()
    assert "Tool execution requires approval\ntool_call · " in out.getvalue()
    assert "Args: " not in out.getvalue()


def test_a_tool_call_offers_only_its_allowed_decisions() -> None:
    typed = Typed("e", "s", "a")
    prompt, out, _ = prompt_for(typed)

    decision = prompt.ask(tool_call(allowed=("approve", "reject")))

    assert sent(decision) == {"approval_id": "c1", "decision": "approve"}
    assert typed.prompts == ["[a]pprove / [r]eject? "] * 3
    assert out.getvalue() == "please answer a (approve) or r (reject)\n" * 2


def test_respond_asks_for_the_reply_the_model_reads_until_one_is_given() -> None:
    typed = Typed("s", "  ", "It is sunny in Lisbon.")
    prompt, out, _ = prompt_for(typed)

    decision = prompt.ask(tool_call())

    assert sent(decision) == {
        "approval_id": "c1",
        "decision": "respond",
        "comment": "It is sunny in Lisbon.",
    }
    assert typed.prompts == [
        "[a]pprove / [e]dit / [r]eject / re[s]pond? ",
        "reply (the model reads it as the tool's result): ",
        "reply (the model reads it as the tool's result): ",
    ]
    assert "a reply is needed" in out.getvalue()


def test_reject_sends_the_reason_told_to_the_model() -> None:
    typed = Typed("r", "not this address")
    prompt, _, _ = prompt_for(typed)

    decision = prompt.ask(tool_call())

    assert sent(decision) == {
        "approval_id": "c1",
        "decision": "reject",
        "comment": "not this address",
    }
    assert typed.prompts[1] == "reason (optional, told to the model; Enter for none): "


def test_edit_opens_the_editor_on_the_arguments_and_sends_the_saved_object(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen.json"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import shutil, sys\n"
        f"shutil.copy(sys.argv[1], {str(seen)!r})\n"
        "open(sys.argv[1], 'w').write('{\"to\": \"eve@example.com\"}')\n"
    )
    prompt, _, _ = prompt_for(Typed("e"), editor=[sys.executable, str(editor)])

    decision = prompt.ask(tool_call())

    assert json.loads(seen.read_text()) == {"to": "ada@example.com", "cc": ["bob"]}
    assert sent(decision) == {
        "approval_id": "c1",
        "decision": "edit",
        "edited": {"to": "eve@example.com"},
    }


def test_an_edit_that_is_not_a_json_object_sends_nothing_and_asks_again(tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'w').write('[1, 2]')\n")
    typed = Typed("e", "a")
    prompt, _, err = prompt_for(typed, editor=[sys.executable, str(editor)])

    decision = prompt.ask(tool_call())

    assert err.getvalue() == "Nothing sent: the edit must be a JSON object\n"
    assert sent(decision) == {"approval_id": "c1", "decision": "approve"}


def test_an_edit_of_the_arguments_left_unchanged_sends_nothing_and_asks_again() -> None:
    typed = Typed("e", "a")
    # `true` exits 0 and leaves the file as it was: vi's `:q!`
    prompt, out, err = prompt_for(typed, editor=["true"])

    decision = prompt.ask(tool_call())

    assert out.getvalue() == "Nothing sent: the edit was left unchanged\n"
    assert err.getvalue() == ""
    assert typed.prompts == ["[a]pprove / [e]dit / [r]eject / re[s]pond? "] * 2
    assert sent(decision) == {"approval_id": "c1", "decision": "approve"}


def test_an_edit_of_a_note_left_unchanged_sends_nothing_and_asks_again() -> None:
    typed = Typed("e", "r", "")
    prompt, out, err = prompt_for(typed, editor=["true"])

    decision = prompt.ask(note_edit())

    assert out.getvalue() == "Nothing sent: the edit was left unchanged\n"
    assert err.getvalue() == ""
    assert typed.prompts[:2] == ["[a]pprove / [e]dit / [r]eject? "] * 2
    assert sent(decision) == {"approval_id": "n1", "decision": "reject"}


def test_an_editor_that_fails_sends_nothing_says_why_and_asks_again() -> None:
    typed = Typed("e")
    prompt, out, err = prompt_for(typed, editor=["false"])

    assert prompt.ask(note_edit()) is None  # the input ends at the question asked again

    assert err.getvalue() == "Nothing sent: the editor exited with status 1\n"
    assert out.getvalue() == ""
    assert typed.prompts == ["[a]pprove / [e]dit / [r]eject? "] * 2


def test_a_note_edit_is_sent_as_saved_when_the_person_changed_it(tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('- katakana\\n')\n")
    prompt, out, _ = prompt_for(Typed("e"), editor=[sys.executable, str(editor)])

    decision = prompt.ask(note_edit())

    assert sent(decision) == {
        "approval_id": "n1",
        "decision": "edit",
        "edited": {"content": "Kana.\n- hiragana\n- katakana\n"},
    }
    assert out.getvalue() == ""


def test_the_calls_of_one_review_are_asked_in_turn_and_decided_together() -> None:
    typed = Typed("a", "s", "No rain today.")
    prompt, out, _ = prompt_for(typed)
    email, weather = tool_call("c1"), tool_call("c2", name="get_weather", args={"city": "Oslo"})

    decisions = prompt.ask_review([email, weather])

    assert decisions is not None
    assert [sent(d) for d in decisions] == [
        {"approval_id": "c1", "decision": "approve"},
        {"approval_id": "c2", "decision": "respond", "comment": "No rain today."},
    ]
    shown = out.getvalue()
    assert shown.startswith(
        "2 tool calls to review together: decide each, then the decisions are sent at once\n"
        "(1 of 2)\nconsent Run send_email?\n"
    )
    assert "(2 of 2)\nconsent Run get_weather?\ntool get_weather\n" in shown


def test_only_tool_calls_of_one_interrupt_are_one_review() -> None:
    assert same_review(tool_call("c1"), tool_call("c2"))
    assert not same_review(tool_call("c1"), tool_call("c2", interrupt_id="review-2"))
    assert not same_review(tool_call("c1", interrupt_id=""), tool_call("c2", interrupt_id=""))
    assert not same_review(interrupt("?"), interrupt("?"))
    assert how_to_decide_later(tool_call()) == (
        "consent c1 is still pending: decide it with `consentry chat --thread t1`"
    )


# ---- the chat sends a review in one request ----


def _thread(pending: list[ConsentEvent]) -> dict[str, Any]:
    return {
        "thread_id": "t1",
        "consent_policy": "ask",
        "graph": "agent",
        "project_id": "p1",
        "note_id": None,
        "title": "Mail",
        "status": "awaiting_consent",
        "last_reason": "interrupted",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "pending_consents": [c.model_dump(mode="json") for c in pending],
        "tokens_used": 0,
    }


def _sse(*events: dict[str, Any]) -> bytes:
    frames = []
    for seq, event in enumerate(events, start=10):
        body = {"thread_id": "t1", "run_id": "r2", "seq": seq, "ts": "2026-01-01T00:00:00Z"}
        frames.append(f"id: {seq}\nevent: {event['type']}\ndata: {json.dumps(body | event)}\n\n")
    return "".join(frames).encode()


def test_the_chat_sends_the_decisions_of_a_review_in_one_request() -> None:
    posted: list[dict[str, Any]] = []
    review = [tool_call("c1"), tool_call("c2", name="get_weather", args={"city": "Oslo"})]

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path == "/v1/threads/t1":
            return httpx.Response(200, json=_thread(review))
        assert (request.method, request.url.path) == ("POST", "/v1/chat")
        posted.append(json.loads(request.content))
        stream = _sse(
            {"type": "run_started", "graph": "agent", "trigger": "resume"},
            {"type": "message", "message_id": "m2", "role": "assistant", "content": "Sent."},
            {"type": "final", "reason": "completed"},
        )
        return httpx.Response(200, content=stream, headers={"Content-Type": "text/event-stream"})

    out, err = io.StringIO(), io.StringIO()
    client = ConsentryClient("http://consentry.test", transport=httpx.MockTransport(answer))
    session = ChatSession(
        client,
        palette=Palette(False),
        editor_command=["false"],
        thread_id="t1",
        read_line=Typed("r", "", "a"),
        out=out,
        err=err,
    )

    assert session.run() == 0

    assert err.getvalue() == ""
    assert posted == [
        {
            "thread_id": "t1",
            "resume": [
                {"approval_id": "c1", "decision": "reject"},
                {"approval_id": "c2", "decision": "approve"},
            ],
        }
    ]
    assert "agent> Sent.\n" in out.getvalue()
