"""``python -m consentry_tools.bench.store_calls`` (the CPU of one Store call in process,
``docs/performance.md``) measures both stores and prints a line of figures for each."""

from __future__ import annotations

import re

import pytest

from consentry_tools.bench.store_calls import main

PAIR = r"[\d.]+/[\d.]+"
LINE = rf"\w+ +search {PAIR}  put {PAIR}  both {PAIR}  \(ms a call, min/median\)"


def test_it_prints_the_figures_of_consentrys_store_and_langgraphs_on_sqlite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--calls", "3", "--warm-up", "1", "--repeats", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["consentry", "langgraph"]
    assert all(re.fullmatch(LINE, line) for line in lines)
