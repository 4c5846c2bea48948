"""``consentry chaos`` refuses options that cannot make a run, before it starts anything: exit 2
and one line saying why."""

from __future__ import annotations

import argparse

import pytest

from consentry_tools.chaos import add_chaos_command


def _exit_and_why(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    add_chaos_command(parser.add_subparsers())
    args = parser.parse_args(["chaos", *argv])
    code = args.run(args)
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--replicas", "2"], "SQLite serves one process"),
        (["--lock-rate", "0.6", "--disk-full-rate", "0.6"], "at most 1 together"),
        (["--freeze-rate", "-0.1"], "a share between 0 and 1"),
        (["--cut-rate", "0.5"], "take a PostgreSQL database away"),
        (["--database", "postgres", "--lock-rate", "0.5"], "strike SQLite's file"),
        (["--restart-rate", "0.5"], "give --database postgres and its --postgres-data"),
        (
            ["--database", "postgres", "--database-url", "postgresql://x/y", "--restart-rate", "1"],
            "--postgres-data directory",
        ),
        (["--disk-full-rate", "1", "--database-url", "sqlite:///x.db"], "leave --database-url"),
        (["--trials", "0"], "must be ≥ 1"),
    ],
)
def test_options_that_cannot_make_a_run_are_refused_with_why(
    argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = _exit_and_why(argv, capsys)

    assert code == 2
    assert said.startswith("consentry chaos: ")
    assert why in said
    assert "\n" not in said
