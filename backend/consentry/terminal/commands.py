"""The entry points ``consentry.cli`` calls: settings, colour, client, and exit codes.

Exit codes: 0 done; 1 the server refused (``error: <code>: <message>`` on stderr) or answered
something that is not the protocol; 2 bad settings, or the server could not be reached; 130
interrupted (Ctrl-C). An expected failure is one line on stderr, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal

from pydantic import ValidationError

from consentry.terminal.api_client import ConsentryClient
from consentry.terminal.approvals import decide_approval, list_approvals, show_approval
from consentry.terminal.chat import ChatSession
from consentry.terminal.errors import ClientError
from consentry.terminal.notes import list_notes, show_note
from consentry.terminal.render import Palette, format_error
from consentry.terminal.settings import ClientSettings, ColorMode, use_color

__all__ = ["ApprovalsAction", "approvals_command", "chat_command", "notes_command"]

ApprovalsAction = Literal["list", "show", "approve", "reject", "answer"]
EXIT_INTERRUPTED = 130


def chat_command(
    *,
    url: str | None,
    api_key: str | None,
    color: ColorMode,
    thread_id: str | None = None,
    note_id: str | None = None,
    project_id: str | None = None,
    graph: str | None = None,
) -> int:
    """``consentry chat``: an interactive session until end of input or ``/quit``."""

    def run(client: ConsentryClient, settings: ClientSettings, palette: Palette) -> int:
        session = ChatSession(
            client,
            palette=palette,
            editor_command=settings.editor_command,
            thread_id=thread_id,
            note_id=note_id,
            project_id=project_id,
            graph=graph,
        )
        return session.run()

    return _with_client(url=url, api_key=api_key, color=color, run=run)


def approvals_command(
    action: ApprovalsAction,
    *,
    url: str | None,
    api_key: str | None,
    color: ColorMode,
    approval_id: str | None = None,
    status: str | None = None,
    comment: str | None = None,
    value: str | None = None,
) -> int:
    """``consentry approvals list|show|approve|reject|answer``."""

    def run(client: ConsentryClient, _: ClientSettings, palette: Palette) -> int:
        out = sys.stdout
        if action == "list":
            return list_approvals(client, status=status, palette=palette, out=out)
        assert approval_id is not None, "argparse requires the id"
        if action == "show":
            return show_approval(client, approval_id, palette=palette, out=out)
        return decide_approval(
            client,
            approval_id,
            decision=action,
            comment=comment,
            value=value,
            palette=palette,
            out=out,
        )

    return _with_client(url=url, api_key=api_key, color=color, run=run)


def notes_command(
    *,
    url: str | None,
    api_key: str | None,
    color: ColorMode,
    note_id: str | None = None,
    project_id: str | None = None,
) -> int:
    """``consentry notes [ID]``: projects and their notes, or one note and its conversations."""

    def run(client: ConsentryClient, _: ClientSettings, palette: Palette) -> int:
        if note_id is not None:
            return show_note(client, note_id, palette=palette, out=sys.stdout)
        return list_notes(client, project_id=project_id, palette=palette, out=sys.stdout)

    return _with_client(url=url, api_key=api_key, color=color, run=run)


def _with_client(
    *,
    url: str | None,
    api_key: str | None,
    color: ColorMode,
    run: Callable[[ConsentryClient, ClientSettings, Palette], int],
) -> int:
    given = (("url", url), ("api_key", api_key))
    overrides: dict[str, Any] = {name: value for name, value in given if value is not None}
    try:
        settings = ClientSettings(**overrides)
    except ValidationError:
        print("error: invalid_url: --url / CONSENTRY_URL must be an http(s) URL", file=sys.stderr)
        return 2
    palette = Palette(enabled=use_color(color, settings=settings, stream=sys.stdout))
    try:
        with ConsentryClient(settings.base_url, api_key=settings.api_key) as client:
            return run(client, settings, palette)
    except ClientError as exc:
        sys.stdout.flush()
        print(palette.red(format_error(exc)), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
