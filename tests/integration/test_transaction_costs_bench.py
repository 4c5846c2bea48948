"""``python -m consentry_tools.bench.transaction_costs`` (the CPU of one PostgreSQL transaction
in process, ``docs/performance.md``) measures Consentry's transactions and psycopg's, each kind,
and prints a line of figures for each side. On a throwaway PostgreSQL cluster."""

from __future__ import annotations

import re

import pytest

from consentry_tools.bench.transaction_costs import main
from tests.postgres import PostgresCluster

PAIR = r"\d+/\d+"
LINE = rf"\w+ +read {PAIR}  write {PAIR}  claim {PAIR}  \(µs of CPU a transaction, min/median\)"


def test_it_prints_the_figures_of_consentrys_transactions_and_psycopgs(
    postgres: PostgresCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--postgres", postgres.new_database(), "--transactions", "3", "--warm-up", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["consentry", "psycopg"]
    assert all(re.fullmatch(LINE, line) for line in lines), lines
