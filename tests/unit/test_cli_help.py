"""``consentry --help`` and each command's help are plain text: argparse prints descriptions as
they are, so reStructuredText or Markdown markup (``name``, `name`, :class:) would show raw."""

from __future__ import annotations

import re

import pytest

from consentry.cli import main

MARKUP = re.compile(r"`|:(?:class|func|meth|mod|attr):")
COMMANDS = [
    [],
    ["serve"],
    ["chat"],
    ["notes"],
    ["approvals"],
    ["approvals", "list"],
    ["approvals", "approve"],
    ["schema"],
    ["db", "upgrade"],
    ["bench"],
    ["chaos"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "consentry")
def test_help_is_plain_text_without_markup(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])

    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: consentry")
    assert MARKUP.findall(out) == [], out


def test_the_top_level_help_names_every_command_and_where_the_docs_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])

    out = " ".join(capsys.readouterr().out.split())
    assert "Consentry: serve the API and the web app" in out
    for command in ("serve", "chat", "notes", "approvals", "schema", "db", "bench", "chaos"):
        assert f" {command} " in out
    assert "docs/terminal.md" in out
