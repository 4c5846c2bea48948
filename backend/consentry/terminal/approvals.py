"""``consentry approvals``: the inbox from the terminal (list, show, approve, reject, answer).

Decisions go to ``POST /v1/approvals/{id}/decision`` with a fresh ``Idempotency-Key``; the graph
then resumes in the background, so the commands print what was recorded, not the run. ``answer``
replies to a raw ``interrupt()`` (kind ``interrupt``) with a value: the text given is parsed as
JSON, or sent as text when it is not JSON, as the chat does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, TextIO

from consentry.schemas.approvals import RAW_INTERRUPT, Approval, DecisionRequest
from consentry.terminal.answers import parse_answer
from consentry.terminal.api_client import ConsentryClient, build_request
from consentry.terminal.render import (
    Palette,
    describe_answer_schema,
    describe_decided,
    format_expiry,
    format_time,
    render_proposal,
)

__all__ = ["decide_approval", "list_approvals", "show_approval"]

TITLE_WIDTH = 48
_HEADINGS = ("ID", "STATUS", "KIND", "TITLE", "EXPIRES / DECIDED")


def list_approvals(
    client: ConsentryClient,
    *,
    status: str | None,
    palette: Palette,
    out: TextIO,
    now: datetime | None = None,
) -> int:
    """A table of every approval (of ``status``), newest first."""
    approvals = list(client.approvals(status=status))
    if not approvals:
        print(f"no {status} approvals" if status else "no approvals", file=out)
        return 0
    rows = [_row(approval, now=now) for approval in approvals]
    print(_table([_HEADINGS, *rows], palette), file=out)
    return 0


def show_approval(
    client: ConsentryClient, approval_id: str, *, palette: Palette, out: TextIO
) -> int:
    """One approval: its title and status, the proposal (as a diff), and its decision."""
    approval = client.approval(approval_id)
    p = palette
    print(f"{p.bold(approval.title)}  {_paint_status(approval.status, p)}", file=out)
    print(render_proposal(approval.kind, approval.proposal, p), file=out)
    if approval.kind == RAW_INTERRUPT and approval.status == "pending":
        print(p.dim(describe_answer_schema(approval.response_schema)), file=out)
        command = f"consentry approvals answer {approval.approval_id} --value VALUE"
        print(p.dim(f"answer it: {command}"), file=out)
    facts = [
        approval.kind,
        f"asked {format_time(approval.created_at)}",
        f"thread {approval.thread_id}",
        f"allows {', '.join(approval.allowed_decisions)}",
    ]
    print(p.dim(" · ".join(facts)), file=out)
    print(_when(approval), file=out)
    return 0


def decide_approval(
    client: ConsentryClient,
    approval_id: str,
    *,
    decision: Literal["approve", "reject", "answer"],
    comment: str | None,
    palette: Palette,
    out: TextIO,
    value: str | None = None,
) -> int:
    """Record a decision; the graph goes on in the background (``202``). ``answer`` sends
    ``value`` (JSON, or text when it is not JSON)."""
    fields: dict[str, object] = {"decision": decision, "comment": comment}
    if decision == "answer" and value is not None:
        fields["value"] = parse_answer(value)
    request = build_request(DecisionRequest, fields)
    accepted = client.decide(approval_id, request)
    print(
        f"{_paint_status(accepted.status, palette)}: approval {accepted.approval_id}; "
        f"thread {accepted.thread_id} goes on in run {accepted.run_id}",
        file=out,
    )
    return 0


def _row(approval: Approval, *, now: datetime | None) -> tuple[str, ...]:
    title = approval.title
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    return (approval.approval_id, approval.status, approval.kind, title, _when(approval, now=now))


def _when(approval: Approval, *, now: datetime | None = None) -> str:
    if approval.decided is not None and approval.status != "pending":
        return describe_decided(approval.decided)
    return format_expiry(approval.expires_at, now=now)


def _paint_status(status: str, palette: Palette) -> str:
    if status == "pending":
        return palette.yellow(status)
    if status in ("approved", "edited", "answered"):
        return palette.green(status)
    if status == "rejected":
        return palette.red(status)
    return palette.dim(status)


def _table(rows: Sequence[Sequence[str]], palette: Palette) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        if index == 0:
            cells = [palette.bold(cell) for cell in cells]
        else:
            cells[1] = cells[1].replace(row[1], _paint_status(row[1], palette))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
