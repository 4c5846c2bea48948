"""Text for the terminal: colours, diffs, proposals, tool calls, times and errors.

Pure functions of their arguments (and of ``now``), so what the commands print is decided here
and nowhere else. Colours are ANSI SGR codes, and only when the :class:`Palette` is on.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue, ValidationError

from consentry.schemas.approvals import RecordedDecision
from consentry.schemas.events import ToolCallEvent, ToolResultEvent
from consentry.terminal.answers import QUESTION_KEYS, question_of
from consentry.terminal.errors import ApiError, ClientError
from consentry.terminal.note_diff import removed_line_count, render_note_change
from consentry.terminal.palette import Palette

__all__ = [
    "Palette",
    "describe_answer_schema",
    "describe_decided",
    "describe_tool_call",
    "describe_tool_result",
    "format_error",
    "format_expiry",
    "format_time",
    "removal_notice",
    "render_diff",
    "render_proposal",
    "render_yes_no",
]


def render_diff(diff: str, palette: Palette) -> str:
    """A unified diff: ``+`` lines green, ``-`` lines red, ``@@`` hunks cyan, headers bold."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            lines.append(palette.bold(line))
        elif line.startswith("@@"):
            lines.append(palette.cyan(line))
        elif line.startswith("+"):
            lines.append(palette.green(line))
        elif line.startswith("-"):
            lines.append(palette.red(line))
        else:
            lines.append(line)
    return "\n".join(lines)


def _whole(content: str, sign: str, header: str) -> str:
    """``content`` as one hunk that adds (``+``) or removes (``-``) every line."""
    lines = content.splitlines() or [""]
    span = "1" if len(lines) == 1 else f"1,{len(lines)}"
    hunk = f"@@ -0,0 +{span} @@" if sign == "+" else f"@@ -{span} +0,0 @@"
    return "\n".join([header, hunk, *(sign + line for line in lines)])


def render_proposal(kind: str, proposal: dict[str, Any], palette: Palette) -> str:
    """What a consent proposes: the tutor's note kinds as diffs, a raw interrupt's value as
    indented JSON, a reviewed tool call as its tool and arguments, any other kind as JSON."""
    if kind == "interrupt" and set(proposal) == {"value"}:
        return json.dumps(proposal["value"], indent=2, ensure_ascii=False)
    if kind == "tool_call" and isinstance(proposal.get("args"), dict):
        return _render_tool_call(proposal, palette)
    diff, content = proposal.get("diff"), proposal.get("content")
    title = proposal.get("title", "")
    base, proposed = proposal.get("base_content"), proposal.get("proposed_content")
    if kind == "note_edit" and isinstance(base, str) and isinstance(proposed, str):
        change = render_note_change(
            base,
            proposed,
            old_header=f"{title} (version {proposal.get('base_version', '?')})",
            new_header=f"{title} (proposed)",
            palette=palette,
        )
        notice = removal_notice(proposal.get("person_lines_removed"), base, proposed, palette)
        return f"{notice}\n{change}" if notice else change
    if kind == "note_edit" and isinstance(diff, str):
        return render_diff(diff, palette)
    if kind == "note_create" and isinstance(content, str):
        return render_diff(_whole(content, "+", f"--- (no note)\n+++ {title} (new)"), palette)
    if kind == "note_delete" and isinstance(content, str):
        version = proposal.get("version", "?")
        header = f"--- {title} (version {version})\n+++ (deleted)"
        return render_diff(_whole(content, "-", header), palette)
    return json.dumps(proposal, indent=2, ensure_ascii=False)


def removal_notice(yours: object, base: str, proposed: str, palette: Palette) -> str | None:
    """When a note edit removes lines, whose, said plainly above its diff (as the web app's card
    does): the lines a person wrote or changed (``person_lines_removed``), or only the tutor's own
    earlier lines; None when it removes nothing."""
    removed = removed_line_count(base, proposed)
    if isinstance(yours, int) and yours > 0:
        return palette.bold(
            palette.red(
                f"This removes {_lines(yours)} you wrote or edited (marked - below). Approve "
                "only if you mean to lose them."
            )
        )
    if not removed:
        return None
    if isinstance(yours, int):
        return palette.dim(
            f"This rewrites {_lines(removed)} the tutor wrote earlier; every line you wrote stays."
        )
    return palette.yellow(f"This removes {_lines(removed)} of your note.")


def _lines(count: int) -> str:
    return f"{count} line{'' if count == 1 else 's'}"


def _render_tool_call(proposal: dict[str, Any], palette: Palette) -> str:
    """``tool send_email``, then one ``  key: value`` line per argument (values as JSON, aligned
    after the longest key), then the description, dim."""
    args: dict[str, Any] = proposal["args"]
    lines = [f"tool {palette.bold(str(proposal.get('name', '?')))}", *_field_lines(args)]
    if not args:
        lines.append(palette.dim("  (no arguments)"))
    description = str(proposal.get("description") or "")
    # the middleware's default ends with "Tool: name / Args: {…}": shown above already
    description = description.split(f"\n\nTool: {proposal.get('name')}\nArgs: ", 1)[0].strip()
    if description:
        lines.extend(palette.dim(line) for line in description.splitlines())
    return "\n".join(lines)


def _field_lines(fields: dict[str, Any]) -> list[str]:
    """One ``  key: value`` line per field (values as JSON, aligned after the longest key)."""
    width = max((len(key) for key in fields), default=0)
    below = "\n" + " " * (width + 4)  # a value's next lines, under its first
    lines = []
    for key, value in fields.items():
        shown = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", below)
        lines.append(f"  {(key + ':').ljust(width + 1)} {shown}")
    return lines


def render_yes_no(value: JsonValue, *, title: str) -> str:
    """A yes/no question under its title: the question in words, unless the title says it
    already (the server takes the title from it), then what else the graph sent, one ``  key:
    value`` line each (a value that is no object: as JSON); ``""`` when there is nothing more."""
    question = question_of(value)
    lines = [question] if question is not None and " ".join(question.split()) != title else []
    if isinstance(value, dict):
        asked_by = next((k for k in QUESTION_KEYS if value.get(k) == question), None)
        lines += _field_lines({k: v for k, v in value.items() if k != asked_by})
    elif question is None:
        lines.append(json.dumps(value, indent=2, ensure_ascii=False))
    return "\n".join(lines)


def describe_answer_schema(schema: dict[str, Any] | None) -> str:
    """What an answer to a raw interrupt must be: ``answer with JSON fitting {"type":
    "integer", …}``, or any JSON (a line that is not JSON is sent as text)."""
    if schema is None:
        return "answer with any JSON; a line that is not JSON is sent as text"
    compact = json.dumps(schema, ensure_ascii=False, separators=(", ", ": "))
    return f"answer with JSON that fits {_shortened(compact)}"


_TOOL_LINE_CHARS = 80
"""How much of a tool call's arguments, or of its result, its line shows."""


def _shortened(text: str) -> str:
    return text if len(text) <= _TOOL_LINE_CHARS else text[: _TOOL_LINE_CHARS - 1] + "…"


def describe_tool_call(event: ToolCallEvent) -> str:
    """``tool get_weather(city="Tokyo")``."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in event.args.items())
    return f"tool {event.name}({_shortened(args)})"


def describe_tool_result(event: ToolResultEvent) -> str:
    """``get_weather → Tokyo: rain, 14 °C``; ``get_weather failed: …``; with ``(10,512
    characters)`` when the line shows only part of the result."""
    first = event.content.split("\n", 1)[0]
    shown = _shortened(first)
    more = f" ({event.content_chars:,} characters)" if shown != event.content else ""
    verb = "failed:" if event.status == "error" else "→"
    return f"{event.name or 'tool'} {verb} {shown}{more}"


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)}s"
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m"


def format_expiry(expires_at: datetime | None, *, now: datetime | None = None) -> str:
    """``expires in 23h 59m (2026-12-01 11:11 UTC)``, ``expired 5m ago (…)``, or ``no
    deadline``."""
    if expires_at is None:
        return "no deadline"
    left = (expires_at - (now or datetime.now(UTC))).total_seconds()
    when = format_time(expires_at)
    return (
        f"expires in {_span(left)} ({when})" if left > 0 else f"expired {_span(-left)} ago ({when})"
    )


def describe_decided(decided: RecordedDecision) -> str:
    """``approve by local/local at 2026-11-30 11:09 UTC, comment: …``; a person's display name
    first when the server knows it: ``approve by Ada Lovelace (acme/ada) at …``."""
    who = decided.decided_by or "nobody"
    if decided.decided_by_name:
        who = f"{decided.decided_by_name} ({who})"
    text = f"{decided.decision or decided.status} by {who}"
    if decided.decided_at is not None:
        text += f" at {format_time(decided.decided_at)}"
    if decided.value is not None:
        text += f", answer: {json.dumps(decided.value, ensure_ascii=False)}"
    if decided.comment:
        text += f", comment: {decided.comment}"
    return text


def format_error(error: ClientError) -> str:
    """``error: <code>: <message>``; who won an ``already_decided``; where a 422 was wrong."""
    text = f"error: {error.code}: {error.message}"
    if not isinstance(error, ApiError):
        return text
    decided = error.details.get("decided")
    if isinstance(decided, dict):
        with contextlib.suppress(ValidationError):
            text += f" (decided: {describe_decided(RecordedDecision.model_validate(decided))})"
    problems = error.details.get("errors")
    if isinstance(problems, list):
        for problem in problems[:5]:
            if isinstance(problem, dict):
                # a request's fields (loc, msg); an answer to an interrupt (path, message)
                parts = problem.get("loc") or problem.get("path") or ()
                where = ".".join(str(part) for part in parts)
                said = problem.get("msg") or problem.get("message") or ""
                text += f"\n  {where}: {said}" if where else f"\n  {said}"
    return text
