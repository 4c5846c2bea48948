"""``consentry bench``'s options: ``--graph`` picks the graph of every conversation, and
``--baseline-postgres`` only goes with ``--postgres`` (refused before any server starts)."""

from __future__ import annotations

import pytest

from consentry.cli import main


def test_baseline_postgres_without_postgres_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "--baseline-postgres", "postgresql://u@127.0.0.1/empty"])

    assert code == 2
    assert capsys.readouterr().err == "--baseline-postgres goes with --postgres\n"


def test_graph_is_the_tutor_the_five_node_consent_flow_or_memory_flow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--graph", "city"])

    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --graph: invalid choice: 'city'" in err
    assert "[--graph {tutor,consent_flow,memory_flow}]" in err
