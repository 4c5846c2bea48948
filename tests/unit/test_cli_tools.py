"""The development tools' commands (``consentry bench``, ``consentry chaos``) come from the
``consentry-tools`` package through entry points: installed (``make test``) they are there; in an
installation without them, each says in one line how to get it."""

from __future__ import annotations

from importlib.metadata import EntryPoints

import pytest

import consentry.cli
from consentry.cli import TOOL_COMMANDS, main


@pytest.mark.parametrize("name", sorted(TOOL_COMMANDS))
def test_a_tool_that_is_not_installed_says_how_to_get_it(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(consentry.cli, "entry_points", lambda group: EntryPoints(()))

    code = main([name, "--any", "option"])

    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"consentry {name} is a development tool, not part of this installation: in a checkout "
        "of Consentry, `make test` installs it (or `pip install -e tools`)\n"
    )


def test_the_installed_tools_register_their_own_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])

    assert "--concurrency" in capsys.readouterr().out  # the tool's own options, not the stand-in


def test_another_command_does_not_look_the_tools_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def looked_up(group: str) -> EntryPoints:
        raise AssertionError(f"entry points of {group} read for `consentry schema`")

    monkeypatch.setattr(consentry.cli, "entry_points", looked_up)

    assert main(["schema"]) == 0
    assert capsys.readouterr().out.startswith("{")
